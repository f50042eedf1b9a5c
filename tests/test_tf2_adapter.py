"""The TF2 adapter's door (`npu_device`): its option tree over the one option table, and ported TF2 scripts
(tests/scripts/tf2_*.py) run unmodified under `run` and `launch`: Keras data parallel, a custom loop with loss
scaling, enable_v1, dumps, a lost rank."""

import gc
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
import weakref
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from helpers import loopback_port_block
from test_distributed_ranks import (
    ENVIRONMENT,
    SCRIPTS,
    assert_trained_like_one_process,
    finish,
    launched,
    reports,
    start,
)

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.errors import NpuCompatWarning, NpuOptionTypeError, NpuOptionValueError
from npu_bridge_compat.keras import NPUCallback
from npu_bridge_compat.options import tf2_tree as tf2_options
from npu_bridge_compat.options.table import OPTIONS
from npu_bridge_compat.plan.features import MixedPrecision, ProfilerTrace, TensorDump
from npu_bridge_compat.plan.platform import Support
from npu_bridge_compat.runtime import keras_calls
from npu_bridge_compat.tf2.device import plan_options

BASE_PORT = 30300  # this module's launches (in launch's own network namespace where the system allows one)
# `run` gives scripts Keras 2 (tf_keras from TensorFlow 2.16); TF_USE_LEGACY_KERAS=0 keeps Keras 3 there.
KERAS = [
    pytest.param({}, id="keras2"),
    pytest.param({"TF_USE_LEGACY_KERAS": "0"}, id="keras3", marks=pytest.mark.needs_keras_3),
]


@pytest.fixture
def tree():
    return tf2_options.OptionGroup("")


# --- global_options(): the adapter's tree, every leaf a row of the table ------------------------------------


def test_every_leaf_is_a_table_row_under_the_adapters_name(tree):
    leaves = {leaf.name: leaf.spec for leaf in tree.leaves() if leaf.spec is not None}
    assert leaves["dump_config.enable_dump"] is OPTIONS["enable_dump"]
    assert leaves["profiling_config.enable_profiling"] is OPTIONS["profiling_mode"]
    assert leaves["experimental.multi_branches_config.dynamic_dims"] is OPTIONS["dynamic_dims"]
    assert leaves["memory_config.static_memory_policy"] is OPTIONS["static_memory_policy"]
    assert {spec.key for spec in leaves.values()} == {s.key for s in OPTIONS.values() if s.tf2_name}
    assert "iterations_per_loop" not in dir(tree)  # TF2 has a loop size instead


def test_assignments_plan_through_the_table_and_the_report_names_them_as_written(tree, tmp_path):
    tree.precision_mode = "allow_mix_precision"
    tree.dump_config.enable_dump = True
    tree.dump_config.dump_path = str(tmp_path)
    tree.dump_config.dump_step = "0|5-6"
    tree.profiling_config.enable_profiling = True
    tree.profiling_config.profiling_options = json.dumps({"output": str(tmp_path / "prof")})
    plan = plan_options(tree)
    assert plan.options.enable_dump and plan.options.profiling_mode
    assert plan.feature(TensorDump).steps == ((0, 0), (5, 6))
    assert plan.feature(ProfilerTrace).output == str(tmp_path / "prof")
    text = str(plan.report)
    assert "dump_config.dump_step='0|5-6'" in text and "profiling_config.enable_profiling=True" in text
    assert plan.report.source == "npu_device.global_options()"
    assert "precision_mode" in text and (
        plan.mixed_precision is None or isinstance(plan.mixed_precision, MixedPrecision)
    )


def test_values_as_the_adapter_reads_them(tree):
    tree.deterministic = 1
    tree.hcom_parallel = False
    tree.graph_memory_max_size = 21 * 1024**3  # ints reach the Graph Engine as their str()
    tree.experimental.multi_branches_config.input_shape = "data:-1,4"
    tree.experimental.multi_branches_config.dynamic_dims = "2;4"
    tree.experimental.multi_branches_config.dynamic_node_type = "0"
    tree.enable_small_channel = True  # a bool in TF2, 0/1 in TF1: the same setting
    assert tree.as_dict() == {
        "graph_memory_max_size": str(21 * 1024**3),
        "hcom_parallel": "0",
        "enable_small_channel": "1",
        "deterministic": "1",
        "input_shape": "data:-1,4",
        "dynamic_node_type": "0",
        "dynamic_dims": "2;4",
    }
    options = plan_options(tree).options
    assert options.graph_memory_max_size == str(21 * 1024**3)
    assert options.enable_small_channel == 1 and options.dynamic_node_type == 0 and options.deterministic == 1


