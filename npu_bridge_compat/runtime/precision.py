"""Reduced precision that pays on this host: the run-time side of the precision plan (plan/precision.py).

The plan says who decides whether its mixed-precision pass runs (`PrecisionChoice`); this module decides.

- PROBED (a CPU whose flags cannot tell: AVX-512 without native bfloat16, an unknown CPU): a short probe measures
  a matmul-dominated and a conv-dominated training step in float32 and under the pass, once per CPU (model and
  flags), TensorFlow version and pass, as XLA's and cuDNN's autotuning caches do. It runs in a child process
  (`runtime/precision_probe.py`), so that it never starts this process's TensorFlow before a door has configured
  its devices, and its result is kept in `precision_probe.json` under NPU_BRIDGE_COMPAT_CACHE_DIR (default:
  $XDG_CACHE_HOME/npu_bridge_compat, else ~/.cache/npu_bridge_compat). Where neither workload runs faster by
  `PAYS`, float32 is kept and the report says what was measured ("bfloat16 N.NNx float32 ... float32 kept"); else
  the choice becomes MEASURED. A door resolves this when it plans (`resolve_precision`), before it derives its
  session config, so the config already has the pass off where it does not pay.
- MEASURED: where the pass pays for matmul and conv, it still may not pay for a program whose step is dominated by
  element-wise ops (its casts can cost more than its float32 kernels, as in a sigmoid/tanh gated model). So each
  training function's first runs run both forms and keep the faster, in a trial (runtime/timed_trial.py, as graph-kernel
  fusion decides too): a session's run signatures (`units.PrecisionUnit`), Keras' functions (keras_calls.py) and
  a TF2 program's own tf.functions (tf2/functions.py). The reduced-precision form runs first, as asked; a decision
  is logged with its times and kept (`precision_decisions`). Doors without run-time units (a plain Estimator
  given an NPURunConfig, host_session_config) keep the pass, and say so.
- A program's own Keras policy (`mixed_float16` set by the program) is its choice: it runs, and where this host has
  no fast path for it, a line says so and what would be faster (`note_keras_policy`).

NPU_BRIDGE_COMPAT_REDUCED_PRECISION=on keeps reduced precision without measuring (plan/platform.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.logs import log_line
from npu_bridge_compat.options.spec import Effect
from npu_bridge_compat.plan import HostFacts, HostPlan
from npu_bridge_compat.plan.features import AMP_ENV_PREFIX, MixedPrecision, PrecisionChoice
from npu_bridge_compat.plan.platform import (
    BFLOAT16_TENSOR_CORES,
    FLOAT16_TENSOR_CORES,
    REDUCED_PRECISION_ENV,
    Support,
)
from npu_bridge_compat.plan.precision import LISTS_NOTE, MEASURED_HOW, precision_key
from npu_bridge_compat.runtime.timed_trial import (
    TimedTrial,
    TimedTrials,
    Verdict,
    left_out_text,
    median_speedup,
    per_run_text,
    timed_pairs_text,
)

CACHE_DIR_ENV = "NPU_BRIDGE_COMPAT_CACHE_DIR"
PROBE_FILE = "precision_probe.json"
PROBE_TIMEOUT_SECONDS = 300
PAYS = TimedTrial.PAYS  # what reduced precision must gain, as a trial's candidate: more than a run's noise
OWNER = Owner.PRECISION
ALLOWLIST_REMOVE = AMP_ENV_PREFIX + "ALLOWLIST_REMOVE"

_lock = threading.Lock()
DECIDED = changes.ProcessState("the forms mixed precision kept", OWNER, list)
NOTED_POLICIES = changes.ProcessState("the Keras policies advised about, per host", OWNER, set)


# --- the host probe ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ProbeResult:
    """What the probe measured on one CPU: per workload, float32's time over the pass's (above 1: faster)."""

    dtype: str
    speedups: Mapping[str, float]  # "matmul", "conv"
    cached_in: str | None  # the cache file; None where it could not be written

    @property
    def measured(self) -> str:
        """Where the figures come from, for the report."""
        return f"measured once, kept in {self.cached_in}" if self.cached_in else "measured now, not kept"

    @property
    def pays(self) -> bool:
        return max(self.speedups.values()) >= 1 + PAYS

    def __str__(self) -> str:
        figures = ", ".join(f"{speedup:.2f}x float32 on a {work} step" for work, speedup in self.speedups.items())
        return f"{self.dtype} {figures}"


def cache_directory() -> Path:
    """Where measurements outlive the process: NPU_BRIDGE_COMPAT_CACHE_DIR, else the XDG cache directory."""
    chosen = os.environ.get(CACHE_DIR_ENV)
    if chosen:
        return Path(chosen)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "npu_bridge_compat"


def probe_key(host: HostFacts, grappler_pass: str) -> str:
    """What a probe's result holds for: the CPU (model and precision flags), TensorFlow's version and the pass."""
    cpu = f"{host.cpu_model or 'unknown CPU'} [{' '.join(host.cpu_flags)}]"
    return f"{cpu} TensorFlow {host.tf_version} {grappler_pass}"


def cached_probe(host: HostFacts, mixed: MixedPrecision) -> ProbeResult | None:
    """The probe's result for this host and pass, if it was measured before."""
    path = cache_directory() / PROBE_FILE
    entry = _read_cache(path).get(probe_key(host, mixed.grappler_pass))
    if not entry:
        return None
    return ProbeResult(mixed.dtype, dict(entry["speedups"]), str(path))


