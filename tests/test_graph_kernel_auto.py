"""Graph-kernel fusion decided by measurement (mode auto): the decision logic with timings given as data, and, in
each door, that a function's first runs build and run both forms and later runs keep the one chosen."""

import numpy as np
import pytest
import tensorflow as tf
from helpers import npu_config
from tensorflow.core.protobuf.config_pb2 import OptimizerOptions
from test_graph_kernel import CLUSTER_OPS, INPUT, chain_graph, keras_fit

from npu_bridge_compat import build_plan, options_from_kwargs
from npu_bridge_compat.compat.eager import function_call_config, function_run_metadata
from npu_bridge_compat.runtime import forms as forms_module
from npu_bridge_compat.runtime.fusion import FusionTrial, fusion_decisions, observed_fusion
from npu_bridge_compat.runtime.units import FusionUnit
from npu_bridge_compat.session import NPUSession
from npu_bridge_compat.tf2.functions import with_units

# The unit of the runs' times given as data: 10 ms, so that each timed run is one call (TimedTrial.RUN_SECONDS).
UNIT = 10e-3
FUSED, UNFUSED = True, False
# warm-up of each form (unfused first), then pairs in alternating order: F U, U F, F U, U F, F U, U F
TRIAL_ORDER = [UNFUSED, FUSED] + [FUSED, UNFUSED, UNFUSED, FUSED] * 3


FRESH = FusionTrial.FRESH_PAGES  # a run that faulted this many pages of memory in


def run_trial(fused_times, unfused_times, warm_up=(50 * UNIT, 10 * UNIT), fresh=((), ())):
    """Drive a trial with the given times (warm-ups first) and the indexes of each form's timed runs that faulted
    fresh memory in; the forms it asked for and its decision."""
    trial = FusionTrial("f")
    times = {FUSED: [warm_up[0], *fused_times], UNFUSED: [warm_up[1], *unfused_times]}
    fresh_runs = {FUSED: {i + 1 for i in fresh[0]}, UNFUSED: {i + 1 for i in fresh[1]}}
    forms = []
    while trial.decision is None:
        fused = trial.next_form()
        index = len(forms) - sum(1 for form in forms if form != fused)
        forms.append(fused)
        trial.ran(fused, times[fused].pop(0), FRESH if index in fresh_runs[fused] else 3)
    return forms, trial.decision


# --- the decision, with timings as data -----------------------------------------------------------------------


def test_a_clear_winner_is_kept_after_two_timed_pairs_and_warm_ups_do_not_count():
    forms, decision = run_trial([1 * UNIT, 1.1 * UNIT], [2 * UNIT, 2.1 * UNIT], warm_up=(900 * UNIT, 1 * UNIT))
    assert forms == TRIAL_ORDER[:6] and decision.fused
    assert decision.fused_seconds == (1 * UNIT, 1.1 * UNIT) and decision.unfused_seconds == (2 * UNIT, 2.1 * UNIT)
    forms, decision = run_trial([2.5 * UNIT, 2.5 * UNIT], [1 * UNIT, 1.2 * UNIT])
    assert forms == TRIAL_ORDER[:6] and not decision.fused


def test_a_wide_margin_in_one_pair_decides_only_when_a_second_pair_shows_it_too():
    forms, decision = run_trial([1 * UNIT, 1 * UNIT], [3.5 * UNIT, 3.4 * UNIT])
    assert forms == TRIAL_ORDER[:6] and decision.fused and decision.unfused_seconds == (3.5 * UNIT, 3.4 * UNIT)
    # a fivefold first pair that the second look does not confirm: the pairs go on, the median decides
    forms, decision = run_trial([1 * UNIT] * 6, [5 * UNIT] + [1 * UNIT] * 5)
    assert forms == TRIAL_ORDER and not decision.fused


def test_fusion_that_pays_in_every_pair_is_kept_after_three_pairs():
    forms, decision = run_trial([1 * UNIT] * 3, [1.4 * UNIT] * 3)  # 1.4x: not clear enough to stop after two pairs
    assert forms == TRIAL_ORDER[:8] and decision.fused


def test_fusion_that_never_pays_three_percent_is_dropped_after_three_pairs():
    forms, decision = run_trial([1 * UNIT] * 3, [1.02 * UNIT, 0.9 * UNIT, 1.01 * UNIT])
    assert forms == TRIAL_ORDER[:8] and not decision.fused
    _, decision = run_trial([1 * UNIT] * 3, [1 * UNIT] * 3)  # a tie keeps the unfused form
    assert not decision.fused


