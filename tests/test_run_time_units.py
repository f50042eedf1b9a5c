"""Each run-time unit through every door that carries it out, with the same outcome: the same step trains through
NPUSession, NPUEstimator and Keras with NPUCallback, under the same NPU options (an NpuOptimizer config).

The step: batch k holds the value k; `square_root = sqrt(3.5 - k * weight)` with weight 1 and no learning, so
step 1 computes sqrt(2.5) and step 4 is the first to produce NaN (its input is 3.5 - 4 = -0.5).
"""

import json

import numpy as np
import pytest
import tensorflow as tf
from helpers import config_with, dumped_steps, keras_executed_dtypes, node_dtypes

from npu_bridge_compat import scope, util
from npu_bridge_compat.errors import NonFiniteValueError, NpuCompatWarning
from npu_bridge_compat.estimator import NPUEstimator, NPURunConfig
from npu_bridge_compat.keras import NPUCallback
from npu_bridge_compat.plan import detect_host
from npu_bridge_compat.plan.platform import BFLOAT16_KERNELS
from npu_bridge_compat.session import NPUSession

v1 = tf.compat.v1
DOORS = ["session", pytest.param("estimator", marks=pytest.mark.needs_estimator), "keras"]


def counting_dataset():
    values = tf.data.Dataset.range(100).map(lambda k: tf.fill([2, 1], tf.cast(k, tf.float32)))
    return tf.data.Dataset.zip((values, values))


def graph_step(features, labels):
    """The step in TF1 graph style (session and Estimator doors); returns (train op, loss)."""
    weight = v1.get_variable("weight", [], initializer=v1.constant_initializer(1.0))
    root = tf.sqrt(3.5 - features * weight, name="square_root")
    hidden = tf.matmul(root, tf.ones([1, 4]), name="plain_matmul")
    with scope.keep_dtype_scope():
        kept = tf.matmul(hidden, tf.ones([4, 1]), name="kept_matmul")
    loss = tf.reduce_mean(tf.square(kept - labels), name="loss")
    train_op = v1.train.GradientDescentOptimizer(0.0).minimize(loss, global_step=v1.train.get_or_create_global_step())
    return train_op, loss


class Scale(tf.keras.layers.Layer):
    def build(self, shape):
        self.weight = self.add_weight(name="weight", shape=[], initializer="ones")

    def call(self, x):
        root = tf.sqrt(3.5 - x * self.weight, name="square_root")
        hidden = tf.matmul(root, tf.ones([1, 4]), name="plain_matmul")
        with scope.keep_dtype_scope():
            return tf.matmul(hidden, tf.ones([4, 1]), name="kept_matmul")


class Observed(tf.compat.v1.train.SessionRunHook):
    """What the session and Estimator doors ran: the graph, and the executed partition graphs' node dtypes."""

    def __init__(self):
        self.graph, self.dtypes = None, {}

    def after_create_session(self, session, coord):
        self.graph = session.graph

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(None, options=v1.RunOptions(output_partition_graphs=True))

    def after_run(self, run_context, run_values):
        self.dtypes.update(node_dtypes(run_values.run_metadata.partition_graphs))


