"""Ranks as clusters start them: Slurm, Open MPI, MPICH / Intel MPI, torchrun-style variables and TF_CONFIG. Their
parsers and errors in this process; the meeting point with threads; then 2 ranks started with each scheduler's
variables, on one host and over two (tests/scripts/two_hosts.sh), and a killed rank."""

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import loopback_port_block
from test_distributed import JOB_VARIABLES
from test_distributed_ranks import (
    SCRIPTS,
    TIMEOUT_S,
    TWO_HOSTS_REFUSED,
    UNSHARE,
    assert_trained_like_one_process,
    finish,
    kept_when_failing,
    reports,
    start,
)

from npu_bridge_compat import distributed
from npu_bridge_compat.cli import main
from npu_bridge_compat.distributed import cluster, meeting, ranks, schedulers
from npu_bridge_compat.distributed.schedulers import Place, expand_hostlist, expand_tasks_per_node
from npu_bridge_compat.distributed.variables import RankConfigError

SCHEDULER_VARIABLES = (
    *(name for names in schedulers._PRESENCE.values() for name in names),
    "SLURM_NTASKS",
    "SLURM_STEP_NUM_TASKS",
    "SLURM_LOCALID",
    "SLURM_NODEID",
    "SLURM_JOB_NODELIST",
    "SLURM_STEP_NODELIST",
    "SLURM_NODELIST",
    "SLURM_TASKS_PER_NODE",
    "SLURM_STEP_TASKS_PER_NODE",
    "SLURM_STEP_RESV_PORTS",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
    "MPI_LOCALRANKID",
    "MPI_LOCALNRANKS",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    schedulers.TORCHRUN_AGENT_STORE,
    "CUDA_VISIBLE_DEVICES",
)


@pytest.fixture
def rank_logs(request) -> Iterator[Path]:
    yield from kept_when_failing(request)


@pytest.fixture(autouse=True)
def clean_job(monkeypatch):
    """No job environment from the caller's shell."""
    for name in (*JOB_VARIABLES, *SCHEDULER_VARIABLES):
        monkeypatch.delenv(name, raising=False)


def set_env(monkeypatch, **values):
    for name, value in values.items():
        monkeypatch.setenv(name, str(value))


def slurm(rank: int, nodes: str = "node01", tasks: str = "2", size: int = 2, local: int | None = None, **more):
    """The variables srun gives task `rank` (block distribution over `tasks` per node)."""
    counts = expand_tasks_per_node(tasks)
    position = [index for count in counts for index in range(count)]
    node = [index for index, count in enumerate(counts) for _ in range(count)]
    return {
        "SLURM_PROCID": rank,
        "SLURM_NTASKS": size,
        "SLURM_STEP_NUM_TASKS": size,
        "SLURM_LOCALID": position[rank] if local is None else local,
        "SLURM_NODEID": node[rank],
        "SLURM_STEP_NODELIST": nodes,
        "SLURM_STEP_TASKS_PER_NODE": tasks,
        **more,
    }


def open_mpi(rank: int, size: int = 2, port: int = 29500, **more):
    return {
        "OMPI_COMM_WORLD_RANK": rank,
        "OMPI_COMM_WORLD_SIZE": size,
        "OMPI_COMM_WORLD_LOCAL_RANK": rank,
        "OMPI_COMM_WORLD_LOCAL_SIZE": size,
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": port,
        **more,
    }


def mpich(rank: int, size: int = 2, port: int = 29500, **more):
    return {
        "PMI_RANK": rank,
        "PMI_SIZE": size,
        "MPI_LOCALRANKID": rank,
        "MPI_LOCALNRANKS": size,
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": port,
        **more,
    }


def torchrun(rank: int, size: int = 2, port: int = 29500, **more):
    return {
        "RANK": rank,
        "WORLD_SIZE": size,
        "LOCAL_RANK": rank,
        "LOCAL_WORLD_SIZE": size,
        "GROUP_RANK": 0,
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": port,
        **more,
    }