def test_a_close_race_takes_six_pairs_and_the_median_ratio_decides():
    # ratios (unfused / fused) 1.1, 0.92, 1.39, 1.1, 0.95, 1.2: median 1.1
    fused, unfused = [1.0, 1.3, 0.9, 1.0, 1.0, 1.0], [1.1, 1.2, 1.25, 1.1, 0.95, 1.2]
    forms, decision = run_trial([t * UNIT for t in fused], [t * UNIT for t in unfused])
    assert forms == TRIAL_ORDER and decision.fused and decision.speedup == pytest.approx(1.1)
    # ratios 1.1, 0.92, 1.04, 0.9, 0.95, 1.02: median 0.985, fusion does not pay
    fused, unfused = [1.0, 1.3, 1.0, 1.0, 1.0, 1.0], [1.1, 1.2, 1.04, 0.9, 0.95, 1.02]
    forms, decision = run_trial([t * UNIT for t in fused], [t * UNIT for t in unfused])
    assert forms == TRIAL_ORDER and not decision.fused


def test_one_slow_run_of_a_noisy_machine_does_not_decide():
    _, decision = run_trial([1 * UNIT, 9 * UNIT, 1 * UNIT, 1 * UNIT, 1 * UNIT, 1 * UNIT], [2 * UNIT] * 6)
    assert decision.fused and decision.speedup == pytest.approx(2.0)


def test_a_pair_with_one_run_that_faulted_fresh_memory_in_is_not_compared():
    # The allocator still maps fresh memory in a process's first runs: the unfused runs of the first pairs paid
    # 4 ms of page faults that the fused runs did not; the settled pairs after them show the two forms equal.
    fused, unfused = [1.5, 1.6, 1.0, 1.0, 1.0], [6.0, 5.9, 1.01, 0.98, 1.0]
    forms, decision = run_trial([t * UNIT for t in fused], [t * UNIT for t in unfused], fresh=((), (0, 1)))
    assert len(forms) == 2 + 2 * 5 and not decision.fused and decision.uncompared_pairs == 2
    assert decision.fused_seconds == (1 * UNIT,) * 3 and "2 more left out as one of their runs faulted" in str(decision)


def test_pairs_whose_runs_both_faulted_fresh_memory_in_decide_clear_margins_only():
    # both runs of each pair paid the faults: a 2x margin still shows and decides after two pairs ...
    _, decision = run_trial([5 * UNIT, 5 * UNIT], [10.5 * UNIT, 11 * UNIT], fresh=((0, 1), (0, 1)))
    assert decision.fused and decision.uncompared_pairs == 0
    # ... but a 5% one is the settled pairs' to judge: three of them follow before the unfused form is kept
    fused, unfused = [5.0, 5.0, 5.0, 1.0, 1.0, 1.0], [5.25, 5.25, 5.25, 0.99, 1.0, 1.01]
    forms, decision = run_trial([t * UNIT for t in fused], [t * UNIT for t in unfused], fresh=((0, 1, 2), (0, 1, 2)))
    assert len(forms) == 2 + 2 * 6 and not decision.fused


def test_a_trial_whose_runs_keep_faulting_fresh_memory_in_ends_after_ten_pairs():
    # every unfused run maps fresh memory in, no fused run does: no pair is compared, the median ratio of all
    # ten decides
    forms, decision = run_trial([1 * UNIT] * 10, [1.2 * UNIT] * 10, fresh=((), range(10)))
    assert len(forms) == 2 + 2 * FusionTrial.MOST_TIMED_PAIRS and decision.fused
    assert len(decision.fused_seconds) == 10 and decision.speedup == pytest.approx(1.2)


def test_after_the_decision_the_form_stays_and_runs_are_not_taken():
    trial = FusionTrial("f")
    for seconds in (5, 5, 1, 2, 2, 1):  # F U F U U F: fused 1 ms, unfused 2 ms
        trial.ran(trial.next_form(), seconds * UNIT)
    assert trial.decision.fused
    assert trial.ran(False, 0.1 * UNIT) is None and [trial.next_form() for _ in range(3)] == [FUSED] * 3
    assert trial.decision.unfused_seconds == (2 * UNIT, 2 * UNIT)


def test_the_decision_says_the_form_and_the_times_measured():
    _, decision = run_trial([1 * UNIT, 1 * UNIT], [2 * UNIT, 2 * UNIT])
    assert str(decision) == (
        "graph-kernel fusion for f: fused form kept, 10 ms fused vs 20 ms unfused per run (medians of 2 timed pairs "
        "after a warm-up run of each form; 2.00x, the pairs' median ratio)"
    )


# --- each door builds both forms, then keeps the chosen one ----------------------------------------------------


@pytest.fixture
def given_times(monkeypatch):
    """Runs take the given times (fused, unfused) as far as the trials are concerned."""

    def give(fused_seconds, unfused_seconds):
        ran = FusionTrial.ran
        monkeypatch.setattr(
            FusionTrial, "ran", lambda self, fused, *_: ran(self, fused, fused_seconds if fused else unfused_seconds)
        )

    return give