@pytest.mark.parametrize(
    "path, value, error, message",
    [
        (
            "precision_mode",
            "mixed",
            NpuOptionValueError,
            "npu_device.global_options().precision_mode: 'mixed' not in optional list ['force_fp32',",
        ),
        (
            "dump_config.dump_mode",
            "everything",
            NpuOptionValueError,
            "dump_config.dump_mode: 'everything' not in optional list ['input', 'output', 'all']",
        ),
        (
            "dump_config.enable_dump",
            "yes",
            NpuOptionTypeError,
            "dump_config.enable_dump: Expected bool, got str 'yes'",
        ),
        ("deterministic", 2, NpuOptionValueError, "deterministic: '2' not in optional list [0, 1]"),
        (
            "precison_mode",
            "force_fp32",
            NpuOptionValueError,
            "NpuConfig has no option precison_mode. Did you mean 'precision_mode'?",
        ),
        (
            "dump_config.dump_paht",
            "/tmp",
            NpuOptionValueError,
            "NpuDumpConfig has no option dump_paht. Did you mean 'dump_path'?",
        ),
        (
            "auto_tune_mode",
            "RL,GA",
            NpuOptionValueError,
            "NpuConfig has no option auto_tune_mode. (auto_tune_mode is a key",
        ),
        (
            "enable_dump",
            True,
            NpuOptionValueError,
            "NpuConfig has no option enable_dump. Did you mean 'dump_config.enable_dump'?",
        ),
        (
            "profiling_config.profiling_mode",
            True,
            NpuOptionValueError,
            "Did you mean 'profiling_config.enable_profiling'?",
        ),
    ],
)
def test_bad_values_and_names_fail_at_the_assignment(tree, path, value, error, message):
    *groups, name = path.split(".")
    target = tree
    for group in groups:
        target = getattr(target, group)
    with pytest.raises(error) as raised:
        setattr(target, name, value)
    assert message in str(raised.value)
    assert isinstance(raised.value, ValueError if error is NpuOptionValueError else TypeError)


def test_values_the_graph_engine_checks_fail_when_the_device_opens(tree, tmp_path):
    tree.dump_config.enable_dump = True  # dump_path missing: the adapter's rule
    with pytest.raises(NpuOptionValueError, match="dump_path must be set") as raised:
        plan_options(tree)
    assert "enable_dump is dump_config.enable_dump" in "".join(getattr(raised.value, "__notes__", []))
    tree.dump_config.dump_path = str(tmp_path / "missing")
    with pytest.raises(NpuOptionValueError, match=r'"dump_config.dump_path" \(npu_device.global_options\(\)\)'):
        plan_options(tree)


def test_option_values_read_like_the_adapters(tree):
    leaf = tree.dump_config.dump_mode
    assert leaf.default == "output" and leaf.optional == ["input", "output", "all"] and leaf.value is None
    tree.dump_config.dump_mode = "all"
    assert tree.dump_config.dump_mode.value == "all"
    assert tree.dump_config.enable_dump.optional == [True, False]


# --- ported TF2 scripts ----------------------------------------------------------------------------------------


@pytest.mark.starts_processes
@pytest.mark.parametrize("keras", KERAS)
def test_keras_data_parallel_on_two_ranks_trains_like_one_process(processes, tmp_path, keras):
    """Wrapper, shard and broadcast under launch -n 2: identical weights, equal to one process on the global
    batch, from rank 0's initial weights."""
    steps = 6
    job, output = launched(processes, tmp_path, "tf2_keras_port.py", steps, NPU_BRIDGE_COMPAT_PORT=BASE_PORT, **keras)
    assert job.returncode == 0, output[-3000:]
    found = reports(output)
    assert sorted(found) == [0, 1], output[-3000:]
    assert all(r["size"] == 2 and r["batch"] == 4 and r["iterations"] == steps for r in found.values())
    assert found[0]["own_initial"] != found[1]["own_initial"]
    assert_trained_like_one_process(found, steps, initial=found[0]["own_initial"])
    assert "dump_config" not in output and "precision_mode='must_keep_origin_dtype'" in output


@pytest.mark.starts_processes
@pytest.mark.parametrize("keras", KERAS)
def test_overflow_on_one_rank_skips_the_step_on_every_rank(processes, tmp_path, keras):
    """NpuLossScaleOptimizer with all_reduce in a tf.function loop: the last rank alone overflows at step 2."""
    job, output = launched(
        processes, tmp_path, "tf2_loss_scale_port.py", 4, 2, NPU_BRIDGE_COMPAT_PORT=BASE_PORT + 10, **keras
    )
    assert job.returncode == 0, output[-3000:]
    found = reports(output)
    assert sorted(found) == [0, 1], output[-3000:]
    for rank, report in found.items():
        assert [h["finite"] for h in report["history"]] == [True, False, True, True], rank
        assert [h["changed"] for h in report["history"]] == [True, False, True, True], rank
        assert [h["scale"] for h in report["history"]] == [1024.0, 512.0, 512.0, 512.0], rank
        assert report["iterations"] == 4  # a skipped step still counts, as in Keras and the adapter
    np.testing.assert_array_equal(found[0]["final"], found[1]["final"])


