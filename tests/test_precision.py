"""Mixed precision chosen by what this host runs fast (runtime/precision.py): the host probe and its cache, and
the program's first runs deciding per function, with the timings given as data; each door runs the form decided,
checked by the dtypes of the executed graphs; a program's own Keras policy; `explain`."""

import dataclasses
import json
import logging
import os

import numpy as np
import pytest
import tensorflow as tf
from helpers import config_with, node_dtypes
from test_cli import explain

from npu_bridge_compat import cli
from npu_bridge_compat.keras import NPUCallback
from npu_bridge_compat.options import Effect, options_from_kwargs
from npu_bridge_compat.plan import HostFacts, build_plan, detect_host
from npu_bridge_compat.plan.features import PrecisionChoice
from npu_bridge_compat.plan.platform import Support
from npu_bridge_compat.runtime import precision, precision_probe
from npu_bridge_compat.runtime.doors import enter_plan
from npu_bridge_compat.runtime.precision import (
    PrecisionTrial,
    ProbeError,
    keras_policy_advice,
    precision_decisions,
    resolve_precision,
)
from npu_bridge_compat.runtime.timed_trial import TimedTrial
from npu_bridge_compat.session import NPUSession

v1 = tf.compat.v1
BFLOAT16_PASS = "auto_mixed_precision_onednn_bfloat16"
CASCADE_LAKE = HostFacts(
    tf_version="2.15.1",
    gpu_count=0,
    cpu_bfloat16=Support.EMULATED,
    cpu_model="Intel(R) Xeon(R) Platinum 8280 CPU @ 2.70GHz",
    cpu_flags=("avx512f",),
)
SLOWER = {"matmul": 0.32, "conv": 0.41}  # what the probe measured on such a CPU (issue 38's 4-layer MLP: 0.32x)


