"""Ported scripts unmodified: the npu_bridge / hccl aliases, npu_init, `run`, ops, ranks and loss scaling."""

import importlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from helpers import dumped_steps

from npu_bridge_compat import NpuOptionValueError, compat, ops
from npu_bridge_compat.errors import DeviceOnlyFeatureError
from npu_bridge_compat.legacy import install_aliases
from npu_bridge_compat.loss_scale import ExponentialUpdateLossScaleManager, FixedLossScaleManager, NPULossScaleOptimizer

HERE = Path(__file__).parent
v1 = tf.compat.v1


def run(*arguments, cwd=None, env=None):
    return subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "run", *arguments],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


# --- aliases -----------------------------------------------------------------------------------------------


@pytest.mark.starts_processes
def test_importing_the_package_installs_no_alias():
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import npu_bridge_compat, importlib.util as u; print(u.find_spec('npu_bridge'), u.find_spec('hccl'))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout.strip() == "None None", result.stderr


@pytest.mark.starts_processes
def test_a_real_npu_bridge_is_never_shadowed(tmp_path):
    (tmp_path / "npu_bridge").mkdir()
    (tmp_path / "npu_bridge" / "__init__.py").write_text("")
    result = subprocess.run(
        [sys.executable, "-c", "from npu_bridge_compat.legacy import install_aliases; install_aliases()"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert result.returncode != 0 and "a real 'npu_bridge' package is importable here" in result.stderr


def resolve(name: str):
    """Import the longest module prefix of a dotted name, then follow the attributes."""
    name = name.split(" (")[0]
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            value = getattr(value, attribute)
        return value
    raise ModuleNotFoundError(name)


def adapter_names():
    rows = [
        line.split("\t")
        for line in (HERE / "data" / "adapter_names.tsv").read_text().splitlines()
        if not line.startswith("#")
    ]
    return [(int(count), name) for count, name in rows]


# Names in the survey that are not the adapter's: scripts' own modules called `util` shadow the star-imported one.
NOT_ADAPTER_NAMES = {
    "npu_bridge.npu_init.util.dec",
    "npu_bridge.npu_init.util.io",
    "npu_bridge.npu_init.util.rand",
    "npu_bridge.npu_init.util.statistic",
    "npu_bridge.npu_init.util.test",
    "npu_bridge.npu_init.util.mod",
    "npu_bridge.npu_init.util.str",
}


def test_every_name_used_by_two_files_or_more_resolves():
    install_aliases()
    missing = [
        name
        for count, name in adapter_names()
        if count >= 2 and name.split(" (")[0] not in NOT_ADAPTER_NAMES and not _resolves(name)
    ]
    assert missing == []


def _resolves(name: str) -> bool:
    try:
        resolve(name)
        return True
    except (ImportError, AttributeError):
        return False


def test_npu_init_star_surface():
    install_aliases()
    namespace = {}
    exec("from npu_bridge.npu_init import *", namespace)
    for name in (
        "NPURunConfig",
        "NPUEstimator",
        "npu_config_proto",
        "RewriterConfig",
        "tf",
        "os",
        "npu_ops",
        "NPULossScaleOptimizer",
        "get_rank_size",
        "util",
        "npu_scope",
        "init_resource",
        "npu_hooks_append",
        "set_keras_session_npu_config",
        "hccl_ops",
        "experimental_options",
        "NpuEmptyHook",
    ):
        assert name in namespace, name
    assert namespace["RewriterConfig"].OFF == 2
    assert v1.Session.__name__ == "NPUSession"  # importing npu_init routes sessions through the session door
    # tf.compat.v1 of a program whose tf is TF1's already (`tf = tf.compat.v1` under run --tf1) is another copy
    assert v1.compat.v1.Session is v1.Session and v1.compat.v2.compat.v1.Session is v1.Session


# --- run ---------------------------------------------------------------------------------------------------


@pytest.mark.starts_processes
@pytest.mark.parametrize(
    "script, flags, expected",
    [
        pytest.param("estimator_port.py", [], "global_step 40", marks=pytest.mark.needs_estimator),
        ("session_port.py", [], "global_step 20"),
        ("keras_port.py", [], "epochs 2"),
        ("tf1_port.py", ["--tf1"], "global_step 5 ops ['FusedBatchNorm', 'FusedBatchNormGrad']"),
    ],
)
def test_ported_scripts_run_unmodified(script, flags, expected, tmp_path):
    result = run(*flags, str(HERE / "scripts" / script), str(tmp_path / "model"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert expected in result.stdout


@pytest.mark.starts_processes
@pytest.mark.needs_estimator
def test_dump_configured_script_runs_and_dumps_the_selected_steps(tmp_path):
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    result = run(str(HERE / "scripts" / "dump_port.py"), str(dumps), str(tmp_path / "model"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "global_step 10" in result.stdout
    assert list(dumped_steps(dumps)) == ["step_0", "step_5"]


@pytest.mark.starts_processes
def test_tf1_session_script_gets_npusession_dumps_and_checks(tmp_path):
    """Under `run --tf1`, tf.Session is NPUSession too; a v1 tf.cond in the step does not stop the probes."""
    result = run("--tf1", str(HERE / "scripts" / "tf1_loop_dump_port.py"), str(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "NPUSession global_step 6" in result.stdout
    assert "step_1 True" in result.stdout and "step_4 True" in result.stdout


@pytest.mark.starts_processes
def test_run_behaves_like_python(tmp_path):
    script = tmp_path / "probe.py"
    helper = tmp_path / "helper_module.py"
    helper.write_text("VALUE = 7\n")
    script.write_text(
        "import sys, helper_module\n"
        "from hccl.manage.api import get_rank_id\n"
        "print(__name__, __file__ == sys.argv[0] or __file__, sys.argv[1:], helper_module.VALUE,"
        " get_rank_id())\n"
        "sys.exit(int(sys.argv[1]))\n"
    )
    result = run(str(script), "3", "--flag", cwd=tmp_path)
    assert result.returncode == 3
    assert result.stdout.split()[0] == "__main__" and "['3', '--flag'] 7 0" in result.stdout
    failing = tmp_path / "failing.py"
    failing.write_text("raise RuntimeError('from the script')\n")
    result = run(str(failing))
    assert result.returncode == 1 and "RuntimeError: from the script" in result.stderr
    assert 'failing.py", line 1' in result.stderr
    assert run(str(tmp_path / "absent.py")).returncode == 2


# --- ops, ranks, device-only features ----------------------------------------------------------------------


@pytest.mark.starts_processes
def test_npu_ops_have_host_meanings():
    x = tf.ones([1000])
    dropped = ops.dropout(x, keep_prob=0.5, seed=1)
    assert set(np.unique(dropped.numpy())) <= {0.0, 2.0}
    assert np.array_equal(ops.dropout(x, keep_prob=1.0).numpy(), x.numpy())
    with pytest.raises(NpuOptionValueError, match="keep_prob must be"):
        ops.dropout(x, keep_prob=0.0)
    np.testing.assert_allclose(ops.gelu(tf.constant([1.0])).numpy(), [0.8411920], rtol=1e-5)
    with tf.Graph().as_default():
        with v1.Session() as sess:
            sess.run([ops.initialize_system(), ops.shutdown_system()])


def test_device_only_features_import_and_name_themselves():
    install_aliases()
    from npu_bridge.estimator.npu import npu_plugin
    from npu_bridge.hccl import hccl_ops

    with pytest.raises(DeviceOnlyFeatureError, match="npu_plugin.malloc_shared_memory needs Ascend hardware"):
        npu_plugin.malloc_shared_memory("var", [1], "float32")
    with pytest.raises(DeviceOnlyFeatureError, match="hccl_ops.remote_read"):
        hccl_ops.remote_read()


# --- loss scaling (Ascend semantics) -----------------------------------------------------------------------


def loss_scaled_training(make_manager, gradient_values):
    """Train one variable with gradients fed step by step; returns its value, global_step and scales per step."""
    with tf.Graph().as_default():
        manager = make_manager()
        weight = v1.get_variable("w", initializer=1.0, use_resource=True)
        grad = v1.placeholder(tf.float32, [])
        loss = weight * grad  # d loss / d weight = grad
        step = v1.train.get_or_create_global_step()
        optimizer = NPULossScaleOptimizer(v1.train.GradientDescentOptimizer(0.1), manager)
        train_op = optimizer.minimize(loss, global_step=step)
        scales = []
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            for value in gradient_values:
                sess.run(train_op, {grad: value})
                scales.append(float(sess.run(optimizer.get_loss_scale())))
            return sess.run(weight), sess.run(step), scales


@pytest.mark.starts_processes
def test_gradients_are_unscaled():
    weight, step, _ = loss_scaled_training(lambda: FixedLossScaleManager(1024), [1.0, 1.0])
    assert step == 2 and np.isclose(weight, 1.0 - 2 * 0.1)


@pytest.mark.starts_processes
def test_overflow_skips_the_update_and_the_global_step():
    weight, step, _ = loss_scaled_training(lambda: FixedLossScaleManager(4), [1.0, np.inf, 1.0])
    assert step == 2 and np.isclose(weight, 0.8)


def test_keras_compiles_a_model_with_the_loss_scale_optimizer_and_trains_it():
    """ModelZoo's AdvancedEast (keras_npu.py): `model.compile(optimizer=NPULossScaleOptimizer(AdamOptimizer(...),
    manager))` then a fit in a graph, with Keras 2 (tf_keras where tf.keras is Keras 3): Keras takes it as the TF1
    optimizer it is on the NPU, and the fit runs its scaled, unscaled and checked steps."""
    keras = importlib.import_module("tf_keras") if compat.tf_keras_is_keras_3() else tf.keras
    with tf.Graph().as_default():
        manager = ExponentialUpdateLossScaleManager(init_loss_scale=64, incr_every_n_steps=2, decr_every_n_nan_or_inf=2)
        optimizer = NPULossScaleOptimizer(v1.train.GradientDescentOptimizer(0.1), manager)
        model = keras.Sequential([keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros", input_shape=(2,))])
        model.compile(loss="mse", optimizer=optimizer)
        features = np.array([[1.0, 0.0], [0.0, 1.0]] * 4, "float32")
        model.fit(features, features @ np.array([[2.0], [-1.0]], "float32"), batch_size=8, epochs=4, verbose=0)
        kernel, scale = model.get_weights()[0], keras.backend.get_value(optimizer.get_loss_scale())
    assert isinstance(optimizer, v1.train.Optimizer)
    assert float(scale) == 256.0  # four good steps, the scale doubled after every two
    assert kernel[0, 0] > 0.3 and kernel[1, 0] < -0.15  # moving toward 2 and -1 from 0


@pytest.mark.starts_processes
def test_dynamic_scale_grows_after_good_steps_and_shrinks_after_bad_ones():
    manager_args = dict(init_loss_scale=16, incr_every_n_steps=2, decr_every_n_nan_or_inf=2, decr_ratio=0.5)
    _, step, scales = loss_scaled_training(
        lambda: ExponentialUpdateLossScaleManager(**manager_args), [1.0, 1.0, np.nan, np.nan, np.nan, 1.0]
    )
    assert scales == [16, 32, 32, 16, 16, 16] and step == 3


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"init_loss_scale": 0.5, "incr_every_n_steps": 10}, "init_loss_scale must be at least 1"),
        ({"init_loss_scale": 2, "incr_every_n_steps": 0}, "incr_every_n_steps must be positive"),
        ({"init_loss_scale": 2, "incr_every_n_steps": 5, "decr_ratio": 1.5}, r"decr_ratio must be in \(0, 1\)"),
    ],
)
def test_loss_scale_manager_checks(arguments, message):
    with tf.Graph().as_default(), pytest.raises(NpuOptionValueError, match=message):
        ExponentialUpdateLossScaleManager(**arguments)
    with pytest.raises(NpuOptionValueError, match="loss scale must be at least 1."):
        FixedLossScaleManager(0)
