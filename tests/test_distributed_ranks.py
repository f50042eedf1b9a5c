"""Several ranks for real: 2 and 3 processes on 127.0.0.1, through the three doors, started by `launch` and by a
per-rank shell loop with a rank table; a rank killed mid-training. Every process is started in its own process
group and killed at the end of its test, whatever happens; every wait has a hard timeout.

Each process imports TensorFlow, so each test launches its processes once and checks much per launch. A test's
rank outputs go to a folder named at its start (`rank_logs`), kept when the test fails."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from helpers import loopback_port_block
from test_distributed import LOOPBACK_PREFIXES, listening_addresses, tcp_sockets

from npu_bridge_compat.distributed.schedulers import _PRESENCE as _SCHEDULERS_PRESENT
from npu_bridge_compat.plan.platform import BFLOAT16_KERNELS, detect_host

HERE = Path(__file__).parent
SCRIPTS = HERE / "scripts"
sys.path.insert(0, str(SCRIPTS))
import dist_model  # noqa: E402

pytestmark = pytest.mark.starts_processes

ENVIRONMENT = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]),
    "TF_CPP_MIN_LOG_LEVEL": "2",
}
for _name in (
    "RANK_ID",
    "RANK_SIZE",
    "RANK_TABLE_FILE",
    "DEVICE_ID",
    "ASCEND_DEVICE_ID",
    "CM_CHIEF_IP",
    "CM_WORKER_SIZE",
    "NPU_BRIDGE_COMPAT_PORT",
    *(name for names in _SCHEDULERS_PRESENT.values() for name in names),  # a scheduler's job around the suite
):
    ENVIRONMENT.pop(_name, None)
TIMEOUT_S = 400
KEPT_LOGS = Path(tempfile.gettempdir()) / "npu_bridge_compat_rank_logs"


def kept_when_failing(request) -> Iterator[Path]:
    """A folder for a test's rank outputs, kept when the test fails: its captured output names it, so a rare
    failure can be read afterwards."""
    KEPT_LOGS.mkdir(exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=re.sub(r"[^\w.-]+", "_", request.node.name) + "-", dir=KEPT_LOGS))
    print(f"rank outputs of {request.node.nodeid}: {folder} (kept when the test fails)")
    failed_before = request.session.testsfailed
    yield folder
    if request.session.testsfailed == failed_before:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def rank_logs(request) -> Iterator[Path]:
    yield from kept_when_failing(request)


def start(processes, command, log: Path, **environment) -> subprocess.Popen:
    with open(log, "w") as output:
        process = subprocess.Popen(
            command,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**ENVIRONMENT, **{k: str(v) for k, v in environment.items()}},
        )
    processes.append(process)
    return process


def finish(process: subprocess.Popen, log: Path, timeout: float = TIMEOUT_S) -> str:
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise AssertionError(f"still running after {timeout} s:\n{log.read_text()[-4000:]}") from None
    return log.read_text()


def launched(
    processes,
    rank_logs,
    script: str,
    *arguments,
    ranks: int = 2,
    tf1: bool = False,
    timeout: float = TIMEOUT_S,
    **environment,
) -> tuple[subprocess.Popen, str]:
    """Run tests/scripts/SCRIPT under `launch -n RANKS --tf1` (else `--tf2`: the scripts that import npu_bridge
    but are written as TF2 programs, which launch alone would run as TF 1.15 ones); the job and its output once it
    ended."""
    log = rank_logs / f"launch_{ranks}.log"
    command = [sys.executable, "-m", "npu_bridge_compat", "launch", "-n", str(ranks), "--tf1" if tf1 else "--tf2"]
    job = start(processes, [*command, str(SCRIPTS / script), *map(str, arguments)], log, **environment)
    return job, finish(job, log, timeout)


def reports(output: str) -> dict[int, dict]:
    """The JSON lines the scripts print, by rank (merged when a rank prints several)."""
    found: dict[int, dict] = {}
    for line in output.splitlines():
        text = line.split("] ", 1)[1] if line.startswith("[rank ") else line
        if text.startswith('{"rank"'):
            report = json.loads(text)
            found.setdefault(report["rank"], {}).update(report)
    return found


def final_weights(report: dict) -> list:
    final = report["final"]
    return list(final.values()) if isinstance(final, dict) else final  # by name (TF1 scripts) or in order (Keras)


def assert_trained_like_one_process(found: dict[int, dict], steps: int, initial=None) -> None:
    """Every rank's weights equal, and equal to one process trained on the concatenated batches."""
    expected = list(dist_model.reference(steps, len(found), initial).values())
    for rank, report in found.items():
        for got, want, first in zip(final_weights(report), expected, final_weights(found[0])):
            np.testing.assert_array_equal(got, first, err_msg=f"rank {rank} differs from rank 0")
            np.testing.assert_allclose(got, want, atol=1e-5, err_msg=f"rank {rank} differs from one process")