@pytest.fixture(autouse=True)
def cache_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("NPU_BRIDGE_COMPAT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def mixed_plan(host, **values):
    return build_plan(options_from_kwargs({"precision_mode": "allow_mix_precision", **values}), host)


def never_measured(grappler_pass):
    raise AssertionError(f"measured {grappler_pass} again instead of reading the cache")


# --- the host probe --------------------------------------------------------------------------------------------


def test_where_the_probe_finds_bfloat16_slower_float32_is_kept_and_the_report_says_what_was_measured(
    cache_folder, tmp_path
):
    mixlist = tmp_path / "ops_info.json"
    mixlist.write_text('{"black-list": {"to-add": ["Exp"]}}')
    plan = mixed_plan(CASCADE_LAKE, modify_mixlist=str(mixlist))
    assert plan.mixed_precision.choice is PrecisionChoice.PROBED
    resolved = resolve_precision(plan, measure=lambda grappler_pass: SLOWER)
    assert resolved.mixed_precision is None and dict(resolved.environment) == {}
    assert getattr(resolved.host_config().graph_options.rewrite_options, BFLOAT16_PASS) != 1  # not ON
    entry = resolved.report.entry("precision_mode")
    assert (entry.effect, entry.how) == (
        Effect.APPROXIMATED.value,
        "bfloat16 0.32x float32 on a matmul step, 0.41x float32 on a conv step on this CPU (Intel(R) Xeon(R) "
        "Platinum 8280 CPU @ 2.70GHz: bfloat16 emulated (avx512f without avx512_bf16); measured once, kept in "
        f"{cache_folder / 'precision_probe.json'}): float32 kept; set NPU_BRIDGE_COMPAT_REDUCED_PRECISION=on to run "
        "bfloat16 anyway",
    )
    assert resolved.report.entry("modify_mixlist").effect == Effect.NO_EQUIVALENT.value
    # Measured once per CPU, TensorFlow version and pass: the next plan reads the cache.
    assert resolve_precision(plan, measure=never_measured).report == resolved.report
    [key] = json.loads((cache_folder / "precision_probe.json").read_text())
    assert key == f"{CASCADE_LAKE.cpu_model} [avx512f] TensorFlow 2.15.1 {BFLOAT16_PASS}"
    newer = mixed_plan(dataclasses.replace(CASCADE_LAKE, tf_version="2.21.0"))
    assert resolve_precision(newer, measure=lambda grappler_pass: {"matmul": 1.5, "conv": 1.2}).mixed_precision


def test_where_the_probe_finds_it_pays_the_program_runs_decide(cache_folder):
    resolved = resolve_precision(mixed_plan(CASCADE_LAKE), measure=lambda grappler_pass: {"matmul": 1.4, "conv": 0.9})
    assert resolved.mixed_precision.choice is PrecisionChoice.MEASURED
    how = resolved.report.entry("precision_mode").how
    assert "bfloat16 1.40x float32 on a matmul step, 0.90x float32 on a conv step on this CPU" in how
    assert "first runs" in how


def test_a_probe_whose_result_cannot_be_kept_still_decides(monkeypatch, tmp_path):
    blocked = tmp_path / "a file"
    blocked.write_text("")
    monkeypatch.setenv("NPU_BRIDGE_COMPAT_CACHE_DIR", str(blocked / "cache"))
    resolved = resolve_precision(mixed_plan(CASCADE_LAKE), measure=lambda grappler_pass: SLOWER)
    assert resolved.mixed_precision is None
    assert "bfloat16 emulated (avx512f without avx512_bf16); measured now, not kept): float32 kept" in (
        resolved.report.entry("precision_mode").how
    )


def test_a_failed_probe_keeps_float32_and_says_why():
    def failing(grappler_pass):
        raise ProbeError("the probe exited with status 1: boom")

    resolved = resolve_precision(mixed_plan(CASCADE_LAKE), measure=failing)
    assert resolved.mixed_precision is None
    assert "the probe of this CPU (Intel(R) Xeon(R) Platinum 8280" in resolved.report.entry("precision_mode").how
    assert "failed (the probe exited with status 1: boom): float32 kept" in resolved.report.entry("precision_mode").how


def test_plans_that_need_no_probe_are_left_as_they_are(cpu_host):
    for plan in (mixed_plan(cpu_host), mixed_plan(dataclasses.replace(CASCADE_LAKE, reduced_precision="on"))):
        assert resolve_precision(plan, measure=never_measured) is plan


def test_the_probe_times_a_matmul_and_a_conv_step_in_both_forms(monkeypatch):
    monkeypatch.setattr(precision_probe, "ROUNDS", 2)
    monkeypatch.setattr(precision_probe, "RUNS", 1)
    monkeypatch.setattr(precision_probe, "WARM_UP_RUNS", 1)
    for build in precision_probe.WORKLOADS.values():
        assert precision_probe.speedup(build, BFLOAT16_PASS) > 0


@pytest.mark.starts_processes
def test_the_probe_runs_in_a_child_process_and_its_failure_is_an_error():
    """The child is this interpreter with this package; what it refuses is an error naming why."""
    with pytest.raises(ProbeError, match="exited with status 2: .*not a grappler mixed-precision pass: 'no_such_pass'"):
        precision._measure_in_child("no_such_pass")


@pytest.mark.starts_processes
def test_a_door_plans_with_the_probe_and_its_session_runs_float32(assume_host, cache_folder):
    host = assume_host(**{f.name: getattr(CASCADE_LAKE, f.name) for f in dataclasses.fields(CASCADE_LAKE)})
    cache_folder.mkdir()
    key = precision.probe_key(host, BFLOAT16_PASS)
    (cache_folder / "precision_probe.json").write_text(json.dumps({key: {"speedups": SLOWER}}))
    with tf.Graph().as_default():
        x = tf.constant(np.ones([4, 8], np.float32))
        y = tf.nn.relu(tf.matmul(x, v1.get_variable("w", [8, 8]), name="matmul"))
        with NPUSession(config=config_with(precision_mode="allow_mix_precision")) as session:
            assert "0.32x float32 on a matmul step" in session.npu_plan.report.entry("precision_mode").how
            session.run(v1.global_variables_initializer())
            assert executed(session, y)["matmul"] == "float32"


# --- the program's first runs ----------------------------------------------------------------------------------


def feed(trial, seconds_by_form, pages_by_form=None):
    """Run the trial on times (and pages faulted in) given as data until it decides; the forms it asked for."""
    forms = []
    while trial.decision is None:
        reduced = trial.next_form()
        forms.append(reduced)
        trial.ran(reduced, seconds_by_form[reduced], (pages_by_form or {}).get(reduced, 0))
    return forms


def test_a_trial_warms_the_reduced_form_first_and_keeps_it_where_it_is_clearly_faster():
    trial = PrecisionTrial("session run of train")
    forms = feed(trial, {True: 0.010, False: 0.020})
    assert forms == [True, False, True, False, False, True]  # warm-ups, then pairs in alternating order
    assert trial.decision.reduced


def test_a_trial_keeps_float32_where_reduced_precision_is_slower_and_says_how_to_force_it():
    trial = PrecisionTrial("session run of train")
    feed(trial, {True: 0.013, False: 0.010})
    assert str(trial.decision) == (
        "mixed precision for session run of train: float32 kept, bfloat16 0.77x float32 (13 ms against 10 ms per "
        "run, medians of 3 timed pairs after a warm-up run of each form); set NPU_BRIDGE_COMPAT_REDUCED_PRECISION=on "
        "to keep bfloat16 anyway"
    )


def test_calls_faster_than_a_run_are_timed_together_until_they_last_one():
    # 1 ms against 1.25 ms: five calls of a form make a timed run (TimedTrial.RUN_SECONDS), compared per call
    trial = PrecisionTrial("Keras train function")
    forms = feed(trial, {True: 0.001, False: 0.00125})
    assert forms == [True, False] + [True] * 5 + [False] * 4 + [False] * 4 + [True] * 5 + [True] * 5 + [False] * 4
    assert trial.decision.reduced and trial.decision.reduced_seconds == pytest.approx((0.001,) * 3)
    assert str(trial.decision) == (
        "mixed precision for Keras train function: bfloat16 kept, bfloat16 1.25x float32 (1 ms against 1.25 ms per "
        "call, medians of 3 timed pairs of 4.5 calls a run, after a warm-up call of each form)"
    )
    # a run is at most MOST_CALLS_PER_RUN calls, however fast (2x: decided after two pairs)
    most = TimedTrial.MOST_CALLS_PER_RUN
    forms = feed(PrecisionTrial("step"), {True: 1e-6, False: 2e-6})
    assert forms[2:] == [True] * most + [False] * most + [False] * most + [True] * most


def test_pages_faulted_in_count_only_where_they_could_cost_what_the_forms_must_differ_by():
    seconds = {True: 0.1, False: 0.2}
    # 300 fresh pages (1.5 ms at most) in a 100 ms run: compared as any run, decided after two pairs
    assert len(feed(PrecisionTrial("step"), seconds, {True: 300})) == 6
    # 20000 (up to 0.1 s) in one form's runs: no pair compares the forms alone, so it takes every pair allowed
    assert len(feed(PrecisionTrial("step"), seconds, {True: 20000})) == 2 + 2 * TimedTrial.MOST_TIMED_PAIRS


@pytest.fixture
def measured_here(assume_host):
    """Doors plan as on a CPU with native bfloat16, in the measured mode."""
    return assume_host(cpu_bfloat16=Support.NATIVE, reduced_precision="auto")


@pytest.fixture(params=[True, False], ids=["bfloat16-faster", "float32-faster"])
def timings(request, monkeypatch):
    """The trials' runs take the time given here per form (reduced precision 2x faster, or 1.3x slower)."""
    reduced_faster = request.param
    seconds = {True: 0.010, False: 0.020} if reduced_faster else {True: 0.013, False: 0.010}
    monkeypatch.setattr(
        PrecisionTrial, "ran", lambda self, reduced, elapsed, pages=0: TimedTrial.ran(self, reduced, seconds[reduced])
    )
    return reduced_faster


def executed(session, fetches) -> dict[str, str]:
    metadata = v1.RunMetadata()
    session.run(fetches, options=v1.RunOptions(output_partition_graphs=True), run_metadata=metadata)
    return node_dtypes(metadata.partition_graphs)


@pytest.mark.starts_processes
def test_a_session_runs_both_forms_first_then_the_one_its_runs_chose(measured_here, timings):
    decided = len(precision_decisions())
    with tf.Graph().as_default():
        x = tf.constant(np.ones([4, 8], np.float32))
        loss = tf.reduce_sum(tf.nn.relu(tf.matmul(x, v1.get_variable("w", [8, 8]), name="matmul")))
        train = v1.train.GradientDescentOptimizer(0.01).minimize(loss, name="train")
        with NPUSession(config=config_with(precision_mode="allow_mix_precision")) as session:
            session.run(v1.global_variables_initializer())
            first_runs = [executed(session, train)["matmul"] for _ in range(2)]
            while len(precision_decisions()) == decided:
                session.run(train)
            later = executed(session, train)["matmul"]
    assert first_runs == ["bfloat16", "float32"]  # the run as asked warms up first, then the float32 form
    [decision] = precision_decisions()[decided:]
    assert decision.where == "session run of train" and decision.reduced is timings
    assert later == ("bfloat16" if timings else "float32")
    assert "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_ALLOWLIST_REMOVE" not in os.environ


ROUNDED_AWAY = 1 + 2**-10  # bfloat16 keeps 8 bits of mantissa: this input computes as 1.0 there


def keras_model():
    inputs = tf.keras.Input([16])
    dense = tf.keras.layers.Dense(1, use_bias=False, kernel_initializer="ones", name="dense")
    net = tf.keras.Model(inputs, dense(inputs))
    net.compile(tf.keras.optimizers.SGD(0.0), "mse")  # no update: each call's loss shows its form
    return net


def keras_fit(net, callback) -> float:
    """One train-function call; its loss: 256.0 computed in bfloat16 (the inputs round to 1), 256.5 in float32."""
    features = np.full([8, 16], ROUNDED_AWAY, np.float32)
    data = tf.data.Dataset.from_tensor_slices((features, np.zeros([8, 1], np.float32))).batch(8)
    history = net.fit(data.repeat(), steps_per_epoch=1, epochs=1, callbacks=[callback], verbose=0)
    return history.history["loss"][-1]


BFLOAT16_LOSS, FLOAT32_LOSS = 16.0**2, (16 * ROUNDED_AWAY) ** 2


def test_keras_functions_run_both_forms_first_then_the_one_their_calls_chose(measured_here, timings):
    decided = len(precision_decisions())
    net, callback = keras_model(), NPUCallback(precision_mode="allow_mix_precision")
    first_calls = [keras_fit(net, callback) for _ in range(2)]
    while len(precision_decisions()) == decided:
        keras_fit(net, callback)
    assert first_calls == [BFLOAT16_LOSS, pytest.approx(FLOAT32_LOSS)]
    [decision] = precision_decisions()[decided:]
    assert decision.where == "Keras train function" and decision.reduced is timings
    assert keras_fit(net, callback) == (BFLOAT16_LOSS if timings else pytest.approx(FLOAT32_LOSS))


@pytest.mark.starts_processes
@pytest.mark.needs_estimator
def test_an_estimators_training_runs_both_forms_first_then_the_one_its_runs_chose(measured_here, timings, tmp_path):
    from npu_bridge_compat.estimator import NPUEstimator, NPURunConfig

    losses = []

    def model_fn(features, labels, mode):
        weights = v1.get_variable("w", [16, 1], initializer=v1.ones_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(features, weights)))  # as keras_fit's: 256.0 in bfloat16
        step = v1.train.get_or_create_global_step()
        train = v1.train.GradientDescentOptimizer(0.0).minimize(loss, global_step=step)
        record = v1.train.SessionRunHook()
        record.before_run = lambda context: v1.train.SessionRunArgs(loss)
        record.after_run = lambda context, values: losses.append(values.results)
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train, training_hooks=[record])

    def input_fn():
        return tf.data.Dataset.from_tensors((np.full([8, 16], ROUNDED_AWAY, np.float32), 0.0)).repeat()

    decided = len(precision_decisions())
    config = NPURunConfig(model_dir=str(tmp_path), precision_mode="allow_mix_precision", save_checkpoints_steps=100)
    NPUEstimator(model_fn, config=config).train(input_fn, max_steps=2 + 2 * TimedTrial.MOST_TIMED_PAIRS + 1)
    assert losses[:2] == [BFLOAT16_LOSS, pytest.approx(FLOAT32_LOSS)]
    [decision] = precision_decisions()[decided:]
    assert decision.reduced is timings
    assert losses[-1] == (BFLOAT16_LOSS if timings else pytest.approx(FLOAT32_LOSS))


