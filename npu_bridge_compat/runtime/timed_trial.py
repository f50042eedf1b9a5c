"""The timed trial of two forms of one function: which of them its later runs keep.

A form is worth keeping only if it pays on this host, and that depends on the CPU, its threads and the sizes, so
some choices are made by measurement, as cuDNN's and XLA's autotuning are: the first runs of a function (per
input shapes) run a *candidate* form (fused, reduced precision) and the *baseline* form it must beat in turn, and
keep the faster. The users of a trial name the forms in their own words (runtime/fusion.py, runtime/precision.py).

A form's first run is a warm-up (tracing, compilation, first allocations), never timed; then timed runs in pairs
of alternating order, so both forms see the machine in the same state. A timed run of a function faster than
`TimedTrial.RUN_SECONDS` is several consecutive calls of one form, timed together: a sub-millisecond call's time varies
by tens of percent from call to call (a small Keras model's step in a fit's first calls), which no pair ratio of
single calls can see through. A run's time also holds what the memory allocator did in it: a
run that maps fresh memory pays a page fault per page, whatever the form, so a pair with one such run and one
without compares the allocator, not the forms, and is not compared (`TimedTrial.is_fresh`). A run that carried more
than its step (a profiler start or stop, a dump, a checkpoint save, a summary write: `carried`) is never a timed
run: it is left out, and its pair is timed again.

Once decided, a trial is settled: `TimedTrials.run` calls the kept form with nothing timed.
"""

from __future__ import annotations

import dataclasses
import statistics
import threading
import time
from collections.abc import Callable, Hashable
from typing import TypeVar

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat.measuring import checkpoint_writes, profiler_running, summary_event_writer

try:
    import resource
except ImportError:  # Windows has no resource module: runs are compared without their page faults
    resource = None

Result = TypeVar("Result")

PROFILER = "a profiler start or stop"
CHECKPOINT = "a checkpoint save"
SUMMARY = "a summary write"
DUMP = "a dump"

_noted_lock = threading.Lock()
# What runs carried so far, process-wide, as `note_carried` was told.
CARRIED = changes.ProcessState("what the runs of timed functions carried besides their step", Owner.TIMED_TRIALS, dict)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What a trial decided, with the times it compared."""

    where: str  # the function (and input shapes) decided
    candidate_kept: bool
    candidate_seconds: tuple[float, ...]  # each form's runs in the pairs compared (all pairs, if none was)
    baseline_seconds: tuple[float, ...]
    uncompared_pairs: int = 0  # timed pairs left out: one of their runs faulted fresh memory in, the other not
    calls_per_run: float = 1.0  # the function's calls per timed run, on average (seconds above are per call)
    left_out: tuple[str, ...] = ()  # the runs left out for what they carried: "a float32 run carried a dump"


def left_out_text(left_out: tuple[str, ...]) -> str:
    """Which runs a verdict left out and why, for its log line ("" where none)."""
    if not left_out:
        return ""
    counted = {why: left_out.count(why) for why in dict.fromkeys(left_out)}
    return "; left out: " + ", ".join(f"{why}" + (f" ({n} runs)" if n > 1 else "") for why, n in counted.items())


def per_run_text(calls_per_run: float) -> str:
    """What a verdict's times are each: a run's, or a call's where a timed run was several calls."""
    return "per run" if calls_per_run <= 1 else "per call"


def timed_pairs_text(pairs: int, calls_per_run: float) -> str:
    """How a verdict's times were measured, in a decision's words."""
    if calls_per_run <= 1:
        return f"medians of {pairs} timed pairs after a warm-up run of each form"
    return f"medians of {pairs} timed pairs of {calls_per_run:.3g} calls a run, after a warm-up call of each form"


def paired_ratios(candidate_seconds, baseline_seconds) -> list[float]:
    """Baseline over candidate time, pair by pair (above 1: the candidate was faster)."""
    return [baseline / candidate for candidate, baseline in zip(candidate_seconds, baseline_seconds)]