def test_session_door_three_ranks_under_launch(processes, rank_logs):
    launch, output = launched(processes, rank_logs, "dist_session_port.py", rank_logs / "model", ranks=3, tf1=True)
    assert launch.returncode == 0, output[-4000:]
    found = reports(output)
    assert sorted(found) == [0, 1, 2]
    for rank, report in found.items():
        got = report["collectives"]
        assert got["sum"] == [6.0, 60.0] and got["max"] == [3.0, 30.0] and got["min"] == [1.0, 10.0]
        assert got["prod"] == [6.0, 6000.0] and got["reduce"] == [6.0, 60.0] and got["int_sum"] == [3]
        assert got["allgather"] == [1.0, 10.0, 2.0, 20.0, 3.0, 30.0] and got["broadcast"] == [2.0, 20.0]
        assert got["reduce_scatter"] == [[6.0 * (2 * rank)], [6.0 * (2 * rank + 1)]]  # rows 2r, 2r+1 of 6 * range
        assert got["all_to_all_v"] == [100.0 * i + rank for i in range(3) for _ in range(rank + 1)]
        assert got["all_to_all_v_c"] == [100.0 * i + rank for i in range(3) for _ in range(i + rank + 1)]
        # The group of ranks 0 and 2 sums their values only; rank 1 is in no collective of it.
        assert ("group_sum" in got) == (rank != 1) and got.get("group_sum", [4.0, 40.0]) == [4.0, 40.0]
        assert report.get("group_rank") == {0: 0, 1: None, 2: 1}[rank]
        assert got.get("received") == ([7.0, 8.0] if rank == 2 else None)
        # Each rank started from its own weights; the broadcast gave everyone rank 0's.
        assert report["initial"] == found[0]["own_initial"]
        assert (report["own_initial"] == report["initial"]) == (rank == 0)
        assert report["global_steps"] == [10, 20]  # iterations_per_loop=10 in the session door's loop
        # Saved into its own model_dir, restored and evaluated on every rank, with a metric all the ranks joined.
        assert "model.ckpt-20.index" in report["checkpoints"] and report["restored"] == report["final"]
        assert report["global_loss"] == pytest.approx(found[0]["global_loss"])
    assert_trained_like_one_process(found, steps=20)


@pytest.mark.needs_estimator
@pytest.mark.parametrize("iterations, model_dirs", [(1, "per rank"), (10, "per rank"), (10, "shared")])
def test_estimator_door_per_rank_shell_loop_with_rank_table(processes, rank_logs, iterations, model_dirs):
    """An unmodified ported-style script started the way ModelZoo's *_8p.sh scripts start it: it trains, then
    evaluates (a metric all-reduced across the ranks) and reads a variable on every rank. Each rank writes its own
    model_dir as the adapter's NPUEstimator does; ranks sharing one leave it to rank 0 and restore from it."""
    shared = "shared" if model_dirs == "shared" else ""
    loop = (
        'for i in 0 1; do RANK_ID=$i DEVICE_ID=$i "$PYTHON" -m npu_bridge_compat run "$SCRIPT" "$MODEL" '
        '$ITERATIONS 20 $SHARED > "$LOGS/rank_$i.log" 2>&1 & done; wait'
    )
    log = rank_logs / "loop.log"
    shell = start(
        processes,
        ["bash", "-c", loop],
        log,
        PYTHON=sys.executable,
        SCRIPT=SCRIPTS / "dist_estimator_port.py",
        MODEL=rank_logs / "model",
        ITERATIONS=iterations,
        LOGS=rank_logs,
        RANK_SIZE=2,
        SHARED=shared,
        RANK_TABLE_FILE=HERE / "data" / "rank_table_2p.json",
        NPU_BRIDGE_COMPAT_PORT=loopback_port_block(2),
    )
    finish(shell, log)
    output = "\n".join((rank_logs / f"rank_{i}.log").read_text() for i in range(2))
    found = reports(output)
    assert sorted(found) == [0, 1] and all("global_loss" in report for report in found.values()), output[-4000:]
    for report in found.values():
        assert report["global_steps"] == list(range(iterations, 21, iterations))
        assert "model.ckpt-20.index" in report["checkpoints"]  # its own model_dir, or rank 0's, written by now
        assert report["evaluated_at"] == 20
        assert report["output_bias"] == found[0]["final"]["output/bias"]
    assert found[1]["global_loss"] == pytest.approx(found[0]["global_loss"])  # both ranks joined the metric's allreduce
    assert_trained_like_one_process(found, steps=20)  # from rank 0's initial weights: the hook broadcast them
    if shared:  # one writer: rank 1 wrote no checkpoint of its own
        assert not list((rank_logs / "model").glob("rank*"))