def test_a_tf2_programs_functions_run_both_forms_first_then_the_one_their_calls_chose(measured_here, timings):
    from npu_bridge_compat.compat.eager import function_calls_configured
    from npu_bridge_compat.runtime.doors import plan_for_door
    from npu_bridge_compat.tf2.functions import with_units

    plan = plan_for_door(options_from_kwargs(precision_mode="allow_mix_precision"))
    weights = tf.Variable(tf.ones([8, 8]))

    def step(x):
        return tf.reduce_sum(tf.nn.relu(tf.matmul(x, weights)))

    function = with_units(plan)(tf.function)(step)
    x = tf.fill([4, 8], ROUNDED_AWAY)

    def call() -> float:
        # the function-call config npu_device.open().as_default() sets for the program's thread
        with function_calls_configured(plan.configure_function_calls):
            return float(function(x))

    decided = len(precision_decisions())
    first_calls = [call() for _ in range(2)]
    while len(precision_decisions()) == decided:
        call()
    assert first_calls == [256.0, 256.25]  # 4 x 8 sums of 8 products: in bfloat16 the inputs are 1.0
    assert precision_decisions()[decided].reduced is timings
    assert call() == (256.0 if timings else 256.25)


def test_doors_without_run_time_units_say_the_pass_runs_unmeasured(cpu_host, caplog, fresh_state):
    from npu_bridge_compat.runtime import doors

    fresh_state(doors.UNMEASURED_DOORS)
    plan = mixed_plan(cpu_host)
    with caplog.at_level(logging.INFO):
        enter_plan(plan)  # as host_session_config does
    assert "host_session_config runs no run-time units, so bfloat16 mixed precision runs without the check" in (
        caplog.text
    )