@pytest.mark.starts_processes
def test_a_lost_rank_ends_a_tf2_job(processes, tmp_path):
    """The last rank dies before step 2; the other, waiting for it in a collective, is told which rank was
    lost."""
    port = loopback_port_block(2)  # ranks on the host's network, not launch's own
    logs = [tmp_path / f"rank{rank}.log" for rank in range(2)]
    ranks = [
        start(
            processes,
            [sys.executable, "-m", "npu_bridge_compat", "run", str(SCRIPTS / "tf2_loss_scale_port.py"), "5", "9", "2"],
            logs[rank],
            RANK_ID=rank,
            RANK_SIZE=2,
            NPU_BRIDGE_COMPAT_PORT=port,
        )
        for rank in range(2)
    ]
    output = finish(ranks[0], logs[0], timeout=180)
    assert ranks[0].returncode != 0, output[-3000:]
    assert f"lost rank 1 (127.0.0.1:{port + 1})" in output or f"talking to rank 1 (127.0.0.1:{port + 1})" in output


def _run(script: str, *arguments, **environment) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "run", str(SCRIPTS / script), *map(str, arguments)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**ENVIRONMENT, "PYTHONPATH": f"{SCRIPTS}:{ENVIRONMENT['PYTHONPATH']}", **environment},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout + result.stderr


@pytest.mark.starts_processes
@pytest.mark.parametrize("keras", KERAS)
def test_dumps_are_written_where_dump_config_says(tmp_path, keras):
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    _run("tf2_keras_port.py", 3, dumps, **keras)
    runs = list(dumps.iterdir())
    assert len(runs) == 1
    steps = sorted(p.name for p in (runs[0] / "train").iterdir())
    assert steps == ["step_1"]
    files = list((runs[0] / "train" / "step_1").glob("*.npy"))
    assert any("MatMul" in f.name for f in files), files


@pytest.mark.starts_processes
def test_enable_v1_gives_the_tf1_adapter_behind_compat_v1():
    output = _run("tf2_enable_v1_port.py")
    report = json.loads(next(line for line in output.splitlines() if line.startswith('{"executing_eagerly"')))
    assert report == {
        "executing_eagerly": False,
        "global_step": 5,  # iterations_per_loop=5 through the session door
        "has_loss_scale_optimizer": False,  # the adapter drops it from compat.v1
        "has_distributed_optimizer": True,
    }