def probe_host(host: HostFacts, mixed: MixedPrecision, measure: Callable[[str], dict] | None = None) -> ProbeResult:
    """The probe's result for this host and pass: cached, or measured now (`measure(grappler_pass)`: the child
    process by default) and cached. Raises ProbeError when the measurement fails."""
    cached = cached_probe(host, mixed)
    if cached is not None:
        return cached
    path = cache_directory() / PROBE_FILE
    log_line(
        f"measuring {mixed.dtype} against float32 on this CPU ({host.cpu_description}) once; the result is kept in "
        f"{path}"
    )
    speedups = (measure or _measure_in_child)(mixed.grappler_pass)
    try:
        with _lock:
            entries = _read_cache(path)
            entries[probe_key(host, mixed.grappler_pass)] = {"speedups": speedups}
            path.parent.mkdir(parents=True, exist_ok=True)
            written = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            written.write_text(json.dumps(entries, indent=1), encoding="utf-8")
            os.replace(written, path)  # whole, even with ranks probing at once
    except OSError as error:
        log_line(f"the probe's result could not be kept in {path} ({error}); the next process measures again")
        return ProbeResult(mixed.dtype, speedups, None)
    return ProbeResult(mixed.dtype, speedups, str(path))


class ProbeError(RuntimeError):
    """The host probe could not measure."""


