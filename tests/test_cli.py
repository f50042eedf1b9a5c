"""`python -m npu_bridge_compat explain` on the configurations of the seed documents, and its errors."""

import json
import subprocess
import sys

import pytest
from google.protobuf import text_format
from helpers import npu_config
from test_grammars import SEED_004_MIXLIST

from npu_bridge_compat.cli import main, markdown_table


def explain(capsys, *arguments):
    code = main(["explain", *arguments])
    out, err = capsys.readouterr()
    return code, out, err


def write_config(tmp_path, config) -> str:
    path = tmp_path / "config.pbtxt"
    path.write_text(text_format.MessageToString(config))
    return str(path)


def section(report: str, name: str) -> str:
    """The lines of one section of a printed report."""
    lines = report.splitlines()
    start = lines.index(f"  {name}:") + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("    ")), len(lines))
    return "\n".join(lines[start:end])


def test_seed_000_mixed_compute_with_a_host_region(capsys, tmp_path):
    in_nodes = ["_arg_tf_image_string_0_0", "strided_slice_1/stack", "strided_slice_1/stack_1", "Const"]
    out_nodes = ["strided_slice_2", "strided_slice_3", "strided_slice_4"]
    config = npu_config(
        {
            "use_off_line": True,
            "mix_compile_mode": True,
            "in_out_pair_flag": False,
            "in_out_pair": str([[in_nodes, out_nodes]]),
        }
    )
    config.graph_options.rewrite_options.remapping = 2
    code, out, err = explain(capsys, "--config", write_config(tmp_path, config))
    assert code == 0, err
    assert "mix_compile_mode=True" in section(out, "translated")
    assert "are kept on the host CPU" in section(out, "approximated")
    assert "use_off_line=True" in section(out, "not needed on a host")
    assert "feature BatchNormWorkaround()" in out and "on_host=True" in out


def test_seed_002_estimator_mixed_compute_configuration(capsys):
    code, out, _ = explain(capsys, "mix_compile_mode=true", "iterations_per_loop=1")
    assert code == 0
    assert "iterations_per_loop=1" in section(out, "translated")


def test_seed_002_mixed_compute_with_iterations_is_refused(capsys):
    code, out, err = explain(capsys, "mix_compile_mode=true", "iterations_per_loop=10")
    assert code == 2 and out == ""
    assert err.strip() == (
        'error: "iterations_per_loop" must be 1 with "mix_compile_mode" is True (got iterations_per_loop=10). In '
        "mixed compute some ops run on the host between device steps, so a session run cannot loop on the device."
    )


def test_seed_001_dump_and_profiling_examples(capsys, tmp_path):
    profiling = {
        "output": str(tmp_path / "profiling"),
        "training_trace": "on",
        "fp_point": "resnet_model/conv2d/Conv2Dresnet_model/batch_normalization/FusedBatchNormV3_Reduce",
        "bp_point": "gradients/AddN_70",
    }
    config = npu_config(
        {
            "enable_dump": True,
            "dump_path": str(tmp_path),
            "dump_step": "0|5|10",
            "dump_mode": "all",
            "profiling_mode": True,
            "profiling_options": json.dumps(profiling),
            "precision_mode": "allow_mix_precision",
            "variable_format_optimize": True,
        }
    )
    code, out, err = explain(capsys, "--config", write_config(tmp_path, config), "--host", "cpu-native-bfloat16")
    assert code == 0, err
    translated = section(out, "translated")
    assert f"op all tensors of steps 0|5|10 written as .npy files with an index under {tmp_path}" in translated
    assert f"TensorFlow profiler trace of the training steps under {tmp_path}/profiling" in translated
    assert "Ascend collection switches bp_point, fp_point, training_trace have no host counterpart" in translated
    assert "bfloat16 instead of float16" in section(out, "approximated")
    assert f"TensorDump(path='{tmp_path}', steps=((0, 0), (5, 5), (10, 10)), mode='all'" in out
    # Without AVX-512 the same configuration trains in float32, and says why.
    code, out, err = explain(capsys, "--config", write_config(tmp_path, config), "--host", "cpu-without-avx512")
    assert code == 0, err
    assert "precision_mode='allow_mix_precision'  this CPU has no AVX-512" in section(out, "no host equivalent")
    assert "auto_mixed_precision" not in out