@pytest.mark.starts_processes
def test_options_set_after_open_and_a_loop_size_keras_ignores_warn(tmp_path):
    script = tmp_path / "late.py"
    script.write_text(
        "import warnings\nimport numpy as np\nimport npu_device\nimport tensorflow as tf\n"
        "npu_device.open().as_default()\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    npu_device.global_options().precision_mode = 'force_fp32'\n"
        "    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "    model.compile('sgd', 'mse')\n"
        "    model.fit(np.ones([8, 2]), np.ones([8, 1]), epochs=1, verbose=0)\n"
        "for w in caught:\n"
        "    if w.category.__name__ == 'NpuCompatWarning':\n"
        "        print('WARNED', w.message)\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "run", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**ENVIRONMENT, "NPU_LOOP_SIZE": "4"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    warned = [line for line in result.stdout.splitlines() if line.startswith("WARNED")]
    assert len(warned) == 2, result.stdout
    assert "precision_mode was set after npu_device.open(), which reads the options once" in warned[0]
    assert "the NPU loop size is 4 (NPU_LOOP_SIZE or set_npu_loop_size) but the model runs 1 step(s)" in warned[1]


# --- kernels ---------------------------------------------------------------------------------------------------


def test_fast_gelu_and_its_gradient_follow_the_kernels_math():
    import tensorflow as tf

    from npu_bridge_compat.legacy.npu_device import gen_npu_ops

    x = tf.constant(np.linspace(-4, 4, 17, dtype=np.float32))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = gen_npu_ops.fast_gelu(x)
    sigmoid = 1 / (1 + np.exp(-1.702 * x.numpy()))
    np.testing.assert_allclose(y.numpy(), x.numpy() * sigmoid, rtol=1e-6)
    gradient = tape.gradient(y, x).numpy()
    np.testing.assert_allclose(gradient, gen_npu_ops.fast_gelu_grad(tf.ones_like(x), x).numpy(), rtol=1e-6)
    numeric = (gen_npu_ops.fast_gelu(x + 1e-3).numpy() - gen_npu_ops.fast_gelu(x - 1e-3).numpy()) / 2e-3
    np.testing.assert_allclose(gradient, numeric, atol=2e-3)


def test_gelu_is_exact_eagerly_and_the_fused_kernel_in_functions():
    import tensorflow as tf

    from npu_bridge_compat.tf2.kernels import gelu

    x = tf.constant([-1.5, 0.3, 2.0])
    np.testing.assert_allclose(gelu(x).numpy(), tf.nn.gelu(x).numpy())
    traced = tf.function(gelu)(x).numpy()
    np.testing.assert_allclose(traced, x.numpy() / (1 + np.exp(-1.702 * x.numpy())), rtol=1e-6)


def test_dropout_masks_are_packed_bits_that_do_mask_applies():
    import tensorflow as tf

    from npu_bridge_compat.legacy.npu_device import gen_npu_ops

    x = tf.reshape(tf.range(1, 301, dtype=tf.float32), [3, 100])
    mask = gen_npu_ops.drop_out_gen_mask([3, 100], 0.75, seed=1, seed2=2)
    assert mask.dtype == tf.uint8 and mask.shape == [384 // 8]  # 300 elements padded to 3 x 128 bits
    y = gen_npu_ops.drop_out_do_mask(x, mask, 0.75).numpy()
    bits = np.unpackbits(mask.numpy(), bitorder="little")[:300].reshape(3, 100).astype(bool)
    np.testing.assert_allclose(y, np.where(bits, x.numpy() / 0.75, 0.0), rtol=1e-6)
    assert 0.6 < bits.mean() < 0.9


def test_dropout_v3_masks_have_a_byte_per_element_in_the_registered_layouts():
    """A vector padded to 16 elements, or [*batch, N/16, M/16, 16, 16] fractal blocks when M and N divide by 16."""
    import tensorflow as tf

    from npu_bridge_compat.legacy.npu_device import gen_npu_ops

    vector = gen_npu_ops.drop_out_gen_mask_v3([3, 10], 0.5, 4, 5)
    assert vector.dtype == tf.uint8 and vector.shape == [32] and set(np.unique(vector.numpy())) <= {0, 1}
    x = tf.reshape(tf.range(1, 2 * 32 * 48 + 1, dtype=tf.float32), [2, 32, 48])
    blocks = gen_npu_ops.drop_out_gen_mask_v3([2, 32, 48], 0.5, 4, 5)
    assert blocks.shape == [2, 3, 2, 16, 16]
    # element (m, n) of batch b is blocks[b, n // 16, m // 16, m % 16, n % 16]
    kept = np.transpose(blocks.numpy(), (0, 2, 3, 1, 4)).reshape(2, 32, 48).astype(bool)
    y = gen_npu_ops.drop_out_do_mask_v3(x, blocks, 0.5).numpy()
    np.testing.assert_allclose(y, np.where(kept, x.numpy() / 0.5, 0.0))
    assert 0.4 < kept.mean() < 0.6
    np.testing.assert_array_equal(
        gen_npu_ops.drop_out_do_mask_v3(x[0, 0, :10], vector, 0.5).numpy(),
        np.where(vector.numpy()[:10] > 0, x.numpy()[0, 0, :10] / 0.5, 0.0),
    )


@pytest.mark.starts_processes
def test_dropout_masks_are_new_at_every_run_and_a_fixed_sequence_for_fixed_seeds():
    """As Ascend's DropOutGenMask (and TensorFlow's seeded random ops): eagerly, in tf.functions and in graphs,
    each run draws a new mask; the same seeds give the same sequence of masks; seeds None or 0 are random."""
    import tensorflow as tf

    from npu_bridge_compat.legacy.npu_device import gen_npu_ops

    def masks(seed, seed2, runs=3):
        function = tf.function(lambda: gen_npu_ops.drop_out_gen_mask([256], 0.5, seed, seed2))
        return [function().numpy().tolist() for _ in range(runs)]

    seeded = masks(7, 3)
    assert len({str(m) for m in seeded}) == 3 and masks(7, 3) == seeded
    assert masks(None, None, 1) != masks(None, None, 1) and masks(0, 0, 1) != masks(0, 0, 1)
    eager = [gen_npu_ops.drop_out_gen_mask([256], 0.5, 7, 3).numpy().tolist() for _ in range(2)]
    assert eager[0] != eager[1]
    sequences = []
    for _ in range(2):
        with tf.Graph().as_default():
            mask = gen_npu_ops.drop_out_gen_mask_v3([64], 0.5, 7, 3)
            with tf.compat.v1.Session() as session:
                sequences.append([session.run(mask).tolist() for _ in range(2)])
    assert sequences[0] == sequences[1] and sequences[0][0] != sequences[0][1]


@pytest.mark.starts_processes
def test_the_ports_dropout_patch_trains_with_a_new_mask_every_step():
    """npu_convert_dropout's Dropout.call (a stand-in written after the ports'), with no graph seed: trains (Keras
    2, as `run` gives ported scripts)."""
    output = _run("tf2_dropout_port.py")
    report = json.loads(next(line for line in output.splitlines() if line.startswith('{"losses"')))
    assert report["losses"][-1] < report["losses"][0]
    assert report["distinct_masks"] == 3 and report["values"] == [0.0, 2.0] and report["inference_is_identity"]
    assert 0.35 < report["keep_fraction"] < 0.65


@pytest.mark.starts_processes
@pytest.mark.parametrize("keras", KERAS)
def test_a_custom_loop_gets_dumps_checks_and_mixed_precision(tmp_path, keras):
    """The step function the program decorates after as_default() carries the run-time units: dumps of the
    selected calls, numeric checks, and grappler's mixed precision on its traced graph."""
    from npu_bridge_compat.plan import detect_host
    from npu_bridge_compat.plan.platform import BFLOAT16_KERNELS

    mode = "allow_mix_precision" if detect_host().cpu_bfloat16 in BFLOAT16_KERNELS else "must_keep_origin_dtype"
    output = _run("tf2_custom_loop_port.py", tmp_path, mode, **keras)
    report = json.loads(next(line for line in output.splitlines() if line.startswith('{"losses"')))
    assert len(report["losses"]) == 4 and report["losses"][1] < report["losses"][0]
    assert report["error"].startswith("NonFiniteValueError: op 'project' produced Inf values")
    assert report["matmul_dtype"] == ("bfloat16" if mode == "allow_mix_precision" else "float32")
    [run] = [p for p in tmp_path.iterdir() if p.name != "exception"]
    assert sorted(p.name for p in (run / "train_step").iterdir()) == ["step_1", "step_3"]
    assert sorted(p.name for p in (run / "Projection.call").iterdir()) == ["step_1", "step_3"]
    assert list((run / "Projection.call" / "step_1").glob("*project.output.0.npy"))
    assert list((tmp_path / "exception").glob("*/project"))


# --- scan and explain ------------------------------------------------------------------------------------------

TF2_SCRIPT = """\
import npu_device


def npu_config(flags):
    npu_init = npu_device.global_options()
    npu_init.precision_mode = "allow_mix_precision"
    npu_init.dump_config.enable_dump = True
    npu_init.dump_config.dump_path = flags.dump_path
    npu_init.auto_tune_mode = "RL,GA"
    npu_init.dump_config.dump_mode = "everything"
    npu_device.global_options().profiling_config.enable_profiling = False
    npu_device.open().as_default()
"""


def test_scan_reports_global_options_assignments_with_their_plan(tmp_path):
    from npu_bridge_compat.plan import HostFacts
    from npu_bridge_compat.scan import Category, Outcome, Severity, scan

    path = tmp_path / "train.py"
    path.write_text(TF2_SCRIPT)
    host = HostFacts(tf_version="2.15.1", gpu_count=0)
    [script] = scan([str(path)], host=host).scripts
    options = {f.name: (f.line, f.outcome, f.severity) for f in script.findings if f.category is Category.OPTION}
    assert options["precision_mode"] == (6, Outcome.TRANSLATED, Severity.READY)  # by the table: dump_path is computed
    assert options["dump_config.enable_dump"][:2] == (7, Outcome.TRANSLATED)
    assert options["dump_config.dump_path"][:2] == (8, Outcome.TRANSLATED)  # set at run time, classified
    assert options["auto_tune_mode"] == (9, Outcome.INVALID, Severity.BLOCKED)
    assert options["dump_config.dump_mode"] == (10, Outcome.INVALID, Severity.BLOCKED)
    assert options["profiling_config.enable_profiling"][0] == 11
    assert script.status == Severity.BLOCKED
    detail = next(f.detail for f in script.findings if f.name == "dump_config.dump_mode")
    assert "'everything' not in optional list ['input', 'output', 'all']" in detail


def test_explain_takes_npu_device_names(capsys):
    from npu_bridge_compat.cli import main

    assert main(["explain", "--host", "cpu", "dump_config.enable_dump=true", "dump_config.dump_path=/tmp"]) == 0
    output = capsys.readouterr().out
    assert "NPU options from npu_device.global_options()" in output
    assert "dump_config.dump_path='/tmp'" in output and "feature TensorDump(path='/tmp'" in output
    assert main(["explain", "dump_config.enable_dmp=true"]) != 0
    assert "NpuDumpConfig has no option enable_dmp. Did you mean 'enable_dump'?" in capsys.readouterr().err


@pytest.mark.starts_processes
def test_graph_kernel_fusion_through_global_options():
    """enable_graph_kernel in npu_device's options: the program's function runs its element-wise chain as an XLA
    cluster with MatMul left out, with the unfused values, and Keras' fit reports the clusters it formed."""
    runs = {}
    for switch in ("on", "off"):
        output = _run("tf2_graph_kernel_port.py", switch)
        runs[switch] = json.loads(next(line for line in output.splitlines() if line.startswith('{"ops"')))
    assert {"_XlaCompile", "_XlaRun"} <= set(runs["on"]["ops"]) and "MatMul" in " ".join(runs["on"]["ops"])
    assert not {"_XlaCompile", "_XlaRun", "XlaLaunch"} & set(runs["off"]["ops"])
    np.testing.assert_allclose(runs["on"]["output"], runs["off"]["output"], rtol=1e-5)
    assert runs["on"]["fit_clusters"] > 0 and runs["off"]["fit_clusters"] == 0


def test_gelu_in_a_functional_model_and_loss_scaling_in_compile():
    """ops.gelu on a functional model's symbolic tensor becomes a layer (as the adapter's NpuOpLambda), and
    NpuLossScaleOptimizer (wrapped for several ranks) trains through compile / fit."""
    import tensorflow as tf

    from npu_bridge_compat.tf2.distribute import npu_distributed_keras_optimizer_wrapper
    from npu_bridge_compat.tf2.kernels import gelu
    from npu_bridge_compat.tf2.loss_scale import NpuLossScaleOptimizer

    inputs = tf.keras.Input([4])
    dense = tf.keras.layers.Dense(3)
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(1)(gelu(dense(inputs))))
    features = np.random.RandomState(0).randn(32, 4).astype(np.float32)
    hidden = dense(features).numpy()
    gelu_output = tf.keras.Model(inputs, gelu(dense(inputs)))(features).numpy()
    np.testing.assert_allclose(gelu_output, hidden / (1 + np.exp(-1.702 * hidden)), rtol=1e-5, atol=1e-6)
    optimizer = npu_distributed_keras_optimizer_wrapper(NpuLossScaleOptimizer(tf.keras.optimizers.SGD(0.05)))
    model.compile(optimizer=optimizer, loss="mse")
    history = model.fit(features, features[:, :1], batch_size=8, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert bool(optimizer.last_step_finite.numpy())


@pytest.mark.starts_processes
@pytest.mark.parametrize("keras", KERAS)
def test_a_loop_of_steps_in_one_function_runs_as_written(keras):
    """The loop the adapter would sink (NPU_LOOP_SIZE) runs its 10 steps here, converted by AutoGraph."""
    output = _run("tf2_loop_size_port.py", **keras)
    report = json.loads(next(line for line in output.splitlines() if line.startswith('{"iterations"')))
    assert report["iterations"] == 10 and report["finite"]
    expected = [1.0, 2.0]
    for _ in range(10):  # d(w0 w1)/dw0 = w1 and the reverse, learning rate 0.01
        expected = [expected[0] - 0.01 * expected[1], expected[1] - 0.01 * expected[0]]
    np.testing.assert_allclose(report["weights"], expected, rtol=1e-5)


@pytest.mark.starts_processes
def test_a_loop_of_steps_with_collectives_on_two_ranks(processes, tmp_path):
    """all_reduce and the loss-scale agreement inside a tf.range loop of one function, on 2 ranks."""
    job, output = launched(processes, tmp_path, "tf2_loop_size_port.py", NPU_BRIDGE_COMPAT_PORT=BASE_PORT + 30)
    assert job.returncode == 0, output[-3000:]
    found = [json.loads(line.split("] ", 1)[1]) for line in output.splitlines() if '] {"iterations"' in line]
    assert len(found) == 2 and found[0] == found[1] and found[0]["iterations"] == 10, output[-3000:]


@pytest.mark.starts_processes
@pytest.mark.parametrize("keras", KERAS)
def test_weight_update_grouping_on_two_ranks_trains_like_plain_data_parallel(processes, tmp_path, keras):
    """grouping_broadcast, then grouping_gradients_apply in a tf.function loop: each rank keeps optimizer state for
    its share of the variables only, and both ranks end with the weights of plain data-parallel training."""
    job, output = launched(
        processes, tmp_path, "tf2_grouping_port.py", 4, NPU_BRIDGE_COMPAT_PORT=BASE_PORT + 40, **keras
    )
    assert job.returncode == 0, output[-3000:]
    found = reports(output)
    assert sorted(found) == [0, 1], output[-3000:]
    for report in found.values():
        for grouped, plain in zip(report["grouped"], report["plain"]):
            np.testing.assert_allclose(grouped, plain, rtol=1e-5, atol=1e-6)
        assert report["optimizer_values"]["grouped"] < report["optimizer_values"]["plain"]
    for grouped_0, grouped_1 in zip(found[0]["grouped"], found[1]["grouped"]):
        np.testing.assert_array_equal(grouped_0, grouped_1)


def test_grouping_divides_the_variables_by_size_with_one_at_least_per_rank():
    import tensorflow as tf

    from npu_bridge_compat.tf2.distribute import grouping_owners

    variables = [tf.Variable(tf.zeros(shape)) for shape in ([4, 8], [8], [8, 1], [1])]  # 128, 32, 32, 4 bytes
    assert grouping_owners(variables, 1) == [0, 0, 0, 0]
    assert grouping_owners(variables, 2) == [0, 1, 1, 1]
    assert grouping_owners(variables, 4) == [0, 1, 2, 3]
    assert grouping_owners(variables[::-1], 2) == [0, 0, 0, 1]
    with pytest.raises(NpuOptionValueError, match=r"4 variable\(s\) for 5 rank\(s\)"):
        grouping_owners(variables, 5)


ADAPTER_API = {  # tf_adapter_2.x/python/npu_device/__init__.py and _api/*/__init__.py: every name they import
    "": "open npu_compat_function gen_npu_ops global_options set_npu_loop_size npu_run_context set_device_sat_mode "
    "is_inf_nan_enabled keep_dtype_scope npu_recompute_scope distribute train ops compat configs",
    "compat": "enable_v1 v1",
    "compat.v1": "SessionConfigBuilder",
    "configs": "run_context_options experimental",
    "distribute": "all_reduce broadcast npu_distributed_keras_optimizer_wrapper shard_and_rebatch_dataset "
    "grouping_gradients_apply grouping_broadcast",
    "ops": "gelu",
    "train": "optimizer",
    "train.optimizer": "NpuLossScaleOptimizer",
}


@pytest.mark.parametrize("module", sorted(ADAPTER_API))
def test_every_public_name_of_the_adapter_imports(module):
    import importlib

    served = importlib.import_module(".".join(filter(None, ["npu_bridge_compat.legacy.npu_device", module])))
    missing = [name for name in ADAPTER_API[module].split() if getattr(served, name, None) is None]
    assert not missing, f"npu_device.{module} lacks {missing}"


def test_the_keras_wrapper_patches_an_optimizer_once_through_the_registry():
    """Wrapping twice reduces once; the patch is listed in the registry and undone with it."""
    import tensorflow as tf

    from npu_bridge_compat import changes
    from npu_bridge_compat.compat.keras import tf_keras_is_keras_3
    from npu_bridge_compat.tf2.distribute import npu_distributed_keras_optimizer_wrapper

    method = "apply" if tf_keras_is_keras_3() else "apply_gradients"
    optimizer = tf.keras.optimizers.SGD(0.1)
    with changes.undone_after():
        assert npu_distributed_keras_optimizer_wrapper(optimizer) is optimizer
        patched = getattr(optimizer, method)
        assert npu_distributed_keras_optimizer_wrapper(optimizer) is optimizer and getattr(optimizer, method) is patched
        [change] = changes.in_force(owner=Owner.TF2_DISTRIBUTE)  # conftest starts each test clean
        assert change.target == f"<user's SGD>.{method}" and changes.is_replaced(optimizer, method)
        weights = tf.Variable([1.0])
        optimizer.apply_gradients([(tf.constant([2.0]), weights)])
        np.testing.assert_allclose(weights.numpy(), [0.8])
    assert method not in vars(optimizer) and not changes.in_force(owner=Owner.TF2_DISTRIBUTE)


def test_gen_npu_ops_serves_the_fused_kernels_the_ports_npu_ops_call():
    """The ports' npu_ops.py copies call these by their generated names (BertLarge's LAMB, BERT's Adam, LARS)."""
    from npu_bridge_compat.fused import nn, optimizers
    from npu_bridge_compat.legacy.npu_device import gen_npu_ops

    assert gen_npu_ops.lamb_apply_optimizer_assign is optimizers.lamb_apply_optimizer_assign
    assert gen_npu_ops.lamb_apply_weight_assign is optimizers.lamb_apply_weight_assign
    assert gen_npu_ops.adam_apply_one_assign is optimizers.adam_apply_one_assign
    assert gen_npu_ops.adam_apply_one_with_decay_assign is optimizers.adam_apply_one_with_decay_assign
    assert gen_npu_ops.lars_v2 is optimizers.LARSV2 and gen_npu_ops.drop_out_gen_mask_v3 is nn.drop_out_gen_mask_v3


# --- Keras calls under the door: the program's loop, decisions kept, a clean exit --------------------------------


@pytest.mark.starts_processes
@pytest.mark.parametrize("keras", KERAS)
def test_the_programs_steps_per_execution_is_the_loop_and_the_process_exits_cleanly(keras):
    """As BERT's run_classifier.py: options set, the device opened, compile(steps_per_execution=N)."""
    result = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "run", str(SCRIPTS / "tf2_steps_per_execution_port.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**ENVIRONMENT, **keras},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(next(line for line in result.stdout.splitlines() if line.startswith('{"calls_per_epoch"')))
    assert report["calls_per_epoch"] == [3, 3]  # 12 steps per epoch, 4 per train-function call
    assert report["optimizer_steps"] == 24
    assert report["losses"][-1] < report["losses"][0]
    assert np.isfinite(report.get("auto_loss", 0.0))
    assert "Exception ignored" not in result.stderr and "Traceback" not in result.stderr, result.stderr[-3000:]


@pytest.fixture
def opened(monkeypatch, assume_host, fresh_state):
    """npu_device opened in this process with allow_mix_precision, on a CPU where each function's runs decide."""
    from npu_bridge_compat.tf2 import device

    assume_host(cpu_bfloat16=Support.NATIVE, reduced_precision="auto")
    fresh_state(device.PROGRAM_OPTIONS)
    device.global_options().precision_mode = "allow_mix_precision"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NpuCompatWarning)  # opened after TensorFlow started: no device settings
        return device.open().as_default()


def test_the_doors_keras_calls_keep_their_decisions_across_fits_and_free_them_with_the_model(opened, single_call_runs):
    from test_keras import fit_until_decided, model, precision_trials_of

    net = model()
    assert fit_until_decided(net, lambda: None, 3) == [1, 1, 1]  # the door adds its own callback to each call
    assert precision_trials_of(net) == 1
    net.compile(tf.keras.optimizers.SGD(0.05), "mse")
    assert fit_until_decided(net, lambda: None, 1) == [1]
    assert precision_trials_of(net) == 2
    freed, key = weakref.ref(net), id(net)
    del net
    gc.collect()
    assert freed() is None and key not in changes.state(keras_calls.KEPT_FUNCTIONS)


def test_an_npu_callback_inside_the_door_runs_its_plan_once(opened, single_call_runs, monkeypatch):
    from test_keras import fit_until_decided, model

    begun = []
    begin = keras_calls.PlanCallback.on_train_begin
    monkeypatch.setattr(
        keras_calls.PlanCallback,
        "on_train_begin",
        lambda self, logs=None: begun.append(type(self)) or begin(self, logs),
    )
    net = model()
    assert fit_until_decided(net, lambda: NPUCallback(precision_mode="allow_mix_precision"), 2) == [1, 1]
    assert begun == [NPUCallback, NPUCallback]  # the door adds no callback of its own beside it


# A ModelZoo-TensorFlow checkout named by NPU_BRIDGE_COMPAT_MODELZOO (none in CI: the test skips).
MODELZOO_ALBERT = (
    Path(os.environ.get("NPU_BRIDGE_COMPAT_MODELZOO", "/nonexistent"))
    / "TensorFlow2/built-in/nlp/albert-FineTune_Series_for_TensorFlow2.X"
)


def write_classifier_records(folder: Path, sequence: int = 16, vocabulary: int = 64) -> None:
    """GLUE-style classifier records as BERT's input pipeline reads them, the meta data and a tiny ALBERT."""
    import tensorflow as tf

    random = np.random.RandomState(0)
    for name, count in (("train", 64), ("eval", 32)):
        with tf.io.TFRecordWriter(str(folder / f"{name}.tf_record")) as writer:
            for _ in range(count):
                ids = random.randint(1, vocabulary, sequence)
                feature = {
                    "input_ids": ids,
                    "input_mask": [1] * sequence,
                    "segment_ids": [0] * sequence,
                    "label_ids": [int(ids[0] % 3)],
                }
                example = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            key: tf.train.Feature(int64_list=tf.train.Int64List(value=value))
                            for key, value in feature.items()
                        }
                    )
                )
                writer.write(example.SerializeToString())
    meta = {"max_seq_length": sequence, "num_labels": 3, "train_data_size": 64, "eval_data_size": 32}
    (folder / "meta_data").write_text(json.dumps(meta))
    config = {
        "vocab_size": vocabulary,
        "embedding_size": 16,
        "hidden_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "hidden_act": "gelu",
        "max_position_embeddings": 64,
        "type_vocab_size": 2,
    }
    (folder / "albert_config.json").write_text(json.dumps(config))