def test_keras_door_under_launch(processes, rank_logs):
    launch, output = launched(processes, rank_logs, "dist_keras_port.py", 20, 10, rank_logs / "model")
    assert launch.returncode == 0, output[-4000:]
    found = reports(output)
    assert sorted(found) == [0, 1] and all(report["iterations"] == 20 for report in found.values())
    for report in found.values():  # saved into its own model_dir, loaded and evaluated on every rank
        assert report["checkpoints"] == ["weights.weights.h5"] and report["restored"] == report["final"]
        assert report["global_loss"] == pytest.approx(found[0]["global_loss"])
    assert found[0]["own_initial"] != found[1]["own_initial"]
    assert_trained_like_one_process(found, steps=20, initial=found[0]["own_initial"])


@pytest.mark.parametrize("victim", [1, 0])  # rank 0 also hosts the coordination service
def test_a_killed_rank_ends_the_others_naming_it(processes, rank_logs, victim):
    port = loopback_port_block(2)
    logs = [rank_logs / f"rank_{rank}.log" for rank in range(2)]
    ranks = [
        start(
            processes,
            [
                sys.executable,
                "-m",
                "npu_bridge_compat",
                "run",
                "--tf1",
                str(SCRIPTS / "dist_session_port.py"),
                "--forever",
            ],
            logs[rank],
            RANK_ID=rank,
            RANK_SIZE=2,
            NPU_BRIDGE_COMPAT_PORT=port,
        )
        for rank in range(2)
    ]
    deadline = time.monotonic() + TIMEOUT_S
    while not all("trained to step" in log.read_text() for log in logs):
        assert time.monotonic() < deadline and all(r.poll() is None for r in ranks), "\n".join(
            log.read_text()[-3000:] for log in logs
        )
        time.sleep(0.5)
    # Each rank listens on its own port of the cluster and nothing else, and talks over 127.0.0.1 only.
    for rank, process in enumerate(ranks):
        ports = {int(address.rsplit(":", 1)[1], 16) for address in listening_addresses(process.pid)}
        assert ports == {port + rank}
        connected = [(local, remote) for state, local, remote in tcp_sockets(process.pid) if state == "01"]
        assert connected and all(
            local.startswith(LOOPBACK_PREFIXES) and remote.startswith(LOOPBACK_PREFIXES) for local, remote in connected
        ), connected
    os.killpg(ranks[victim].pid, signal.SIGKILL)
    killed_at = time.monotonic()
    survivor = ranks[1 - victim]
    output = finish(survivor, logs[1 - victim], timeout=60)
    assert time.monotonic() - killed_at < 60
    assert survivor.returncode != 0
    assert (
        f"lost rank {victim} (127.0.0.1:{port + victim})" in output
        or f"talking to rank {victim} (127.0.0.1:{port + victim})" in output
    ), output[-3000:]


@pytest.mark.parametrize("mode", ["session", "function"])
def test_collectives_cost_no_thread_each(processes, rank_logs, mode):
    """Many collectives per rank leave its OS thread count flat (a collective given its own timeout keeps a
    sleeping thread per call alive for HCCL_EXEC_TIMEOUT, up to the process's thread limit)."""
    job, output = launched(processes, rank_logs, "dist_collective_threads.py", "--mode", mode)
    assert job.returncode == 0, output[-3000:]
    found = reports(output)
    assert sorted(found) == [0, 1], output[-3000:]
    for rank, report in found.items():
        assert report["result"] == [2.0, 4.0, 1.0]
        assert report["after"] - report["before"] < 20, f"rank {rank}: {report}"


def test_a_collective_another_rank_never_joins_ends_the_run_naming_the_deadline(processes, rank_logs):
    job, output = launched(
        processes, rank_logs, "dist_collective_threads.py", "--mode", "stuck", timeout=120, HCCL_EXEC_TIMEOUT=3
    )
    assert job.returncode != 0
    assert 3.0 <= reports(output)[1]["waited"] < 20, output[-3000:]
    assert (
        "rank 1 failed: DeadlineExceededError: a session run waited longer than HCCL_EXEC_TIMEOUT=3 s per "
        "step, most likely for a collective that another rank never joined"
    ) in output, output[-3000:]
    assert "the collectives of its graph: allreduce sum of float32[3] in group 'hccl_world_group'" in output