# --- a program's own Keras policy ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "kind", "better"),
    [
        ("mixed_float16", "cpu-native-bfloat16", "'mixed_bfloat16'"),
        ("mixed_float16", "cpu-emulated-bfloat16", "'float32'"),
        ("mixed_float16", "cpu-native-float16", None),
        ("mixed_float16", "gpu", None),
        ("mixed_float16", "gpu-pascal", "'float32'"),
        ("mixed_bfloat16", "cpu-native-bfloat16", None),
        ("mixed_bfloat16", "cpu-without-avx512", "'float32'"),
        ("mixed_bfloat16", "gpu-volta", "'mixed_float16'"),
        ("float32", "cpu-emulated-bfloat16", None),
    ],
)
def test_a_programs_own_keras_policy_runs_and_is_advised_where_the_host_has_no_fast_path(
    cpu_host, policy, kind, better
):
    advice = keras_policy_advice(policy, cpu_host.with_device(kind))
    if better is None:
        assert advice is None
    else:
        assert advice.startswith(f"the program's Keras policy is '{policy}', which runs as the program asks; ")
        assert advice.endswith(f"The policy {better} is likely faster on this host.")


def test_the_keras_door_says_so_when_a_program_sets_a_slow_policy(assume_host, caplog):
    assume_host(cpu_bfloat16=Support.EMULATED, cpu_model="Intel Xeon", cpu_flags=("avx512f",))
    previous = tf.keras.mixed_precision.global_policy()
    tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        with caplog.at_level(logging.INFO):
            keras_fit(keras_model(), NPUCallback(iterations_per_loop=1))
    finally:
        tf.keras.mixed_precision.set_global_policy(previous)
    assert "the program's Keras policy is 'mixed_bfloat16', which runs as the program asks; this CPU (Intel Xeon: " in (
        caplog.text
    )