def median_speedup(candidate_seconds, baseline_seconds) -> float:
    """The candidate's speed over the baseline's: the median of the pairs' ratios (a pair's two runs saw the
    machine in the same state)."""
    return statistics.median(paired_ratios(candidate_seconds, baseline_seconds))


class TimedTrial:
    """The first runs of one function and input shapes, until they decide its form: a warm-up run of each form
    (`CANDIDATE_WARMS_FIRST` says which first), then timed pairs, the candidate first in odd pairs and the
    baseline first in even ones, compared pair by pair. A pair with one fresh run (`is_fresh`) is not compared, a
    pair with two is compared for clear margins only (the faults add to both runs alike, diluting their ratio).
    - After two pairs, a form whose runs were all faster than all the other's by `CLEAR_MARGIN`: a margin one pair
      shows, however wide, decides only when a second pair shows it too.
    - From `FEWEST_PAIRS` pairs without fresh runs, the candidate wins if it was faster by `PAYS` in every one,
      the baseline if the candidate never was: the candidate is kept only where it pays more than a run's noise.
    - Otherwise, at `MOST_PAIRS` such pairs or `MOST_TIMED_PAIRS` timed ones, their median ratio decides (of the
      compared pairs if there is none, of all if none was compared): the candidate only if it pays `PAYS`.
    A close race takes more pairs, but costs little by being close: the trial's cost is the slower form's extra
    time, at most `MOST_TIMED_PAIRS` times the difference. Each run is a real run: a timed one is consecutive calls
    of one form until they last `RUN_SECONDS` (at most `MOST_CALLS_PER_RUN`), compared by their time per call."""

    CLEAR_MARGIN = 1.5
    PAYS = 0.03
    FEWEST_PAIRS = 3
    MOST_PAIRS = 6
    MOST_TIMED_PAIRS = 10
    MOST_LEFT_OUT = 20  # runs that carried more than the step; past them, the baseline is kept untimed
    FRESH_PAGES = 256  # 1 MiB in 4 KiB pages: the allocator got memory from the system during the run
    CANDIDATE_WARMS_FIRST = False
    RUN_SECONDS = 0.005
    MOST_CALLS_PER_RUN = 64

    def __init__(self, where: str) -> None:
        self.where = where
        self.verdict: Verdict | None = None
        self._warmed: set[bool] = set()
        self._gathering: tuple[bool, float, int, int] | None = None  # the timed run so far: form, seconds, pages, calls
        self._calls_timed = 0
        self._pending: dict[bool, tuple[float, bool]] = {}  # the current pair's runs: seconds, fresh
        self._pending_calls = 0  # the calls of the current pair's run so far
        self._settled: list[tuple[float, float]] = []  # (candidate, baseline) seconds of pairs without fresh runs
        self._fresh: list[tuple[float, float]] = []  # of pairs whose two runs were fresh
        self._uncompared: list[tuple[float, float]] = []  # of pairs with one fresh run
        self._left_out: list[str] = []  # why each run left out was: "a float32 run carried a dump"
        self.profiling: bool | None = None  # whether the profiler ran at the end of this trial's last run

    def form_name(self, candidate: bool) -> str:
        """A form in its user's words, for the log."""
        return "candidate" if candidate else "baseline"

    def left_out(self, candidate: bool, carried: str) -> Verdict | None:
        """Take a run that carried `carried` besides its step: a warm-up stays one; a timed run is not timed, and
        its pair is timed again. Past `MOST_LEFT_OUT` such runs the baseline is kept (the verdict, then)."""
        if self.verdict is not None:
            return None
        if candidate not in self._warmed:
            self._warmed.add(candidate)
            return None
        self._gathering = None
        self._pending = {}
        self._calls_timed -= self._pending_calls  # the pair's other run, timed again with it
        self._pending_calls = 0
        self._left_out.append(f"a {self.form_name(candidate)} run carried {carried}")
        if len(self._left_out) < self.MOST_LEFT_OUT:
            return None
        return self._settle(False)

    def is_fresh(self, seconds: float, fresh_pages: int) -> bool:
        """Whether a run's time holds the allocator mapping fresh memory (`FRESH_PAGES` or more pages)."""
        return fresh_pages >= self.FRESH_PAGES

    def next_form(self) -> bool:
        """Whether the next run is to be the candidate form (once decided, the form kept)."""
        if self.verdict is not None:
            return self.verdict.candidate_kept
        if self._gathering is not None:
            return self._gathering[0]
        warm_up_order = (True, False) if self.CANDIDATE_WARMS_FIRST else (False, True)
        for candidate in warm_up_order:
            if candidate not in self._warmed:
                return candidate
        candidate_first = self._timed_pairs() % 2 == 0
        return candidate_first if not self._pending else not candidate_first

    def _timed_pairs(self) -> int:
        return len(self._settled) + len(self._fresh) + len(self._uncompared)

    def ran(self, candidate: bool, seconds: float, fresh_pages: int = 0) -> Verdict | None:
        """Take a call's time and the pages of fresh memory it faulted in (a warm-up's are not kept); the verdict,
        when this call made it."""
        if self.verdict is not None:
            return None
        if candidate not in self._warmed:
            self._warmed.add(candidate)
            return None
        if self._gathering is not None and self._gathering[0] == candidate:
            _, seconds_before, pages_before, calls_before = self._gathering
            seconds, fresh_pages, calls = seconds_before + seconds, pages_before + fresh_pages, calls_before + 1
        else:  # a new run (a call in the other form than asked, from another thread, starts one too)
            calls = 1
        if seconds < self.RUN_SECONDS and calls < self.MOST_CALLS_PER_RUN:
            self._gathering = (candidate, seconds, fresh_pages, calls)
            return None
        self._gathering = None
        self._calls_timed += calls
        self._pending[candidate] = (seconds / calls, self.is_fresh(seconds, fresh_pages))
        if len(self._pending) < 2:
            self._pending_calls = calls
            return None
        self._pending_calls = 0
        (candidate_time, candidate_fresh), (baseline_time, baseline_fresh) = self._pending[True], self._pending[False]
        self._pending = {}
        if candidate_fresh != baseline_fresh:
            self._uncompared.append((candidate_time, baseline_time))
        else:
            (self._fresh if candidate_fresh else self._settled).append((candidate_time, baseline_time))
        keep = self._decide()
        if keep is None:
            return None
        return self._settle(keep)

    def _settle(self, keep: bool) -> Verdict:
        """The verdict: `keep` the candidate or not, with the times of the pairs compared (none, where every run
        was left out)."""
        pairs = self._settled + self._fresh or self._uncompared
        candidate_times, baseline_times = zip(*pairs) if pairs else ((), ())
        calls_per_run = self._calls_timed / (2 * self._timed_pairs()) if self._timed_pairs() else 1.0
        self.verdict = Verdict(
            self.where,
            keep,
            candidate_times,
            baseline_times,
            self._timed_pairs() - len(pairs),
            calls_per_run,
            tuple(self._left_out),
        )
        return self.verdict

    def _decide(self) -> bool | None:
        """Whether the candidate wins after the pairs so far; None: time another pair."""
        compared = self._settled + self._fresh
        if len(compared) >= 2:
            candidate_times, baseline_times = zip(*compared)
            if max(candidate_times) * self.CLEAR_MARGIN <= min(baseline_times):
                return True
            if max(baseline_times) * self.CLEAR_MARGIN <= min(candidate_times):
                return False
        if len(self._settled) >= self.FEWEST_PAIRS:
            ratios = paired_ratios(*zip(*self._settled))
            if min(ratios) >= 1 + self.PAYS:
                return True
            if max(ratios) < 1 + self.PAYS:
                return False
        if len(self._settled) >= self.MOST_PAIRS or self._timed_pairs() >= self.MOST_TIMED_PAIRS:
            deciding = self._settled or compared or self._uncompared
            return median_speedup(*zip(*deciding)) >= 1 + self.PAYS
        return None