def train(door, tmp_path, steps=3, iterations=1, **options):
    """Train `steps` steps through `door` with the NPU options; returns what ran (an `Observed`)."""
    (tmp_path / "dumps").mkdir(exist_ok=True)
    config = config_with(iterations_per_loop=iterations, **options)
    observed = Observed()
    if door == "session":
        with tf.Graph().as_default():
            features, labels = v1.data.make_one_shot_iterator(counting_dataset()).get_next()
            train_op, _ = graph_step(features, labels)
            with NPUSession(config=config) as sess:
                sess.run(v1.global_variables_initializer())
                observed.after_create_session(sess, None)
                step = util.set_iteration_per_loop(sess, train_op, iterations)
                for _ in range(steps // iterations):
                    metadata = v1.RunMetadata()
                    sess.run(step, options=v1.RunOptions(output_partition_graphs=True), run_metadata=metadata)
                    observed.dtypes.update(node_dtypes(metadata.partition_graphs))
    elif door == "estimator":

        def model_fn(features, labels, mode):
            train_op, loss = graph_step(features, labels)
            return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

        estimator = NPUEstimator(
            model_fn, config=NPURunConfig(model_dir=str(tmp_path / "model"), session_config=config)
        )
        estimator.train(counting_dataset, max_steps=steps, hooks=[observed])
    else:
        inputs = tf.keras.Input([1])
        net = tf.keras.Model(inputs, Scale()(inputs))
        net.compile(tf.keras.optimizers.SGD(0.0), "mse")
        observed.dtypes = keras_executed_dtypes(
            lambda: net.fit(
                counting_dataset(), steps_per_epoch=steps, epochs=1, verbose=0, callbacks=[NPUCallback(config)]
            )
        )
    return observed


def by_suffix(mapping: dict, suffix: str):
    """The value of the one key that ends with `suffix` (doors prefix names with their scopes)."""
    found = {key: value for key, value in mapping.items() if key == suffix or key.endswith("/" + suffix)}
    assert len(found) == 1, found
    return found.popitem()[1]


@pytest.mark.starts_processes
@pytest.mark.parametrize("iterations", [1, 3], ids=["one step per run", "3 steps per run"])
@pytest.mark.parametrize("door", DOORS)
def test_dump_writes_the_selected_step(door, iterations, tmp_path):
    train(
        door,
        tmp_path,
        steps=3,
        iterations=iterations,
        enable_dump=True,
        dump_path=str(tmp_path / "dumps"),
        dump_step="1",
    )
    steps = dumped_steps(tmp_path / "dumps", "*")
    assert list(steps) == ["step_1"]
    index = {(e["op"], e["kind"], e["slot"]): e for e in json.loads((steps["step_1"] / "index.json").read_text())}
    entry = by_suffix({op: e for (op, kind, slot), e in index.items() if kind == "output"}, "square_root")
    assert entry["step"] == 1
    np.testing.assert_allclose(np.load(steps["step_1"] / entry["file"]), np.sqrt([[2.5], [2.5]]), rtol=1e-6)


@pytest.mark.starts_processes
@pytest.mark.parametrize("iterations", [1, 3], ids=["one step per run", "3 steps per run"])
@pytest.mark.parametrize("door", DOORS)
def test_numeric_check_stops_at_the_first_non_finite_step_and_saves_its_inputs(door, iterations, tmp_path):
    with pytest.raises(
        NonFiniteValueError,
        match=r"op '(.*/)?square_root' produced NaN values in output 0, the "
        r"first non-finite output of step 4; its inputs are saved in",
    ):
        train(
            door, tmp_path, steps=6, iterations=iterations, enable_exception_dump=1, dump_path=str(tmp_path / "dumps")
        )
    [saved] = (tmp_path / "dumps").glob("exception/*/*square_root/input.0.npy")
    np.testing.assert_array_equal(np.load(saved), [[-0.5], [-0.5]])  # step 4's own input


@pytest.mark.starts_processes
@pytest.mark.skipif(
    detect_host().cpu_bfloat16 not in BFLOAT16_KERNELS, reason="mixed precision on a CPU needs AVX-512 (bfloat16)"
)
@pytest.mark.parametrize("door", [*DOORS[:2], pytest.param("keras", marks=pytest.mark.needs_keras_2)])  # see Keras 3's
def test_keep_dtype_keeps_the_marked_op_in_float32(door, tmp_path):
    dtypes = train(door, tmp_path, steps=2, precision_mode="allow_mix_precision").dtypes
    assert by_suffix(dtypes, "plain_matmul") == "bfloat16"  # converted by grappler's mixed-precision pass
    assert by_suffix(dtypes, "kept_matmul") == "float32"  # spared


@pytest.mark.starts_processes
@pytest.mark.parametrize("door", DOORS)
def test_profiling_writes_a_trace(door, tmp_path):
    train(door, tmp_path, steps=2, profiling_mode=True, profiling_options=f'{{"output": "{tmp_path / "trace"}"}}')
    traces = list((tmp_path / "trace").glob("plugins/profile/*/*.xplane.pb"))
    assert len(traces) == 1 and traces[0].stat().st_size > 0


@pytest.mark.starts_processes
@pytest.mark.parametrize("door", DOORS[:2])
def test_host_region_ops_are_kept_out_of_compilation(door, tmp_path):
    observed = train(
        door,
        tmp_path,
        steps=1,
        mix_compile_mode=True,
        in_out_pair_flag=False,  # regions on the host
        in_out_pair="[[['square_root'], ['loss']]]",
    )
    kept = _host_kept(observed.graph)
    assert {"square_root", "plain_matmul", "kept_matmul", "loss"} <= kept
    assert "weight" not in kept and not any(name.startswith("gradients") for name in kept)


def _host_kept(graph) -> set:
    """The ops marked to stay out of XLA compilation (and on the host CPU where there is an accelerator)."""
    kept = set()
    for op in graph.get_operations():
        try:
            if op.get_attr("_XlaCompile") is False:
                kept.add(op.name)
        except ValueError:
            pass
    return kept


def test_keras_door_says_it_does_not_keep_host_regions(tmp_path):
    with pytest.warns(NpuCompatWarning, match=r"NPUCallback does not carry out HostRegions"):
        NPUCallback(config_with(mix_compile_mode=True, in_out_pair="[[['square_root'], ['loss']]]"))


def test_doors_declare_what_they_carry_out(gpu_host):
    from npu_bridge_compat.estimator.estimator import ESTIMATOR_DOOR
    from npu_bridge_compat.keras import KERAS_DOOR
    from npu_bridge_compat.options import options_from_kwargs
    from npu_bridge_compat.plan import build_plan
    from npu_bridge_compat.plan.features import GpuMemoryLimit, InterOpThreads
    from npu_bridge_compat.runtime.doors import unapplied
    from npu_bridge_compat.session import SESSION_DOOR

    plan = build_plan(
        options_from_kwargs(
            graph_memory_max_size=str(2**30),
            stream_max_parallel_num="AIcoreEngine:3",
            iterations_per_loop=2,
            precision_mode="allow_mix_precision",
        ),
        gpu_host,
    )
    assert unapplied(plan, SESSION_DOOR) == [] and unapplied(plan, ESTIMATOR_DOOR) == []
    assert {type(feature) for feature in unapplied(plan, KERAS_DOOR)} == {GpuMemoryLimit, InterOpThreads}


def test_doors_stand_side_by_side():
    """No door module imports another door: what joins two doors lives below them or under legacy/."""
    import ast
    from pathlib import Path

    package = Path(__file__).resolve().parent.parent / "npu_bridge_compat"
    doors = {
        "estimator": package.glob("estimator/*.py"),
        "session": [package / "session.py"],
        "keras": [package / "keras.py"],
    }
    for door, files in doors.items():
        for path in files:
            imported = {
                node.module
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.ImportFrom) and node.module
            }
            others = {
                name
                for name in imported
                for other in doors
                if other != door
                and (name == f"npu_bridge_compat.{other}" or name.startswith(f"npu_bridge_compat.{other}."))
            }
            assert not others, f"{path.name} imports {others}"