@pytest.mark.parametrize("mode, late", [("session", 1), ("eager", 1), ("session", 0), ("eager", 0)])
def test_ranks_that_finish_apart_all_exit_cleanly(processes, rank_logs, mode, late):
    """A rank that finishes first waits for the others, so no finished rank is reported lost (rank 0 hosts the
    coordination service: its early exit would read as its loss on rank 1)."""
    job, output = launched(processes, rank_logs, "dist_finish_apart.py", "--mode", mode, "--late", late, timeout=120)
    assert job.returncode == 0 and "lost rank" not in output, output[-3000:]
    assert {rank: report["total"] for rank, report in reports(output).items()} == {0: [2.0, 1.0], 1: [2.0, 1.0]}


@pytest.mark.needs_estimator
@pytest.mark.skipif(detect_host().cpu_bfloat16 not in BFLOAT16_KERNELS, reason="bfloat16 on a CPU needs AVX-512")
def test_mixed_precision_trains_on_two_ranks_as_in_one_process(processes, rank_logs):
    """allow_mix_precision with Conv2D+BiasAdd+Relu under NPUEstimator (iterations_per_loop 2): the ranks run their
    convolutions in bfloat16 as one process does, and end with one process's weights on the global batch (the
    remapper's bfloat16 fused convolution, which only the oneDNN rewrite of a local session can run, failed on
    ranks)."""
    found = {}
    for size in (1, 2):
        job, output = launched(
            processes, rank_logs, "dist_mixed_precision_port.py", rank_logs / f"ranks{size}", 2, 4, ranks=size, tf1=True
        )
        assert job.returncode == 0, output[-3000:]
        found[size] = reports(output)
    one, ranks = found[1][0], found[2]
    assert all(report["conv_dtypes"] == ["bfloat16"] for report in (one, *ranks.values()))
    for name, value in one["final"].items():
        np.testing.assert_array_equal(ranks[1]["final"][name], ranks[0]["final"][name], err_msg=name)
        np.testing.assert_allclose(ranks[0]["final"][name], value, atol=2e-3, err_msg=name)


def evaluated_in_one_process(weights: dict, batches: int, size: int) -> dict:
    """The script's two metrics, evaluated by one process on the ranks' batches put together."""
    rows = dist_model.BATCH * size * batches
    features, labels = dist_model.FEATURES[:rows], dist_model.LABELS[:rows]
    hidden = np.maximum(features @ np.array(weights["hidden/kernel"]) + np.array(weights["hidden/bias"]), 0)
    error = (hidden @ np.array(weights["output/kernel"]) + np.array(weights["output/bias"]) - labels).reshape(
        batches, -1
    )
    return {"global_loss": np.mean(error**2), "global_absolute": np.mean(np.abs(error))}


@pytest.mark.needs_estimator
@pytest.mark.parametrize("model_dirs, evaluated_in", [("per rank", "training process"), ("shared", "fresh process")])
def test_evaluate_predict_export_on_two_ranks_after_training(processes, rank_logs, model_dirs, evaluated_in):
    """AlexNet_ID0072's 8p phases: NPUEstimator evaluates every checkpoint with its metrics all-reduced in their
    value ops and a collective in an evaluation hook, then predicts and exports, on each rank; rank 0 first builds
    a collective the other rank never builds. Evaluation runs on the rank's server: in a local session the
    metrics' allreduce would wait for HCCL_EXEC_TIMEOUT."""
    model, shared = rank_logs / "model", ["shared"] if model_dirs == "shared" else []
    later = "evaluate,predict,export"
    phases = [f"train,{later}"] if evaluated_in == "training process" else ["train", later]
    for phase in phases:
        job, output = launched(processes, rank_logs, "dist_phases_port.py", model, phase, *shared, "extra", tf1=True)
        assert job.returncode == 0, output[-4000:]
    found = reports(output)
    assert sorted(found) == [0, 1], output[-4000:]
    for rank, report in found.items():
        assert [evaluation["step"] for evaluation in report["evaluations"]] == [0, 4, 8]
        assert report["evaluations"] == found[0]["evaluations"], f"rank {rank} evaluated otherwise than rank 0"
        for evaluation in report["evaluations"]:  # the hook's allreduce joined every step's run
            assert evaluation["summed_steps"] == [2.0 * evaluation["step"]] * 3
        assert report["predictions"] == found[0]["predictions"] and len(report["predictions"]) == 4
        assert report["exported"] and report["exported_bias"] == report["final"]["output/bias"]
    last = found[0]["evaluations"][-1]
    expected = evaluated_in_one_process(found[0]["final"], batches=3, size=2)
    assert last["global_loss"] == pytest.approx(expected["global_loss"], rel=1e-5)
    assert last["global_absolute"] == pytest.approx(expected["global_absolute"], rel=1e-5)
    assert_trained_like_one_process(found, steps=8)
    assert bool(list(model.glob("rank*"))) == (not shared)