def tf_config(rank: int, size: int = 2, port: int = 29500, host: str = "127.0.0.1"):
    cluster_spec = {"worker": [f"{host}:{port + index}" for index in range(size)]}
    return {"TF_CONFIG": json.dumps({"cluster": cluster_spec, "task": {"type": "worker", "index": rank}})}


# --- parsers -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, hosts",
    [
        ("node[01-03,07],gpu5", ["node01", "node02", "node03", "node07", "gpu5"]),
        ("gpu5", ["gpu5"]),
        ("n[8-11]", ["n8", "n9", "n10", "n11"]),
        ("rack[1-2]-n[1,3]", ["rack1-n1", "rack1-n3", "rack2-n1", "rack2-n3"]),
        ("127.0.1.[1-2]", ["127.0.1.1", "127.0.1.2"]),
        ("a[009-010],b", ["a009", "a010", "b"]),
    ],
)
def test_slurm_hostlists_expand(text, hosts):
    assert expand_hostlist(text) == hosts


@pytest.mark.parametrize(
    "text, message",
    [
        ("node[01-03", r"SLURM_JOB_NODELIST='node\[01-03': a '\[' without its '\]'"),
        ("node01]", r"a '\]' without its '\['"),
        ("node[a-b]", r"\[a-b\] must hold numbers and ranges like 01-03,07, got 'a-b'"),
        ("node[3-1]", "the range 3-1 runs backwards"),
        ("a,,b", "an empty host name between commas"),
    ],
)
def test_bad_slurm_hostlists_are_refused(text, message):
    with pytest.raises(RankConfigError, match=message):
        expand_hostlist(text)


def test_slurm_tasks_per_node_and_reserved_ports_expand():
    assert expand_tasks_per_node("2(x3),1") == [2, 2, 2, 1]
    assert expand_tasks_per_node("4") == [4]
    assert schedulers.reserved_ports("12000-12003") == [12000, 12001, 12002, 12003]
    assert schedulers.reserved_ports("12000,12005-12006") == [12000, 12005, 12006]
    for text in ("2(x0)", "x3", "0", "2(3)", ""):
        with pytest.raises(RankConfigError, match=r"expected counts like 2\(x3\),1"):
            expand_tasks_per_node(text)
    with pytest.raises(RankConfigError, match="SLURM_STEP_RESV_PORTS='12003-12000': expected a port range"):
        schedulers.reserved_ports("12003-12000")


# --- what each scheduler says --------------------------------------------------------------------------------


def test_slurm_places_ranks_block_by_block_on_reserved_ports(monkeypatch):
    set_env(monkeypatch, **slurm(3, "node[01-02],gpu5", "2(x2),1", size=5, SLURM_STEP_RESV_PORTS="12000-12001"))
    found = ranks.scheduler()
    assert (found.scheduler, found.rank, found.size, found.local_rank) == ("Slurm", 3, 5, 1)
    assert [place.address for place in found.places] == [
        "node01:12000",
        "node01:12001",
        "node02:12000",
        "node02:12001",
        "gpu5:12000",
    ]
    assert (ranks.rank_size(), ranks.rank_id(), ranks.device_id_source()) == (5, 3, ("SLURM_LOCALID", 1))
    described = cluster.current_cluster()
    assert not described.single_host and described.me.address == "node02:12001" and described.local_ranks == [2, 3]
    assert (distributed.get_rank_id(), distributed.get_rank_size()) == (3, 5)
    assert (distributed.get_local_rank_id(), distributed.get_local_rank_size()) == (1, 2)
    assert "SLURM_STEP_RESV_PORTS=12000-12001" in found.variables


def test_slurm_without_reserved_ports_counts_from_the_base_port(monkeypatch):
    set_env(monkeypatch, **slurm(1, "node07"), NPU_BRIDGE_COMPAT_PORT=31000)
    described = cluster.current_cluster()  # one node: over loopback
    assert [slot.address for slot in described.slots] == ["127.0.0.1:31000", "127.0.0.1:31001"]
    assert described.source.startswith("Slurm job (SLURM_PROCID=1, ")


