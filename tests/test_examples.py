"""The examples README points to run and say what they should."""

import subprocess
import sys
from pathlib import Path

import pytest

from npu_bridge_compat.plan import detect_host
from npu_bridge_compat.plan.platform import BFLOAT16_KERNELS

pytestmark = pytest.mark.starts_processes

ROOT = Path(__file__).parent.parent


def run(script: str, *arguments: str) -> str:
    result = subprocess.run(
        [sys.executable, str(ROOT / script), *arguments], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.mark.needs_estimator
def test_estimator_example_trains_and_reports_throughput(tmp_path):
    out = run(
        "examples/estimator/train.py",
        "--max_steps=40",
        "--iterations_per_loop=10",
        f"--model_dir={tmp_path}",
        "--precision_mode=allow_mix_precision",
    )
    assert "trained to step 40, eval loss" in out and "steps/s" in out


def test_explain_example_prints_report_and_host_config():
    out = run("examples/explain_ported_config.py")
    # The example plans for this host: its allow_mix_precision becomes bfloat16 only where the CPU has AVX-512.
    assert "mix_compile_mode=True" in out
    assert ("auto_mixed_precision" in out) == (detect_host().cpu_bfloat16 in BFLOAT16_KERNELS)
    assert "NpuOptimizer" not in out.split("ConfigProto handed to TensorFlow:")[1]


def test_session_examples_train():
    mixed = run("examples/session/mixed_compute.py")
    assert "batch-norm ops in the graph: FusedBatchNorm, FusedBatchNormGrad" in mixed and "step 100," in mixed
    looped = run("examples/session/iterations_per_loop.py")
    assert "step 500," in looped  # 50 runs of 10 iterations


def test_keras_example_trains():
    out = run("examples/keras/train.py", "--epochs=1")
    assert "trained 100 steps" in out and "steps/s" in out


def test_tf2_example_runs_unchanged_under_run():
    result = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "run", "examples/tf2/train.py", "--epochs=2"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    losses = [float(line.split("loss ")[1].split(",")[0]) for line in result.stdout.splitlines() if " epoch " in line]
    assert len(losses) == 2 and losses[1] < losses[0]
    assert "steps/s" in result.stdout and "NPU options from npu_device.global_options()" in result.stderr