def _read_cache(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _measure_in_child(grappler_pass: str) -> dict:
    """The probe in a child Python (this interpreter, this package), so this process's TensorFlow stays unstarted."""
    package_root = str(Path(__file__).resolve().parents[2])
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
    try:
        finished = subprocess.run(
            [sys.executable, "-m", "npu_bridge_compat.runtime.precision_probe", grappler_pass],
            capture_output=True,
            text=True,
            env=environment,
            timeout=PROBE_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ProbeError(f"the probe took more than {PROBE_TIMEOUT_SECONDS} s") from None
    if finished.returncode != 0:
        raise ProbeError(f"the probe exited with status {finished.returncode}: {finished.stderr.strip()[-300:]}")
    try:
        return json.loads(finished.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise ProbeError(f"the probe printed no figures: {finished.stdout.strip()[-300:]!r}") from None


def resolve_precision(plan: HostPlan, measure: Callable[[str], dict] | None = None) -> HostPlan:
    """The plan with a PROBED mixed-precision pass resolved by the host probe (cached, or measured now): kept as
    MEASURED where it pays, else left out (float32), the report saying what was measured and chosen."""
    mixed = plan.mixed_precision
    if mixed is None or mixed.choice is not PrecisionChoice.PROBED:
        return plan
    key = precision_key(plan.options)
    host = plan.host
    try:
        result = probe_host(host, mixed, measure)
    except ProbeError as error:
        return _without_pass(plan, mixed, f"the probe of this CPU ({host.cpu_description}) failed ({error})")
    if not result.pays:
        return _without_pass(
            plan,
            mixed,
            f"{result} on this CPU ({host.cpu_description}; {result.measured})",
        )
    entry = plan.report.entry(key)
    how = (
        f"grappler {mixed.grappler_pass} where it pays: {result} on this CPU ({host.cpu_description}; "
        f"{result.measured}), and {MEASURED_HOW}"
    )
    features = tuple(
        dataclasses.replace(f, choice=PrecisionChoice.MEASURED) if f is mixed else f for f in plan.features
    )
    return dataclasses.replace(plan, features=features).with_entry(key, entry.effect, how)


def _without_pass(plan: HostPlan, mixed: MixedPrecision, measured: str) -> HostPlan:
    how = f"{measured}: float32 kept; set {REDUCED_PRECISION_ENV}=on to run {mixed.dtype} anyway"
    resolved = dataclasses.replace(
        plan,
        features=tuple(f for f in plan.features if f is not mixed),
        report=dataclasses.replace(
            plan.report, notes=tuple(note for note in plan.report.notes if not note.startswith(LISTS_NOTE))
        ),
    )
    resolved = resolved.with_entry(precision_key(plan.options), Effect.APPROXIMATED.value, how)
    if plan.options.modify_mixlist:
        resolved = resolved.with_entry(
            "modify_mixlist",
            Effect.NO_EQUIVALENT.value,
            "no mixed-precision pass runs on this host (float32 kept, see the precision mode), so the lists have "
            "no effect",
        )
    return resolved


# --- the program's first runs -----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PrecisionDecision:
    where: str  # the function (and input shapes) decided
    dtype: str
    reduced: bool  # the form kept: reduced precision, or float32
    reduced_seconds: tuple[float, ...]  # each form's runs in the pairs compared
    float32_seconds: tuple[float, ...]
    uncompared_pairs: int = 0
    calls_per_run: float = 1.0  # the seconds above are per call
    left_out: tuple[str, ...] = ()  # runs left out for what they carried besides the step

    @property
    def speedup(self) -> float:
        """Reduced precision's speed over float32's: the median of the pairs' ratios."""
        return median_speedup(self.reduced_seconds, self.float32_seconds)

    def __str__(self) -> str:
        kept = self.dtype if self.reduced else "float32"
        hint = "" if self.reduced else f"; set {REDUCED_PRECISION_ENV}=on to keep {self.dtype} anyway"
        left_out = left_out_text(self.left_out)
        if not self.reduced_seconds:
            return (
                f"mixed precision for {self.where}: float32 kept, untimed: every run that could be timed carried "
                f"more than its step{left_out}{hint}"
            )
        reduced, float32 = statistics.median(self.reduced_seconds), statistics.median(self.float32_seconds)
        return (
            f"mixed precision for {self.where}: {kept} kept, {self.dtype} {self.speedup:.2f}x float32 "
            f"({reduced * 1e3:.3g} ms against {float32 * 1e3:.3g} ms {per_run_text(self.calls_per_run)}, "
            f"{timed_pairs_text(len(self.reduced_seconds), self.calls_per_run)}{left_out}){hint}"
        )


class PrecisionTrial(TimedTrial):
    """The trial (runtime/timed_trial.py) of one function and input shapes between its reduced-precision form (the
    candidate: kept only where it pays `PAYS`) and float32. The reduced-precision form, the run as asked, warms
    up first. A run counts as fresh only where the pages it faulted in could cost `PAYS` of its time: the steps
    mixed precision is for take milliseconds, and each form's casts and buffers fault memory in as part of what
    it costs."""

    CANDIDATE_WARMS_FIRST = True
    SECONDS_PER_FRESH_PAGE = 5e-6  # the order of what faulting in one 4 KiB page costs a CPU host

    def __init__(self, where: str, dtype: str = "bfloat16") -> None:
        super().__init__(where)
        self.dtype = dtype

    def form_name(self, candidate: bool) -> str:
        return self.dtype if candidate else "float32"

    def is_fresh(self, seconds: float, fresh_pages: int) -> bool:
        return fresh_pages * self.SECONDS_PER_FRESH_PAGE >= self.PAYS * seconds and super().is_fresh(
            seconds, fresh_pages
        )

    @property
    def decision(self) -> PrecisionDecision | None:
        """The verdict in mixed precision's words, once made."""
        return _in_words(self.verdict, self.dtype) if self.verdict is not None else None


def _in_words(verdict: Verdict, dtype: str) -> PrecisionDecision:
    return PrecisionDecision(
        verdict.where,
        dtype,
        verdict.candidate_kept,
        verdict.candidate_seconds,
        verdict.baseline_seconds,
        verdict.uncompared_pairs,
        verdict.calls_per_run,
        verdict.left_out,
    )


def precision_trials(dtype: str) -> TimedTrials:
    """The mixed-precision trials of one function, per input shapes (or run signature); each decision is kept
    (`precision_decisions`) and logged once, as the reduced-precision form or float32 kept."""

    def decided(verdict: Verdict) -> None:
        decision = _in_words(verdict, dtype)
        with _lock:
            changes.state(DECIDED).append(decision)
        log_line(str(decision))

    return TimedTrials(lambda where: PrecisionTrial(where, dtype), decided)


def precision_decisions() -> tuple[PrecisionDecision, ...]:
    """The forms mixed precision kept in this process so far, oldest first."""
    with _lock:
        return tuple(changes.state(DECIDED))


@contextlib.contextmanager
def converting_nothing(op_types: Iterable[str]) -> Iterator[None]:
    """Meanwhile, grappler's mixed-precision passes leave every op of `op_types` out of their allow list (the
    ops they convert first, and around which they convert the rest), so a graph of those ops optimised meanwhile is
    its float32 form. Grappler reads the lists from the environment each time it optimises a graph, process-wide:
    a graph optimised meanwhile in another thread is left in float32 too."""
    listed = os.environ.get(ALLOWLIST_REMOVE, "").split(",")
    value = ",".join(sorted({*filter(None, listed), *op_types}))
    with changes.for_the_call(  # over the plan's own lists (modify_mixlist), whose value comes back at the end
        changes.set_environment,
        ALLOWLIST_REMOVE,
        value,
        owner=OWNER,
        reason="the float32 form of a function whose mixed precision is being measured",
    ):
        yield


# --- a program's own Keras policy -------------------------------------------------------------------------------


def keras_policy_advice(policy: str, host: HostFacts) -> str | None:
    """What to say about a program's own Keras mixed-precision policy on this host, or None where it has a fast
    path (float16 tensor cores for mixed_float16; native bfloat16 or bfloat16 tensor cores for mixed_bfloat16)."""
    if policy not in ("mixed_float16", "mixed_bfloat16"):
        return None
    dtype = policy.removeprefix("mixed_")
    if host.has_gpu:
        needed = FLOAT16_TENSOR_CORES if dtype == "float16" else BFLOAT16_TENSOR_CORES
        if host.gpu_has(needed):
            return None
        where = f"this GPU ({host.gpu_description}) has no {dtype} tensor cores ({needed[0]}.{needed[1]} and later)"
        better = "'mixed_float16'" if host.gpu_has(FLOAT16_TENSOR_CORES) else "'float32'"
    else:
        if (host.cpu_bfloat16 if dtype == "bfloat16" else host.cpu_float16) is Support.NATIVE:
            return None
        where = f"this CPU ({host.cpu_description}) has no native {dtype}"
        better = "'mixed_bfloat16'" if host.cpu_bfloat16 is Support.NATIVE else "'float32'"
    return (
        f"the program's Keras policy is '{policy}', which runs as the program asks; {where}, so it may be slower "
        f"than float32 here. The policy {better} is likely faster on this host."
    )


def note_program_policy(host: HostFacts) -> None:
    """`note_keras_policy` for the global Keras policy, where the program has loaded Keras (a TF2 program sets it
    before or after opening the device, and builds its functions after)."""
    if not any(name in sys.modules for name in ("keras", "tf_keras")):
        return
    import tensorflow as tf

    note_keras_policy(tf.keras.mixed_precision.global_policy().name, host)


def note_keras_policy(policy: str, host: HostFacts) -> None:
    """Say once per policy and host what `keras_policy_advice` says, if anything."""
    advice = keras_policy_advice(policy, host)
    if advice is None:
        return
    with _lock:
        noted = changes.state(NOTED_POLICIES)
        if (policy, host) in noted:
            return
        noted.add((policy, host))
    log_line(advice)