def test_a_one_process_job_needs_no_local_rank(monkeypatch):
    set_env(monkeypatch, RANK=0, WORLD_SIZE=1)  # as some containers set them for one process
    assert (ranks.rank_size(), ranks.rank_id(), ranks.device_id_source()) == (1, 0, None)
    assert main(["explain", "--ranks"]) == 0


def test_ascend_variables_win_over_a_scheduler(monkeypatch):
    set_env(monkeypatch, **slurm(1), RANK_SIZE=4, RANK_ID=2, DEVICE_ID=3)
    assert ranks.scheduler() is None
    assert (ranks.rank_size(), ranks.rank_id(), ranks.device_id_source()) == (4, 2, ("DEVICE_ID", 3))
    monkeypatch.delenv("RANK_ID")
    with pytest.raises(
        RankConfigError, match=r"RANK_ID is not set: .*; or unset RANK_SIZE to take the ranks from Slurm"
    ):
        ranks.rank_id()


def test_run_gives_ported_scripts_ascend_variables_from_the_scheduler(monkeypatch):
    """ModelZoo's scripts read RANK_ID and RANK_SIZE themselves: `run` sets them from srun's variables, and they
    still mean the Slurm job (its hosts, its device variable)."""
    set_env(monkeypatch, **slurm(3, "node[01-02]", "2(x2)", size=4))
    ranks.export_scheduler_ranks()
    assert [os.environ[name] for name in ("RANK_SIZE", "RANK_ID", "DEVICE_ID", "ASCEND_DEVICE_ID")] == list("4311")
    assert ranks.scheduler().scheduler == "Slurm" and ranks.device_id_source() == ("SLURM_LOCALID", 1)
    assert cluster.current_cluster().me.address == "node02:29601"
    monkeypatch.setenv("SLURM_PROCID", "2")  # the job changed under it: the derived values no longer hold
    with pytest.raises(RankConfigError, match="SLURM_PROCID=2 with SLURM_LOCALID=1"):
        ranks.rank_id()


def test_the_launcher_nearest_the_process_names_the_ranks(monkeypatch):
    """torchrun (or mpirun) started by srun, one task per node: its variables name the ranks."""
    set_env(monkeypatch, **slurm(0, "node[01-02]", "1(x2)"), **torchrun(1, size=4))
    found = ranks.scheduler()
    assert (found.scheduler, found.rank, found.size) == ("torchrun-style", 1, 4)


@pytest.mark.parametrize(
    "variables, scheduler, local_variable",
    [
        (open_mpi(1, port=30000), "Open MPI", "OMPI_COMM_WORLD_LOCAL_RANK"),
        (mpich(1, port=30000), "MPICH / Intel MPI", "MPI_LOCALRANKID"),
        (torchrun(1, port=30000), "torchrun-style", "LOCAL_RANK"),
    ],
)
def test_mpi_and_torchrun_ranks_meet_at_master_addr(monkeypatch, variables, scheduler, local_variable):
    set_env(monkeypatch, **variables)
    found = ranks.scheduler()
    assert (found.scheduler, found.rank, found.size, found.local_rank) == (scheduler, 1, 2, 1)
    assert found.places is None and found.meeting == Place("127.0.0.1", 30000) and found.port == 30002
    assert ranks.device_id_source() == (local_variable, 1)
    set_env(monkeypatch, **{schedulers.TORCHRUN_AGENT_STORE: "True"})  # torchrun's agent holds MASTER_PORT
    assert (ranks.scheduler().meeting.port, ranks.scheduler().port) == (30001, 30003)


