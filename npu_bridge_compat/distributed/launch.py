"""`python -m npu_bridge_compat launch -n N [--hosts H0,H1,...] [--tf1|--tf2] SCRIPT ARGS`: N ranks of a script,
like torchrun.

Each rank runs `python -m npu_bridge_compat run --tf1|--tf2 SCRIPT ARGS` (the world the user chose, or the one
`run` would choose, decided once by launch; the adapter's imports aliased) with the environment a ported
script's per-rank shell loop would give it: RANK_ID, RANK_SIZE, ASCEND_DEVICE_ID and DEVICE_ID (its position on
this host), and RANK_TABLE_FILE, a rank table launch writes for the job. Every output line is prefixed with its
rank. When a rank fails, launch stops the others (SIGTERM, then SIGKILL: TensorFlow's
coordination service catches SIGTERM) and exits with the failed rank's status.

Several hosts: run the same command on each host (`--hosts` lists them all, in the same order everywhere); host i
runs ranks i*N to i*N+N-1. Its position is found among this machine's addresses, or given with --host-index.
On one host, launch picks N free consecutive ports unless NPU_BRIDGE_COMPAT_PORT fixes the first.

On one host the ranks run in a network namespace of their own, where the loopback interface is the only one:
TensorFlow's gRPC servers listen on every interface of their namespace (grpc_server_lib.cc binds 0.0.0.0), and
there that is loopback alone, so nothing outside the job can reach them. `in_private_network` enters such a
namespace with util-linux's `unshare` (a user namespace, so no privileges are needed); where the system refuses,
launch says so and runs the ranks in the host's network. `--host-network` keeps them there on purpose (a script
that downloads its data, say).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import IO

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.distributed.cluster import DEFAULT_BASE_PORT, LOOPBACK, PORT_VARIABLE
from npu_bridge_compat.distributed.ranks import DERIVED_VARIABLE, EXIT_RANK_LOST, RankConfigError

STOP_GRACE_S = 10
PRIVATE_NETWORK_VARIABLE = "NPU_BRIDGE_COMPAT_PRIVATE_NETWORK"  # set inside the job's own network namespace
_UNSHARE = ("--user", "--map-root-user", "--net")
# What the per-rank environment replaces: a launched rank must not inherit another description of the job.
_JOB_VARIABLES = (
    "RANK_ID",
    "RANK_SIZE",
    "RANK_TABLE_FILE",
    "DEVICE_ID",
    "ASCEND_DEVICE_ID",
    "CM_CHIEF_IP",
    "CM_CHIEF_PORT",
    "CM_CHIEF_DEVICE",
    "CM_WORKER_SIZE",
    "CM_WORKER_IP",
    DERIVED_VARIABLE,
)


def rank_table(hosts: Sequence[str], ranks_per_host: int) -> dict:
    """The adapter's rank table for `ranks_per_host` ranks on each host (device ids are positions on a host)."""
    return {
        "status": "completed",
        "version": "1.0",
        "server_count": str(len(hosts)),
        "server_list": [
            {
                "server_id": host,
                "device": [
                    {"device_id": str(local), "rank_id": str(index * ranks_per_host + local)}
                    for local in range(ranks_per_host)
                ],
            }
            for index, host in enumerate(hosts)
        ],
    }


def _is_own_address(host: str) -> bool:
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind((host, 0))  # succeeds only for this machine's addresses; sends nothing
        return True
    except OSError:
        return False


def host_index(hosts: Sequence[str], given: int | None) -> int:
    if given is not None:
        if not 0 <= given < len(hosts):
            raise RankConfigError(f"--host-index {given} is out of range for {len(hosts)} hosts")
        return given
    own = [index for index, host in enumerate(hosts) if _is_own_address(host)]
    if len(own) != 1:
        found = "none of them" if not own else f"several of them ({', '.join(hosts[i] for i in own)})"
        raise RankConfigError(f"--hosts {','.join(hosts)}: {found} is an address of this machine; give --host-index")
    return own[0]


def unshare_refusal(flags: Sequence[str], what: str) -> str | None:
    """Why util-linux's `unshare` cannot make the namespaces `flags` ask for (`what`, in words) here; None when
    it can (it is tried once with `true`)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return "util-linux's unshare is not installed"
    probe = subprocess.run([unshare, *flags, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"this system refuses {what} ({probe.stderr.strip() or probe.returncode})"
    return None


def in_private_network(command: Sequence[str]) -> str | None:
    """Run `command` (this launch, again) in a network namespace whose only interface is loopback: replaces
    this process and does not return. Returns why it could not, when the system refuses such namespaces."""
    if os.environ.get(PRIVATE_NETWORK_VARIABLE):
        return None  # already inside
    refused = unshare_refusal(_UNSHARE, "a user network namespace")
    if refused:
        return refused
    unshare = shutil.which("unshare")
    changes.set_environment(
        PRIVATE_NETWORK_VARIABLE,
        "1",
        owner=Owner.LAUNCH,
        reason="the launch started again in its own network namespace",
    )
    os.execv(unshare, [unshare, *_UNSHARE, "--", *command])
    raise AssertionError("exec does not return")


def bring_loopback_up() -> None:
    """A new network namespace starts with its loopback interface down: bring it up (SIOCSIFFLAGS, IFF_UP)."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as handle:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(handle, siocgifflags, request))[1]
        fcntl.ioctl(handle, siocsifflags, struct.pack("16sH14x", b"lo", flags | iff_up))