class TimedTrials:
    """The trials of one door's function, per key (input shapes, a run signature): `make(where)` makes a key's
    trial, and `decided(verdict)` is told each verdict once (its user keeps and logs it in its own words)."""

    def __init__(self, make: Callable[[str], TimedTrial], decided: Callable[[Verdict], None]) -> None:
        self._make, self._decided = make, decided
        self._trials: dict[Hashable, TimedTrial] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """How many trials were started."""
        return len(self._trials)

    def trial(self, key: Hashable, where: str) -> TimedTrial:
        """The trial of `key`, started now if it has none."""
        with self._lock:
            trial = self._trials.get(key)
            if trial is None:
                trial = self._trials[key] = self._make(where)
            return trial

    def kept(self, key: Hashable) -> bool | None:
        """The form kept for `key` (True: the candidate), or None while undecided."""
        trial = self._trials.get(key)
        return trial.verdict.candidate_kept if trial is not None and trial.verdict is not None else None

    def run(self, key: Hashable, where: str, run: Callable[[bool], Result]) -> Result:
        """`run(candidate)` in the form the key's trial asks for (or keeps), timed while the trial lasts."""
        trial = self.trial(key, where)
        candidate = trial.next_form()
        if trial.verdict is not None:
            return run(candidate)
        started = run_started()
        result = run(candidate)
        self.finished(trial, candidate, started)
        return result

    def finished(self, trial: TimedTrial, candidate: bool, started: RunStart) -> None:
        """Give `trial` the time and page faults of a run of the form `candidate` that began at `started`
        (`run_started()`), or leave the run out where it carried more than its step; a verdict it makes is told
        to `decided`."""
        seconds, pages = time.perf_counter(), _pages_faulted()
        ended = _carried_so_far()
        carried = [what for what, count in ended if count != dict(started.carried).get(what, 0)]
        profiling = profiler_running()
        if profiling != started.profiling or trial.profiling not in (None, started.profiling):
            carried.insert(0, PROFILER)  # started or stopped during the run, or just before it (its first trace)
        trial.profiling = profiling
        if carried:
            verdict = trial.left_out(candidate, " and ".join(carried))
        else:
            verdict = trial.ran(candidate, seconds - started.seconds, pages - started.pages)
        if verdict is not None:
            self._decided(verdict)


