"""The first run reads well: the translation report once as a block, the training progress, no doubled messages,
and library deprecation notices only on request (the main example and `run`)."""

import collections
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from npu_bridge_compat.logs import REPORT_TITLE
from npu_bridge_compat.plan import Report, log_once

ROOT = Path(__file__).parent.parent
# a logging prefix: absl's "I1123 09:17:32.990802 139959529008000 file.py:30] " or TensorFlow's "INFO:tensorflow:"
LOG_PREFIX = re.compile(r"^([IWEF]\d{4} [\d:.]+ +\d+ [\w.]+:\d+\] |(INFO|WARNING|ERROR):tensorflow:)")
PYTHON_WARNING = re.compile(r"^\S+\.py:\d+: \w+: ")


def output(*command: str, env: dict | None = None) -> str:
    """stdout and stderr of a command, interleaved as a terminal shows them."""
    result = subprocess.run(
        [sys.executable, *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})},
    )
    assert result.returncode == 0, result.stdout[-3000:]
    return result.stdout


# TensorFlow 2.16 and later: its C++ libraries each print their start-up lines before any logging is set up
# ("All log messages before absl::InitializeLog() is called are written to STDERR"), whatever Python does.
NATIVE_START_UP = re.compile(r"^([IWEF]0000 00:00:|WARNING: All log messages before absl::InitializeLog\(\) is called)")


def doubled_messages(text: str) -> list[str]:
    """Log records and warnings that appear more than once (prefixes stripped: TensorFlow's handler and absl's
    print the same record with different prefixes)."""
    messages = [
        LOG_PREFIX.sub("", line)
        for line in text.splitlines()
        if (LOG_PREFIX.match(line) or PYTHON_WARNING.match(line)) and not NATIVE_START_UP.match(line)
    ]
    return [message for message, count in collections.Counter(messages).items() if count > 1]


MAIN_EXAMPLE = ("-m", "npu_bridge_compat", "run", "--tf1", "examples/ported/train.py")


@pytest.mark.starts_processes
def test_main_example_shows_the_report_once_then_the_training_progress():
    text = output(*MAIN_EXAMPLE, "--steps=200")
    assert text.count("NPU options from Session config") == 1 and text.count(REPORT_TITLE) == 1
    lines = [line for line in text.splitlines() if not NATIVE_START_UP.match(line)]
    report = lines.index(next(line for line in lines if line.startswith("NPU options from Session config")))
    assert lines[report + 1 : report + 3] == [
        "  translated:",
        "    iterations_per_loop=10  10 training steps per session run in NPUEstimator, "
        "util.set_iteration_per_loop and NPUCallback; global_step grows by that much per run",
    ]
    progress = [line.split(":")[0] for line in lines if line.startswith("step ")]
    assert progress == ["step 100", "step 200"] and lines[-1].startswith("trained to step 200, loss ")
    assert lines.index(next(line for line in lines if line.startswith("step "))) > report
    assert "deprecated" not in text and doubled_messages(text) == []
    assert len(lines) < 16, text


@pytest.mark.starts_processes
def test_main_example_with_python_warnings_prints_each_notice_once():
    text = output(*MAIN_EXAMPLE, "--steps=20", env={"PYTHONWARNINGS": "default"})
    assert text.count("is deprecated and will be removed") >= 3  # TensorFlow's notices are back ...
    assert doubled_messages(text) == []  # ... once each, although absl's app.run configured the root logger
    assert text.count("NPU options from Session config") == 1


@pytest.mark.starts_processes
@pytest.mark.needs_estimator
def test_estimator_example_shows_the_report_once_then_the_training_progress(tmp_path):
    text = output("examples/estimator/train.py", "--max_steps=200", f"--model_dir={tmp_path}")
    assert text.count("NPU options from NPURunConfig") == 1 and text.count(REPORT_TITLE) == 1
    progress = [line.split(":")[0] for line in text.splitlines() if line.startswith("step ")]
    assert progress == ["step 100", "step 200"]
    assert "is deprecated" not in text and doubled_messages(text) == []


@pytest.mark.starts_processes
def test_run_shows_the_report_once_and_no_deprecation_flood():
    text = output("-m", "npu_bridge_compat", "run", "tests/scripts/session_port.py")  # decided: a TF 1.15 program
    assert text.count("NPU options from Session config") == 1  # printed as a block: the script set up no logging
    assert "global_step 20" in text and "deprecated" not in text and doubled_messages(text) == []


@pytest.mark.starts_processes
def test_run_show_deprecations_brings_the_notices_back_once_each():
    text = output("-m", "npu_bridge_compat", "run", "--show-deprecations", "tests/scripts/session_port.py")
    assert "`tf.layers.dense` is deprecated" in text and "Variable.load (from tensorflow" in text
    assert doubled_messages(text) == [] and text.count("NPU options from Session config") == 1


def report_for(source: str) -> Report:
    return Report(source=source, host="TensorFlow 2.15.1, CPU only", entries=())


def test_the_report_is_one_absl_record_for_tools(caplog, capsys):
    with caplog.at_level(logging.INFO, logger="absl"):
        assert log_once(report_for("a tool's configuration"))
    [record] = [r for r in caplog.records if REPORT_TITLE in r.getMessage()]
    assert record.name == "absl" and "NPU options from a tool's configuration" in record.getMessage()
    assert capsys.readouterr().err == ""  # logging shows it: not printed a second time


def test_the_report_is_printed_where_logging_would_not_show_it(caplog, capsys):
    with caplog.at_level(logging.WARNING, logger="absl"):
        assert log_once(report_for("an unconfigured script"))
    assert capsys.readouterr().err == str(report_for("an unconfigured script")) + "\n"
