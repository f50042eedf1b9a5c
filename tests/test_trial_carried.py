"""Timed trials that cannot be fooled (runtime/timed_trial.py): a run that carried a profiler start or stop, a dump, a
checkpoint save or a summary write besides its step is never a timed run, the log says which runs were left out
and why, and a margin one pair shows decides only when a second pair shows it too. The forms' times are given as
data; what the runs carry is real (TensorFlow's profiler, checkpoints, FileWriter summaries, the session door's
dumps)."""

import numpy as np
import pytest
import tensorflow as tf
from helpers import config_with

from npu_bridge_compat.compat.measuring import profiler_running
from npu_bridge_compat.plan.platform import Support
from npu_bridge_compat.runtime.precision import PrecisionTrial, precision_decisions, precision_trials
from npu_bridge_compat.runtime.timed_trial import TimedTrial
from npu_bridge_compat.session import NPUSession

v1 = tf.compat.v1
# bfloat16 twice as fast as float32: two clean pairs decide (TimedTrial.CLEAR_MARGIN)
SECONDS = {True: 0.010, False: 0.020}


@pytest.fixture
def given_times(monkeypatch):
    """Each timed run of a precision trial takes the time given in SECONDS for its form."""
    monkeypatch.setattr(
        PrecisionTrial, "ran", lambda self, reduced, elapsed, pages=0: TimedTrial.ran(self, reduced, SECONDS[reduced])
    )


def decide(carry_in_run: dict) -> tuple[list[bool], object]:
    """Run a precision trial through `TimedTrials.run` until it decides; run number i (from 0: the two warm-ups
    first) calls `carry_in_run[i]()` inside it. The forms run, and the decision."""
    trials = precision_trials("bfloat16")
    forms = []

    def run(reduced: bool) -> None:
        forms.append(reduced)
        carry_in_run.get(len(forms) - 1, lambda: None)()

    while trials.kept("f") is None:
        trials.run("f", "f", run)
    return forms, precision_decisions()[-1]


@pytest.mark.usefixtures("given_times")
def test_a_run_that_saves_a_checkpoint_is_left_out_and_its_pair_timed_again(tmp_path):
    checkpoint = tf.train.Checkpoint(v=tf.Variable(1.0))
    # runs: warm-ups R F, then R F (its float32 run saves a checkpoint: left out, the pair timed again), R F, F R
    forms, decision = decide({3: lambda: checkpoint.write(str(tmp_path / "ckpt"))})
    assert forms == [True, False, True, False, True, False, False, True]
    assert decision.reduced and decision.left_out == ("a float32 run carried a checkpoint save",)
    assert decision.reduced_seconds == (0.010, 0.010)  # the two clean pairs only
    assert str(decision).endswith(
        "after a warm-up run of each form; left out: a float32 run carried a checkpoint save)"
    )


@pytest.mark.usefixtures("given_times")
def test_a_run_that_writes_a_summary_is_left_out(tmp_path):
    with tf.Graph().as_default():  # a TF1 FileWriter, as SummarySaverHook writes
        writer = v1.summary.FileWriter(str(tmp_path))
    summary = tf.compat.v1.Summary(value=[tf.compat.v1.Summary.Value(tag="loss", simple_value=1.0)])
    try:
        forms, decision = decide({2: lambda: writer.add_summary(summary, 2)})
    finally:
        writer.close()
    assert decision.left_out == ("a bfloat16 run carried a summary write",)
    assert len(forms) == 2 + 1 + 2 * 2  # the first run of a pair left out: that run only is lost
    assert list(tmp_path.glob("events.out.tfevents.*"))  # written all the same


@pytest.mark.usefixtures("given_times")
def test_runs_that_start_or_stop_the_profiler_are_left_out(tmp_path):
    start = lambda: tf.profiler.experimental.start(str(tmp_path))  # noqa: E731
    try:
        # run 2 (bfloat16) starts the profiler; runs traced from start to end after it are timed (run 3 and 4:
        # the first pair); run 5 (float32, the second pair's first) stops it
        forms, decision = decide({2: start, 5: tf.profiler.experimental.stop})
    finally:
        if profiler_running():  # the trial failed before run 5
            tf.profiler.experimental.stop()
    assert decision.left_out == (
        "a bfloat16 run carried a profiler start or stop",
        "a float32 run carried a profiler start or stop",
    )
    assert len(forms) == 2 + 2 * 2 + 2  # two clean pairs, and the two runs left out


@pytest.mark.usefixtures("given_times")
def test_a_fivefold_single_pair_that_carried_a_dump_decides_nothing(tmp_path, assume_host):
    # As a ported BERT script's was: a session run that dumps its step, timed against one that did not.
    assume_host(cpu_bfloat16=Support.NATIVE, reduced_precision="auto")
    decided = len(precision_decisions())
    config = config_with(precision_mode="allow_mix_precision", enable_dump=True, dump_path=str(tmp_path), dump_step="3")
    with tf.Graph().as_default():
        x = tf.constant(np.ones([4, 8], np.float32))
        loss = tf.reduce_sum(tf.nn.relu(tf.matmul(x, v1.get_variable("w", [8, 8]))))
        train = v1.train.GradientDescentOptimizer(0.01).minimize(loss, name="train")
        with NPUSession(config=config) as session:
            session.run(v1.global_variables_initializer())
            runs = 0
            while len(precision_decisions()) == decided:
                session.run(train)
                runs += 1
    [decision] = precision_decisions()[decided:]
    assert decision.left_out == ("a float32 run carried a dump",)  # step 3: the first timed pair's float32 run
    assert runs == 2 + 2 + 2 * 2 and len(decision.reduced_seconds) == 2  # the dumped run's pair timed again
    assert list(tmp_path.rglob("step_3"))


def test_a_trial_whose_runs_all_carry_something_keeps_the_baseline_untimed():
    trial = PrecisionTrial("f")
    verdicts = [trial.left_out(trial.next_form(), "a dump") for _ in range(2 + TimedTrial.MOST_LEFT_OUT)]
    assert verdicts[-1] is not None and verdicts[:-1] == [None] * (1 + TimedTrial.MOST_LEFT_OUT)
    # a pair starts over after each run left out, so its first form is the one run each time
    assert not trial.decision.reduced and str(trial.decision).startswith(
        "mixed precision for f: float32 kept, untimed: every run that could be timed carried more than its step; "
        f"left out: a bfloat16 run carried a dump ({TimedTrial.MOST_LEFT_OUT} runs); set "
    )
