import os
import signal
import subprocess

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

from npu_bridge_compat import compat  # noqa: E402
from npu_bridge_compat.plan import HostFacts  # noqa: E402

# Tests that only make sense on one TensorFlow line: marker -> (whether this line has it, why others skip).
LINE_MARKERS = {
    "needs_estimator": (
        lambda: compat.estimator_api() is not None,
        "need tf.estimator, which TensorFlow removed in 2.16",
    ),
    "without_estimator": (
        lambda: compat.estimator_api() is None,
        "check the Estimator door's error where tf.estimator is gone (TensorFlow 2.16 and later)",
    ),
    "needs_keras_2": (
        lambda: not compat.tf_keras_is_keras_3(),
        "need tf.keras to be Keras 2 (TF_USE_LEGACY_KERAS=1 from TensorFlow 2.16)",
    ),
    "needs_keras_3": (lambda: compat.tf_keras_is_keras_3(), "check Keras 3 (tf.keras from TensorFlow 2.16)"),
}


def pytest_configure(config) -> None:
    for marker, (_, reason) in LINE_MARKERS.items():
        config.addinivalue_line("markers", f"{marker}: runs only where the line has it; elsewhere the tests {reason}")


def pytest_collection_modifyitems(config, items) -> None:
    for marker, (present, reason) in LINE_MARKERS.items():
        marked = [item for item in items if item.get_closest_marker(marker)]
        if marked and not present():
            for item in marked:
                item.add_marker(pytest.mark.skip(reason=f"TensorFlow {compat.tensorflow_version()}: tests {reason}"))


def pytest_terminal_summary(terminalreporter) -> None:
    """How many tests this line skipped, and why (the line's skips, not other skips)."""
    reasons = [
        report.longrepr[2] for report in terminalreporter.stats.get("skipped", []) if isinstance(report.longrepr, tuple)
    ]
    for _, reason in LINE_MARKERS.values():
        count = sum(reason in text for text in reasons)
        if count:
            terminalreporter.write_line(
                f"{count} test{'s' * (count != 1)} skipped on TensorFlow {compat.tensorflow_version()}: {reason}"
            )


@pytest.fixture
def cpu_host() -> HostFacts:
    return HostFacts(tf_version="2.15.1", gpu_count=0)


@pytest.fixture
def gpu_host() -> HostFacts:
    return HostFacts(tf_version="2.15.1", gpu_count=1)


@pytest.fixture
def processes():
    """Processes a test starts; each is killed with its process group when the test ends."""
    started: list[subprocess.Popen] = []
    yield started
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