def free_port_block(count: int, start: int = DEFAULT_BASE_PORT) -> int:
    """The first of `count` consecutive ports free on the loopback interface, from `start` on."""
    for first in range(start, 65000 - count):
        if all(_port_is_free(port) for port in range(first, first + count)):
            return first
    raise RankConfigError(f"no {count} consecutive free ports above {start}")


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((LOOPBACK, port))
            return True
        except OSError:
            return False


class _Rank:
    """One launched rank: its process and the threads that copy its output, prefixed."""

    def __init__(self, rank: int, command: list[str], environment: dict[str, str]) -> None:
        self.rank = rank
        # Its own process group, so that stopping it stops whatever it started too.
        self.process = subprocess.Popen(
            command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
        )
        self.copiers = [
            threading.Thread(target=_copy_lines, args=(source, target, f"[rank {rank}] "), daemon=True)
            for source, target in ((self.process.stdout, sys.stdout), (self.process.stderr, sys.stderr))
        ]
        for copier in self.copiers:
            copier.start()

    def signal(self, number: int) -> None:
        try:
            os.killpg(self.process.pid, number)
        except ProcessLookupError:
            pass


def _copy_lines(source: IO[bytes], target, prefix: str) -> None:
    for line in iter(source.readline, b""):
        target.write(prefix + line.decode(errors="replace"))
        target.flush()


def _describe_exit(status: int) -> str:
    if status < 0:
        return f"was killed by {signal.Signals(-status).name}"
    return f"exited with status {status}" + (" (it lost another rank)" if status == EXIT_RANK_LOST else "")


def launch(
    script: str,
    arguments: Sequence[str],
    ranks_per_host: int,
    hosts: Sequence[str] | None = None,
    given_host_index: int | None = None,
    world: str = "tf2",
    run_flags: Sequence[str] = (),
) -> int:
    """Run the ranks of this host, each as `run --WORLD [run_flags] script arguments`; returns the exit status for
    launch (0, or the first failed rank's)."""
    if ranks_per_host < 1:
        raise RankConfigError(f"-n must be at least 1, got {ranks_per_host}")
    hosts = list(hosts or [LOOPBACK])
    index = host_index(hosts, given_host_index) if len(hosts) > 1 else 0
    if os.environ.get(PRIVATE_NETWORK_VARIABLE):
        bring_loopback_up()
    environment = {name: value for name, value in os.environ.items() if name not in _JOB_VARIABLES}
    if len(hosts) == 1 and PORT_VARIABLE not in environment:
        environment[PORT_VARIABLE] = str(free_port_block(ranks_per_host))
    size = len(hosts) * ranks_per_host
    command = [sys.executable, "-m", "npu_bridge_compat", "run", f"--{world}", *run_flags, script, *arguments]
    with tempfile.TemporaryDirectory(prefix="npu_bridge_compat_launch_") as folder:
        table = os.path.join(folder, "rank_table.json")
        with open(table, "w", encoding="utf-8") as file:
            json.dump(rank_table(hosts, ranks_per_host), file, indent=1)
        started = [
            _Rank(
                index * ranks_per_host + local,
                command,
                {
                    **environment,
                    "RANK_ID": str(index * ranks_per_host + local),
                    "RANK_SIZE": str(size),
                    "RANK_TABLE_FILE": table,
                    "DEVICE_ID": str(local),
                    "ASCEND_DEVICE_ID": str(local),
                },
            )
            for local in range(ranks_per_host)
        ]
        return _supervise(started)


def _supervise(started: list[_Rank]) -> int:
    """Wait for the ranks; at the first failure (or a signal to launch) stop the rest. Returns 0, or the status of
    the rank that failed first on its own (ranks that only lost another exit with EXIT_RANK_LOST)."""
    stop = threading.Event()
    previous = {number: signal.signal(number, lambda *_: stop.set()) for number in (signal.SIGINT, signal.SIGTERM)}
    failures: dict[int, int] = {}  # rank -> status, in the order launch saw them
    try:
        running = list(started)
        while running and not stop.is_set():
            for rank in list(running):
                status = rank.process.poll()
                if status is not None:
                    running.remove(rank)
                    if status != 0:
                        failures[rank.rank] = status
            if failures and running:
                first, status = next(iter(failures.items()))
                sys.stderr.write(f"launch: rank {first} {_describe_exit(status)}; stopping the other ranks\n")
                break
            time.sleep(0.1)
        _stop_all(running)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    for rank in started:
        for copier in rank.copiers:
            copier.join(timeout=5)
    if not failures:
        return 130 if stop.is_set() else 0
    causes = [status for status in failures.values() if status != EXIT_RANK_LOST] or list(failures.values())
    sys.stderr.write(
        "launch: "
        + "; ".join(f"rank {rank} {_describe_exit(status)}" for rank, status in sorted(failures.items()))
        + "\n"
    )
    return 128 - causes[0] if causes[0] < 0 else causes[0]


def _stop_all(running: list[_Rank]) -> None:
    """SIGTERM, then SIGKILL after STOP_GRACE_S (the ranks' statuses are not failures of their own)."""
    for rank in running:
        rank.signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    for rank in running:
        try:
            rank.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            rank.signal(signal.SIGKILL)
            rank.process.wait()