@pytest.fixture
def function_forms(monkeypatch):
    """The form (fused or not) each call of a function with forms ran in, in order: read from the function-call
    options in force when the function itself was called (a form entered for it, or the options around it)."""
    forms = []
    call = forms_module.CallForms.call

    def recorded(self, run, args, kwargs):
        def run_recorded(*args, **kwargs):
            config = tf.compat.v1.ConfigProto.FromString(function_call_config())
            forms.append(config.graph_options.optimizer_options.global_jit_level == OptimizerOptions.ON_1)
            return run(*args, **kwargs)

        return call(self, run_recorded, args, kwargs)

    monkeypatch.setattr(forms_module.CallForms, "call", recorded)
    return forms


def winner_times(fused_wins):
    return (1 * UNIT, 2 * UNIT) if fused_wins else (2 * UNIT, 1 * UNIT)


@pytest.mark.starts_processes
@pytest.mark.parametrize("fused_wins", [True, False], ids=["fused faster", "unfused faster"])
def test_a_session_signature_runs_both_forms_then_the_faster(given_times, fused_wins, monkeypatch):
    given_times(*winner_times(fused_wins))
    hooked = []  # runs that went through the hook driver
    before_run = FusionUnit.before_run
    monkeypatch.setattr(FusionUnit, "before_run", lambda self, context: hooked.append(1) or before_run(self, context))
    before = len(fusion_decisions())
    graph, t = chain_graph()
    clustered = []
    with NPUSession(graph=graph, config=npu_config({"enable_graph_kernel": True})) as session:
        session.run(t["init"])
        for _ in range(10):
            metadata = tf.compat.v1.RunMetadata()
            options = tf.compat.v1.RunOptions(output_partition_graphs=True)
            session.run(t["train"], {t["x"]: INPUT}, options=options, run_metadata=metadata)
            ops = {node.op for partition in metadata.partition_graphs for node in partition.node}
            clustered.append(bool(CLUSTER_OPS & ops))
    decided = [d for d in fusion_decisions()[before:] if d.where == f"session run of {t['train'].name}"]
    assert [d.fused for d in decided] == [fused_wins]
    assert clustered == TRIAL_ORDER[:6] + [fused_wins] * 4
    assert len(hooked) == 1 + 6  # the init run and the trial's; decided runs go straight to the session


@pytest.mark.starts_processes
@pytest.mark.parametrize("fused_wins", [True, False], ids=["fused faster", "unfused faster"])
def test_a_keras_function_runs_both_forms_then_the_faster(given_times, function_forms, fused_wins):
    given_times(*winner_times(fused_wins))
    before, reported_before = len(fusion_decisions()), len(observed_fusion())
    keras_fit(enable_graph_kernel=True)  # 20 steps, one per call
    assert function_forms == TRIAL_ORDER[:6] + [fused_wins] * 14
    assert [(d.where, d.fused) for d in fusion_decisions()[before:]] == [("Keras train function", fused_wins)]
    reported = observed_fusion()[reported_before:]  # the fused form's clusters, after its first call
    assert [s.where for s in reported] == ["Keras train function"] and reported[0].clusters >= 1


def element_wise_step(x):
    h = tf.nn.gelu(x * 1.5 + 0.5)
    return tf.reduce_sum(h * tf.tanh(x - 0.1))


@pytest.mark.starts_processes
@pytest.mark.parametrize("fused_wins", [True, False], ids=["fused faster", "unfused faster"])
def test_a_tf_function_runs_both_forms_then_the_faster_per_input_shape(given_times, function_forms, fused_wins):
    given_times(*winner_times(fused_wins))
    before = len(fusion_decisions())
    step = with_units(build_plan(options_from_kwargs(enable_graph_kernel=True)))(tf.function)(element_wise_step)
    clustered, values = [], []
    for _ in range(10):
        collected = []
        with function_run_metadata(collected):
            values.append(step(tf.constant(INPUT)).numpy())
        # a form's graphs are reported when it is first built: the unfused one, then the fused one
        ops = {n.op for m in collected for g in m.function_graphs for p in g.partition_graphs for n in p.node}
        clustered.append(bool(CLUSTER_OPS & ops) if ops else None)
    assert clustered == [False, True] + [None] * 8
    assert function_forms == TRIAL_ORDER[:6] + [fused_wins] * 4
    np.testing.assert_allclose(values, [values[0]] * 10, rtol=1e-5)
    step(tf.constant(INPUT[:8]))  # another input shape: its own trial, which starts with the unfused form
    assert function_forms[-1] == UNFUSED
    decided = fusion_decisions()[before:]
    assert [(d.where, d.fused) for d in decided] == [("tf.function element_wise_step", fused_wins)]