@dataclasses.dataclass(frozen=True)
class RunStart:
    """What `TimedTrials.finished` measures a run from."""

    seconds: float  # the clock
    pages: int  # the process's page faults so far
    profiling: bool  # whether TensorFlow's profiler was tracing
    carried: tuple[tuple[str, int], ...]  # what runs carried so far (`note_carried`, checkpoint writes)


def run_started() -> RunStart:
    """What `TimedTrials.finished` measures a run from: the clock, the process's page faults and what runs carried
    so far."""
    _count_summary_writes()
    carried, profiling = _carried_so_far(), profiler_running()
    return RunStart(time.perf_counter(), _pages_faulted(), profiling, carried)


def note_carried(what: str) -> None:
    """A run under way carries `what` besides its step (DUMP, SUMMARY): a timed one is left out."""
    with _noted_lock:
        carried = changes.state(CARRIED)
        carried[what] = carried.get(what, 0) + 1


def _carried_so_far() -> tuple[tuple[str, int], ...]:
    with _noted_lock:
        noted = dict(changes.state(CARRIED))
    return (*noted.items(), (CHECKPOINT, checkpoint_writes()))


def _count_summary_writes() -> None:
    """Count each summary event a TF1 FileWriter writes (SummarySaverHook's, the Estimator's step counter's):
    the hooks write in the hook driver's `after_run`, inside a session run's timed span."""
    writer = summary_event_writer()
    if changes.is_replaced(writer, "add_event"):
        return
    original = writer.add_event

    def add_event(self, event) -> None:
        note_carried(SUMMARY)
        original(self, event)

    changes.replace_attribute(
        writer,
        "add_event",
        add_event,
        owner=Owner.TIMED_TRIALS,
        reason="a timed run that writes a summary is left out of the trial (runtime/timed_trial.py)",
    )


def _pages_faulted() -> int:
    """The pages the process has faulted in so far (minor faults: memory mapped fresh, no disk read), or 0."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt if resource is not None else 0
