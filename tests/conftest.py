import dataclasses
import os
import signal
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Reduced precision runs as planned, not as the first runs' times decide (NPU_BRIDGE_COMPAT_REDUCED_PRECISION=on):
# a test's outcome must not depend on timing. The tests of that choice give `auto` in host facts; measurements
# kept across processes go to a folder of the suite's own.
os.environ.setdefault("NPU_BRIDGE_COMPAT_REDUCED_PRECISION", "on")
os.environ.setdefault("NPU_BRIDGE_COMPAT_CACHE_DIR", tempfile.mkdtemp(prefix="npu_bridge_compat_cache_"))

import pytest  # noqa: E402

from npu_bridge_compat import changes, compat, estimator_library  # noqa: E402
from npu_bridge_compat.compat.xla import reserve_fusion_flags  # noqa: E402
from npu_bridge_compat.plan import HostFacts, detect_host, host_plan  # noqa: E402
from npu_bridge_compat.plan.platform import Support  # noqa: E402
from npu_bridge_compat.runtime.timed_trial import TimedTrial  # noqa: E402

# Graph-kernel tests fuse in this process, whose TensorFlow reads XLA's flags once: the suite asks for them first,
# as `run` does for a script.
reserve_fusion_flags()

# Tests that only make sense on one TensorFlow line: marker -> (whether this line has it, why others skip).
LINE_MARKERS = {
    "needs_estimator": (
        lambda: estimator_library.estimator_api() is not None,
        "need tf.estimator: tensorflow-estimator 2.15 (the cpu and gpu extras install it), served from TensorFlow 2.16",
    ),
    "without_estimator": (
        lambda: estimator_library.estimator_api() is None,
        "check the Estimator door's error where tensorflow-estimator is not installed",
    ),
    "serves_estimator": (
        lambda: estimator_library.library_is_served() and estimator_library.estimator_api() is not None,
        "check tensorflow-estimator 2.15 served on TensorFlow 2.16 and later, which lack tf.estimator",
    ),
    "needs_keras_2": (
        lambda: not compat.tf_keras_is_keras_3(),
        "need tf.keras to be Keras 2 (TF_USE_LEGACY_KERAS=1 from TensorFlow 2.16)",
    ),
    "needs_keras_3": (lambda: compat.tf_keras_is_keras_3(), "check Keras 3 (tf.keras from TensorFlow 2.16)"),
}


STARTS_PROCESSES = "starts_processes"
# The audit events of a new program (PEP 578); `fork` alone is not one: TensorFlow's own forks are not programs.
_PROGRAM_EVENTS = ("subprocess.Popen", "os.system", "os.posix_spawn", "os.exec")
# Programs that start a Python (TensorFlow, a rank, `run`) rather than a tool a library asks something of.
_PROGRAM_NAMES = ("python", "bash", "sh", "unshare", "npu-bridge-compat")
_programs_started: list[str] = []


def _count_program_starts(event: str, arguments: tuple) -> None:
    if event in _PROGRAM_EVENTS and arguments:
        program = os.path.basename(os.fsdecode(arguments[0])) if arguments[0] else ""
        if event == "os.system" or program.startswith(_PROGRAM_NAMES) or program == os.path.basename(sys.executable):
            _programs_started.append(program)


def pytest_configure(config) -> None:
    for marker, (_, reason) in LINE_MARKERS.items():
        config.addinivalue_line("markers", f"{marker}: runs only where the line has it; elsewhere the tests {reason}")
    config.addinivalue_line(
        "markers",
        f"{STARTS_PROCESSES}: starts Python processes (scripts, ranks, `run`): the slow part of the suite; "
        f"`-m 'not {STARTS_PROCESSES}'` leaves them out of a quick run (CI runs every test)",
    )
    sys.addaudithook(_count_program_starts)  # an audit hook stays for the process: it only counts