# --- explain ---------------------------------------------------------------------------------------------------


@pytest.fixture
def auto_here(monkeypatch):
    """This host's facts in the measured mode (the suite runs with reduced precision kept)."""
    monkeypatch.setenv("NPU_BRIDGE_COMPAT_REDUCED_PRECISION", "auto")
    detect_host.cache_clear()
    yield
    monkeypatch.undo()
    detect_host.cache_clear()


@pytest.mark.usefixtures("auto_here")
@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("cpu-emulated-bfloat16", "a short matmul and conv probe, run once per CPU and TensorFlow version"),
        ("cpu-native-bfloat16", "where it pays: a CPU with native bfloat16 (Cooper Lake, AMD Zen 4): bfloat16 native"),
        ("gpu-pascal", "compute capability 6.1 has no float16 tensor cores"),
    ],
)
def test_explain_says_how_each_host_kind_decides(capsys, kind, says):
    code, out, err = explain(capsys, "--host", kind, "precision_mode=allow_mix_precision")
    assert code == 0, err
    assert says in out


def test_explain_on_this_host_says_what_its_probe_measured(capsys, cache_folder, monkeypatch):
    monkeypatch.setattr(cli, "detect_host", lambda: CASCADE_LAKE)
    cache_folder.mkdir()
    key = precision.probe_key(CASCADE_LAKE, BFLOAT16_PASS)
    (cache_folder / "precision_probe.json").write_text(json.dumps({key: {"speedups": SLOWER}}))
    code, out, err = explain(capsys, "precision_mode=allow_mix_precision")
    assert code == 0, err
    assert "bfloat16 0.32x float32 on a matmul step, 0.41x float32 on a conv step on this CPU" in out
    assert "float32 kept; set NPU_BRIDGE_COMPAT_REDUCED_PRECISION=on to run bfloat16 anyway" in out