UNSHARE = ("--user", "--map-root-user", "--net")  # a user namespace and its own network, as launch enters


def _two_hosts_refused() -> str | None:
    """Why this system cannot make two hosts of network namespaces joined by a veth pair, or None."""
    missing = [tool for tool in ("unshare", "nsenter", "ip") if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not installed"
    veth_pair = ["ip", "link", "add", "name", "probe0", "type", "veth", "peer", "name", "probe1"]
    probe = subprocess.run(["unshare", *UNSHARE, *veth_pair], capture_output=True, text=True)
    if probe.returncode:
        return f"this system refuses a user network namespace with a veth pair ({probe.stderr.strip()})"
    return None


TWO_HOSTS_REFUSED = _two_hosts_refused()
# What each host runs: launch with the job's hosts, one rank per host, as a user starts a job over hosts.
HOST_LAUNCH = (
    'exec "$PYTHON" -m npu_bridge_compat launch -n 1 --hosts 127.0.1.1,127.0.1.2 --host-index "$HOST_INDEX" '
    '--tf1 "$SCRIPT" "$@"'
)


def on_two_hosts(processes, rank_logs, *arguments) -> subprocess.Popen:
    """dist_session_port.py ARGUMENTS over two hosts (tests/scripts/two_hosts.sh), a launch on each."""
    command = ["unshare", *UNSHARE, "bash", str(SCRIPTS / "two_hosts.sh"), str(rank_logs)]
    command += ["bash", "-c", HOST_LAUNCH, "launch", *map(str, arguments)]
    return start(
        processes, command, rank_logs / "hosts.log", PYTHON=sys.executable, SCRIPT=SCRIPTS / "dist_session_port.py"
    )


def host_logs(rank_logs) -> str:
    return "\n".join((rank_logs / f"host_{index}.log").read_text() for index in range(2))


@pytest.mark.skipif(TWO_HOSTS_REFUSED is not None, reason=str(TWO_HOSTS_REFUSED))
def test_a_job_over_two_hosts_trains_to_identical_weights(processes, rank_logs):
    job = on_two_hosts(processes, rank_logs, rank_logs / "model")
    statuses = finish(job, rank_logs / "hosts.log")
    output = host_logs(rank_logs)
    assert "host 0 exited with 0" in statuses and "host 1 exited with 0" in statuses, output[-4000:]
    found = reports(output)
    assert sorted(found) == [0, 1], output[-4000:]
    for report in found.values():
        assert report["collectives"]["sum"] == [3.0, 30.0] and report["global_steps"] == [10, 20]
    assert_trained_like_one_process(found, steps=20)


@pytest.mark.skipif(TWO_HOSTS_REFUSED is not None, reason=str(TWO_HOSTS_REFUSED))
def test_a_lost_host_ends_the_job_naming_it(processes, rank_logs):
    job = on_two_hosts(processes, rank_logs, "--forever")
    deadline = time.monotonic() + TIMEOUT_S
    while not all(
        (rank_logs / f"host_{index}.log").is_file()
        and "trained to step" in (rank_logs / f"host_{index}.log").read_text()
        for index in range(2)
    ):
        assert time.monotonic() < deadline and job.poll() is None, host_logs(rank_logs)[-4000:]
        time.sleep(0.5)
    holder = int((rank_logs / "hosts.log").read_text().split("host 1 network held by ")[1].split()[0])
    network = os.readlink(f"/proc/{holder}/ns/net")
    for pid in filter(str.isdigit, os.listdir("/proc")):  # every process of host 1: the host is gone
        try:
            if os.readlink(f"/proc/{pid}/ns/net") == network:
                os.kill(int(pid), signal.SIGKILL)
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            pass
    lost_at = time.monotonic()
    statuses = finish(job, rank_logs / "hosts.log", timeout=90)
    assert time.monotonic() - lost_at < 60
    output = (rank_logs / "host_0.log").read_text()
    assert "host 0 exited with 0" not in statuses, output[-3000:]
    assert "lost rank 1 (127.0.1.2:29600)" in output or "talking to rank 1 (127.0.1.2:29600)" in output, output[-3000:]