def test_tf_config_names_chief_then_workers(monkeypatch):
    spec = {"chief": ["c:2222"], "worker": ["w0:2222", "w0:2223", "w1:2222"]}
    set_env(monkeypatch, TF_CONFIG=json.dumps({"cluster": spec, "task": {"type": "worker", "index": 1}}))
    found = ranks.scheduler()
    assert (found.rank, found.size, found.local_rank) == (2, 4, 1)
    assert [slot.address for slot in cluster.current_cluster().slots] == ["c:2222", "w0:2222", "w0:2223", "w1:2222"]


@pytest.mark.parametrize(
    "variables, message",
    [
        ({"SLURM_PROCID": 1}, "SLURM_PROCID is set but neither SLURM_STEP_NUM_TASKS nor SLURM_NTASKS is"),
        (
            {**slurm(1), "SLURM_NTASKS": 1, "SLURM_STEP_NUM_TASKS": 1},
            r"SLURM_PROCID=1 is out of range for SLURM_STEP_NUM_TASKS=1",
        ),
        ({k: v for k, v in slurm(1).items() if k != "SLURM_LOCALID"}, "SLURM_PROCID is set but SLURM_LOCALID is not"),
        ({k: v for k, v in slurm(1).items() if k != "SLURM_STEP_NODELIST"}, "SLURM_STEP_NODELIST .* is not set"),
        (
            slurm(1, "node[01-02]", "1(x2)", size=3),
            r"SLURM_STEP_NODELIST=node\[01-02\] \(2 nodes\) with SLURM_STEP_TASKS_PER_NODE=1\(x2\) "
            r"\(2 nodes, 2 tasks\) cannot hold the 3 tasks of SLURM_STEP_NUM_TASKS=3",
        ),
        (slurm(1, "node[01-03]", "1(x2)"), r"\(3 nodes\) .* \(2 nodes, 2 tasks\) cannot hold"),
        (slurm(1, local=0), "SLURM_PROCID=1 with SLURM_LOCALID=0, SLURM_NODEID=0: Slurm's block distribution"),
        (slurm(1, SLURM_STEP_RESV_PORTS="12000"), "SLURM_STEP_RESV_PORTS=12000 reserves 1 ports, but a node runs 2"),
        ({"OMPI_COMM_WORLD_RANK": 1}, "OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not"),
        ({"PMI_SIZE": 2}, "PMI_SIZE is set but PMI_RANK is not"),
        ({"RANK": 1}, "RANK is set but WORLD_SIZE is not: a torchrun-style job needs it"),
        ({"RANK": 1, "WORLD_SIZE": 2}, "RANK is set but LOCAL_RANK is not"),
        ({**torchrun(1), "LOCAL_WORLD_SIZE": 1}, r"LOCAL_RANK=1 is out of range for LOCAL_WORLD_SIZE=1"),
        ({**torchrun(2)}, r"RANK=2 is out of range for WORLD_SIZE=2 \(0 to 1\)"),
        (
            {k: v for k, v in open_mpi(1).items() if k != "MASTER_ADDR"},
            "OMPI_COMM_WORLD_RANK=1, OMPI_COMM_WORLD_SIZE=2: .* MASTER_ADDR, which names it, is not set "
            r"\(mpirun does not set it",
        ),
        ({**torchrun(1), "MASTER_PORT": 80}, "MASTER_PORT='80' must be a port number from 1024 to 65000"),
        (
            {**open_mpi(1), **mpich(0)},
            r"Open MPI and MPICH / Intel MPI disagree: rank 1 of 2 \(OMPI_COMM_WORLD_RANK=1, .*\) against rank 0 of 2 "
            r"\(PMI_RANK=0, ",
        ),
        ({**torchrun(1), **tf_config(0)}, "torchrun-style and TF_CONFIG disagree: rank 1 of 2"),
        ({"TF_CONFIG": "{"}, "TF_CONFIG is not JSON"),
        ({"TF_CONFIG": '{"cluster": {"worker": ["a:1"]}}'}, 'TF_CONFIG needs a "cluster" object and a "task" object'),
        (
            {"TF_CONFIG": '{"cluster": {"worker": ["a:1"], "ps": ["b:1"]}, "task": {"type": "worker", "index": 0}}'},
            "TF_CONFIG's cluster has ps: the ranks are its chief and workers only",
        ),
        (
            {"TF_CONFIG": '{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 1}}'},
            "TF_CONFIG's task worker 1 is not in its cluster, which has 1 worker addresses",
        ),
        (
            {"TF_CONFIG": '{"cluster": {"worker": ["a"]}, "task": {"type": "worker", "index": 0}}'},
            "TF_CONFIG's cluster address 'a' is not \"host:port\"",
        ),
    ],
)
def test_half_set_or_contradictory_environments_are_refused_naming_the_variables(monkeypatch, variables, message):
    set_env(monkeypatch, **variables)
    with pytest.raises(RankConfigError, match=message):
        ranks.rank_size()
    assert main(["explain", "--ranks"]) == 2  # explain --ranks says the same, before any training