@pytest.mark.starts_processes
@pytest.mark.skipif(not MODELZOO_ALBERT.is_dir(), reason="no ModelZoo-TensorFlow checkout")
def test_modelzoos_albert_run_classifier_trains_with_its_steps_per_loop(tmp_path):
    """ModelZoo's own ALBERT fine-tuning script (npu_device options, compile(steps_per_execution=steps_per_loop)),
    unmodified from a copy, on synthetic records: 8 steps, 2 per train-function call."""
    missing = [name for name in ("gin", "tensorflow_hub", "tensorflow_addons") if not importlib.util.find_spec(name)]
    if missing:
        pytest.skip(f"the script's own dependencies are not installed: {', '.join(missing)}")
    folder = tmp_path / "albert"
    shutil.copytree(MODELZOO_ALBERT, folder)
    write_classifier_records(tmp_path)
    arguments = [
        "--mode=train_and_eval",
        f"--input_meta_data_path={tmp_path / 'meta_data'}",
        f"--train_data_path={tmp_path / 'train.tf_record'}",
        f"--eval_data_path={tmp_path / 'eval.tf_record'}",
        f"--bert_config_file={tmp_path / 'albert_config.json'}",
        "--train_batch_size=8",
        "--eval_batch_size=4",
        "--steps_per_loop=2",
        "--log_steps=1",
        "--num_train_epochs=1",
        f"--model_dir={tmp_path / 'model'}",
        "--distribution_strategy=one_device",
        "--precision_mode=allow_mix_precision",
    ]
    result = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "run", "official/nlp/albert/run_classifier.py", *arguments],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=folder,
        env={**ENVIRONMENT, "PYTHONPATH": f"{folder}{os.pathsep}{ENVIRONMENT['PYTHONPATH']}"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    logged = re.findall(r"between steps (\d+) and (\d+)", result.stdout)
    assert logged == [("0", "2"), ("2", "4"), ("4", "6"), ("6", "8")]  # one line per call of 2 steps
    assert "Exception ignored" not in result.stderr