def test_seed_004_mixlist_on_a_gpu_host(capsys, tmp_path):
    path = tmp_path / "ops_info.json"
    path.write_text(SEED_004_MIXLIST, encoding="utf-8")
    code, out, err = explain(capsys, "precision_mode_v2=mixed_float16", f"modify_mixlist={path}", "--host", "gpu")
    assert code == 0, err
    assert "grappler auto_mixed_precision lists: DENYLIST_REMOVE=Xlog1py,BiasAdd" in section(out, "translated")
    assert "environment TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_DENYLIST_ADD=Acosh,Asinh,Inv" in out
    assert "ResourceApplyProximalGradientDescent,MatMul,Cast" in out  # the NPU's black list, then the file's
    assert "mixed-precision lists in force (grappler auto_mixed_precision): deny (float32): " in out
    assert "ConfigProto graph_options.rewrite_options.auto_mixed_precision = ON" in out


def test_unknown_key_is_warned_about_and_the_rest_explained(capsys):
    code, out, err = explain(capsys, "sump_mode=all", "deterministic=1")
    assert code == 0
    assert "warning: Unknown NPU option 'sump_mode'" in err and "Did you mean 'dump_mode'?" in err
    assert "deterministic=1" in out


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["iterations_per_loop=ten"], 'error: NPU option "iterations_per_loop" takes an integer'),
        (["mix_compile_mode=yes"], 'error: NPU option "mix_compile_mode" takes true or false'),
        (["precision_mode"], "error: expected key=value"),
        (["--config", "/nonexistent.pbtxt"], "error: cannot read /nonexistent.pbtxt"),
    ],
)
def test_bad_command_lines_exit_2(capsys, arguments, message):
    code, _, err = explain(capsys, *arguments)
    assert code == 2 and message in err


def test_bad_config_file_exits_2(capsys, tmp_path):
    path = tmp_path / "bad.pbtxt"
    path.write_text("graph_options { nonsense: 1 }")
    code, _, err = explain(capsys, "--config", str(path))
    assert code == 2 and "is not a ConfigProto in text format" in err


def test_config_and_assignments_combine(capsys, tmp_path):
    path = write_config(tmp_path, npu_config({"mix_compile_mode": True}))
    code, _, err = explain(capsys, "--config", path, "iterations_per_loop=4")
    assert code == 2 and '"iterations_per_loop" must be 1' in err


def test_options_prints_the_table(capsys):
    assert main(["options"]) == 0
    assert capsys.readouterr().out.strip() == markdown_table()


@pytest.mark.starts_processes
def test_module_entry_point_runs():
    result = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "explain", "graph_run_mode=2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert 'NPU option "graph_run_mode" (the command line) has an invalid value 2' in result.stderr


def test_config_file_and_command_line_are_validated_together(capsys, tmp_path):
    path = write_config(tmp_path, npu_config({"in_out_pair": "[[['a'], ['b']]]", "in_out_pair_flag": False}))
    code, out, err = explain(capsys, "--config", path, "mix_compile_mode=true")
    assert code == 0, err
    assert "in_out_pair=" in section(out, "approximated")


def test_explain_worlds_lists_every_world_of_the_one_list_in_the_order_run_serves_them(capsys):
    from npu_bridge_compat.legacy.runs import WORLDS

    code, out, err = explain(capsys, "--worlds")
    lines = out.splitlines()
    assert code == 0 and err == ""
    assert [line.split()[0] for line in lines[1:]] == [world.name for world in WORLDS]
    assert lines[1].startswith("  adapter (Ascend's TF Adapter; run --tf1, run --tf2): npu_bridge.*")
    assert "tf1 (TF 1.15; run --tf1)" in lines[2] and "tf26 (TF 2.6; run --tf2)" in lines[4]