def test_a_local_rank_beyond_the_visible_gpus_is_refused(monkeypatch):
    set_env(monkeypatch, **slurm(1), CUDA_VISIBLE_DEVICES="3")
    found = ranks.scheduler()
    assert schedulers.gpu_index(found, 2) == 1  # the second of the GPUs the scheduler left visible
    with pytest.raises(
        RankConfigError,
        match=r"rank 1 has local rank 1 \(SLURM_LOCALID\), but CUDA_VISIBLE_DEVICES=3 leaves 1 GPU: start at most 1",
    ):
        schedulers.gpu_index(found, 1)


def test_explain_ranks_says_what_this_process_found(monkeypatch, capsys):
    set_env(monkeypatch, **slurm(1, SLURM_STEP_RESV_PORTS="12000-12001"))
    assert main(["explain", "--ranks"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == (
        "Ranks: a Slurm job, from SLURM_PROCID=1, SLURM_STEP_NUM_TASKS=2, SLURM_LOCALID=1, SLURM_NODEID=0, "
        "SLURM_STEP_NODELIST=node01, SLURM_STEP_TASKS_PER_NODE=2, SLURM_STEP_RESV_PORTS=12000-12001"
    )
    assert printed[1:] == [
        "  rank 1 of 2, local rank 1 (SLURM_LOCALID), device 1 (SLURM_LOCALID)",
        "  every rank's address:",
        "    rank 0: 127.0.0.1:12000",
        "    rank 1: 127.0.0.1:12001 (this process)",
    ]
    for name in slurm(1):
        monkeypatch.delenv(name)
    set_env(monkeypatch, **torchrun(1, port=30000))
    assert main(["explain", "--ranks"]) == 0
    assert capsys.readouterr().out.splitlines()[2:] == [
        "  every rank's address: exchanged at the meeting point MASTER_ADDR:MASTER_PORT = 127.0.0.1:30000 when the job "
        "starts (rank 0 listens there)",
        "  this rank listens on port 30002",
    ]


# --- the meeting point ---------------------------------------------------------------------------------------


def meet(environments: list[dict], timeout_s: float = 30) -> list:
    """Each environment's meeting, side by side in threads: its places, or the error it raised."""
    results: list = [None] * len(environments)

    def one(index: int) -> None:
        found = schedulers.find({k: str(v) for k, v in environments[index].items()})
        try:
            results[index] = meeting.exchange(found, timeout_s)
        except RankConfigError as error:
            results[index] = error

    threads = [threading.Thread(target=one, args=(index,)) for index in range(len(environments))]
    for thread in reversed(threads):  # the others arrive before rank 0 listens: they retry
        thread.start()
        time.sleep(0.1)
    for thread in threads:
        thread.join(timeout_s + 10)
    return results


@pytest.mark.starts_processes
def test_ranks_exchange_their_addresses_at_the_meeting_point():
    port = loopback_port_block(4)
    results = meet([torchrun(rank, size=3, port=port) for rank in range(3)])
    expected = tuple(Place("127.0.0.1", port + 1 + rank) for rank in range(3))
    assert results == [expected] * 3


@pytest.mark.starts_processes
def test_a_meeting_that_misses_a_rank_ends_naming_it_and_the_address():
    port = loopback_port_block(4)
    started = time.monotonic()
    host, joiner = meet([torchrun(0, size=3, port=port), torchrun(1, size=3, port=port)], timeout_s=2)
    assert time.monotonic() - started < 15
    assert str(host) == (
        f"rank 0 waited 2 s (HCCL_CONNECT_TIMEOUT) at the meeting point MASTER_ADDR:MASTER_PORT = 127.0.0.1:{port} "
        f"(RANK=0, WORLD_SIZE=3, LOCAL_RANK=0, LOCAL_WORLD_SIZE=3, MASTER_ADDR=127.0.0.1, MASTER_PORT={port}) and "
        "rank 2 never arrived"
    )
    assert str(joiner) == f"rank 1 met rank 0, which ended the meeting: {host}"
    (alone,) = meet([open_mpi(1, port=port)], timeout_s=1)
    assert str(alone).startswith(
        f"rank 1 could not reach the meeting point MASTER_ADDR:MASTER_PORT = 127.0.0.1:{port} (OMPI_COMM_WORLD_RANK=1, "
    )
    assert "within 1 s (HCCL_CONNECT_TIMEOUT)" in str(alone) and "rank 0 must run on MASTER_ADDR's host" in str(alone)


@pytest.mark.starts_processes
def test_a_rank_of_another_job_at_the_meeting_point_is_refused():
    port = loopback_port_block(4)
    host, stranger = meet([torchrun(0, size=2, port=port), torchrun(1, size=3, port=port)], timeout_s=10)
    assert "a process from 127.0.0.1 says it is rank 1 of 3, but this job has 2 ranks" in str(host)
    assert (
        str(stranger) == "rank 1 met rank 0, which ended the meeting: rank 0 of 2 refused it: it says it is rank 1 of 3"
    )


# --- 2 ranks as each scheduler starts them -------------------------------------------------------------------

ON_ONE_HOST = {
    "srun": lambda rank, port: slurm(rank, SLURM_STEP_RESV_PORTS=f"{port}-{port + 1}"),
    "mpirun (Open MPI)": lambda rank, port: open_mpi(rank, port=port),
    "mpirun (MPICH)": lambda rank, port: mpich(rank, port=port),
    "torchrun": lambda rank, port: torchrun(rank, port=port),
    "TFJob": lambda rank, port: tf_config(rank, port=port),
}
WITH_MEETING = ("mpirun (Open MPI)", "mpirun (MPICH)", "torchrun")


def start_ranks(processes, logs, started_as: str, *arguments) -> tuple[list, list, int]:
    port = loopback_port_block(3)
    files = [logs / f"rank_{rank}.log" for rank in range(2)]
    command = [sys.executable, "-m", "npu_bridge_compat", "run", "--tf1", str(SCRIPTS / "dist_scheduler_port.py")]
    jobs = [
        start(processes, [*command, *arguments], files[rank], **ON_ONE_HOST[started_as](rank, port))
        for rank in range(2)
    ]
    return jobs, files, port


@pytest.mark.starts_processes
@pytest.mark.parametrize("started_as", list(ON_ONE_HOST))
def test_two_ranks_as_a_scheduler_starts_them_train_like_one_process(processes, rank_logs, started_as):
    jobs, files, port = start_ranks(processes, rank_logs, started_as)
    outputs = [finish(job, log) for job, log in zip(jobs, files)]
    assert [job.returncode for job in jobs] == [0, 0], "\n".join(output[-3000:] for output in outputs)
    found = reports("\n".join(outputs))
    servers = [port + 1 + rank for rank in range(2)] if started_as in WITH_MEETING else [port, port + 1]
    for rank, output in enumerate(outputs):
        report = found[rank]
        assert (report["size"], report["local_rank"], report["local_size"]) == (2, rank, 2)
        assert report["device"][1] == rank and report["global_steps"] == [10, 20]
        said = [line for line in output.splitlines() if "every interface of this host" in line]
        assert len(said) == 1 and f"rank {rank} of the " in said[0] and f"port {servers[rank]} " in said[0], output
    assert_trained_like_one_process(found, steps=20)


@pytest.mark.starts_processes
@pytest.mark.parametrize("started_as, victim", [("torchrun", 0), ("srun", 1)])
def test_a_killed_rank_ends_the_other_within_60_s_naming_it(processes, rank_logs, started_as, victim):
    jobs, files, port = start_ranks(processes, rank_logs, started_as, "--forever")
    deadline = time.monotonic() + TIMEOUT_S
    while not all("trained to step" in log.read_text() for log in files):
        assert time.monotonic() < deadline and all(job.poll() is None for job in jobs), "\n".join(
            log.read_text()[-3000:] for log in files
        )
        time.sleep(0.5)
    os.killpg(jobs[victim].pid, signal.SIGKILL)
    killed_at = time.monotonic()
    output = finish(jobs[1 - victim], files[1 - victim], timeout=60)
    assert time.monotonic() - killed_at < 60 and jobs[1 - victim].returncode != 0
    address = f"127.0.0.1:{port + (1 + victim if started_as in WITH_MEETING else victim)}"
    assert f"lost rank {victim} ({address})" in output or f"talking to rank {victim} ({address})" in output, output


# --- over two hosts ------------------------------------------------------------------------------------------

# What each host runs: one rank per host, with the variables srun / torchrun give it there.
OVER_TWO_HOSTS = {
    "srun": "SLURM_PROCID=$HOST_INDEX SLURM_NODEID=$HOST_INDEX SLURM_LOCALID=0 SLURM_NTASKS=2 "
    "SLURM_STEP_NUM_TASKS=2 SLURM_STEP_NODELIST='127.0.1.[1-2]' SLURM_STEP_TASKS_PER_NODE='1(x2)'",
    "torchrun": "RANK=$HOST_INDEX LOCAL_RANK=0 WORLD_SIZE=2 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.1.1 MASTER_PORT=29500",
}


@pytest.mark.starts_processes
@pytest.mark.skipif(TWO_HOSTS_REFUSED is not None, reason=str(TWO_HOSTS_REFUSED))
@pytest.mark.parametrize("started_as", list(OVER_TWO_HOSTS))
def test_two_hosts_as_a_scheduler_starts_them_train_like_one_process(processes, rank_logs, started_as):
    on_each_host = f'{OVER_TWO_HOSTS[started_as]} exec "$PYTHON" -m npu_bridge_compat run --tf1 "$SCRIPT"'
    command = ["unshare", *UNSHARE, "bash", str(SCRIPTS / "two_hosts.sh"), str(rank_logs), "bash", "-c", on_each_host]
    job = start(
        processes, command, rank_logs / "hosts.log", PYTHON=sys.executable, SCRIPT=SCRIPTS / "dist_scheduler_port.py"
    )
    statuses = finish(job, rank_logs / "hosts.log")
    output = "\n".join((rank_logs / f"host_{index}.log").read_text() for index in range(2))
    assert "host 0 exited with 0" in statuses and "host 1 exited with 0" in statuses, output[-4000:]
    found = reports(output)
    assert [(report["local_rank"], report["local_size"]) for report in found.values()] == [(0, 1), (0, 1)]
    port = 29501 if started_as == "torchrun" else 29600
    for index in range(2):
        host_output = (rank_logs / f"host_{index}.log").read_text()
        assert f"rank {index} of the " in host_output and f"listens on port {port} " in host_output, host_output
    assert_trained_like_one_process(found, steps=20)