def pytest_collection_modifyitems(config, items) -> None:
    for marker, (present, reason) in LINE_MARKERS.items():
        marked = [item for item in items if item.get_closest_marker(marker)]
        if marked and not present():
            for item in marked:
                item.add_marker(pytest.mark.skip(reason=f"TensorFlow {compat.tensorflow_version()}: tests {reason}"))


def pytest_terminal_summary(terminalreporter) -> None:
    """The host facts the suite ran with, then how many tests this line skipped, and why (the line's skips, not
    other skips)."""
    host = detect_host()
    terminalreporter.write_line(
        f"host: {host.describe()}, {os.cpu_count()} cores, {host.cpu_description}; tests of other kinds of host "
        "plan with the facts given as data"
    )
    reasons = [
        report.longrepr[2] for report in terminalreporter.stats.get("skipped", []) if isinstance(report.longrepr, tuple)
    ]
    for _, reason in LINE_MARKERS.values():
        count = sum(reason in text for text in reasons)
        if count:
            terminalreporter.write_line(
                f"{count} test{'s' * (count != 1)} skipped on TensorFlow {compat.tensorflow_version()}: {reason}"
            )


@pytest.fixture(autouse=True)
def marked_if_it_starts_processes(request):
    """A test that starts a Python, a shell or a rank carries the starts_processes marker, so that a quick run
    can leave the slow part out: one that does not is an error naming the programs it started."""
    before = len(_programs_started)
    yield
    started = _programs_started[before:]
    if started and request.node.get_closest_marker(STARTS_PROCESSES) is None:
        pytest.fail(
            f"{request.node.nodeid} started {', '.join(sorted(set(started)))} without the {STARTS_PROCESSES} "
            f"marker: add @pytest.mark.{STARTS_PROCESSES} (or the module's pytestmark)"
        )


@pytest.fixture(autouse=True)
def clean_process():
    """Each test starts clean: whatever the package changed in TensorFlow, Keras, user objects or the process
    during the test is undone when it ends (npu_bridge_compat.changes)."""
    with changes.undone_after():
        yield


@pytest.fixture
def cpu_host() -> HostFacts:
    return HostFacts(tf_version="2.15.1", gpu_count=0)


@pytest.fixture
def gpu_host() -> HostFacts:
    return HostFacts(tf_version="2.15.1", gpu_count=1)


@pytest.fixture
def assume_host(monkeypatch):
    """Plan every door's configuration as on a host with other facts (this host's, with some changed), so that
    what depends on the host is tested both ways on any machine. Planning only: kernels still run on this CPU."""

    def assume(**facts) -> HostFacts:
        host = dataclasses.replace(detect_host(), **facts)
        monkeypatch.setattr(host_plan, "detect_host", lambda: host)
        return host

    return assume


@pytest.fixture
def fresh_state():
    """`fresh_state(*keys)`: parts of the package as in a process that has not used them yet; the ProcessState
    keys given are forgotten now and again when the test ends, so the state a test made does not reach the next."""
    forgotten = []

    def forget(*keys: changes.ProcessState) -> None:
        forgotten.extend(keys)
        changes.forget_state(*keys)

    yield forget
    if forgotten:
        changes.forget_state(*forgotten)


@pytest.fixture
def single_call_runs(monkeypatch) -> None:
    """Timed trials time each call as a run of its own: a tiny test model's step lasts far less than
    TimedTrial.RUN_SECONDS, and its trials end within a few calls then, as a real model's do (the grouping has tests
    of its own)."""
    monkeypatch.setattr(TimedTrial, "RUN_SECONDS", 0.0)


@pytest.fixture
def avx512_host(assume_host) -> HostFacts:
    """Doors plan as on a CPU with native bfloat16, reduced precision kept: mixed precision is grappler's oneDNN
    bfloat16 pass in every run."""
    return assume_host(cpu_bfloat16=Support.NATIVE, reduced_precision="on")


@pytest.fixture
def processes():
    """Processes a test starts; each is killed with its process group when the test ends."""
    started: list[subprocess.Popen] = []
    yield started
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
