"""Where every rank is: its host address and port, from RANK_TABLE_FILE, the CM_* variables, a scheduler's
variables (schedulers.py, with the meeting point of meeting.py where they name no other rank's host), or one host.

- A rank table is the adapter's JSON: `server_list[].server_id` is the host's address and `device[]` gives each
  rank's `rank_id` and `device_id`. `device_ip` is the NPU's own network card: it is never read or contacted.
- The CM_* variables describe one host here (the chief's address); HCCL's dynamic numbering across hosts has no
  host counterpart, so several hosts need a rank table.
- Without either, the ranks are processes on this host.

Ports of Ascend's jobs are chosen without talking, so that the unmodified per-rank shell loops of ported scripts
agree on them: the rank at position i among its server's ranks listens on BASE + i, where BASE is
$NPU_BRIDGE_COMPAT_PORT (default 29600), or CM_CHIEF_PORT for a CM_* job (schedulers.py gives the ports of a
scheduler's job). A job whose ranks all sit on one server talks over the loopback interface (127.0.0.1) whatever
address the table (or a scheduler) names.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import threading
from typing import Any

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.distributed import meeting, ranks
from npu_bridge_compat.distributed.schedulers import DEFAULT_BASE_PORT, PORT_VARIABLE, SchedulerRanks
from npu_bridge_compat.distributed.variables import RankConfigError

JOB = "worker"
LOOPBACK = "127.0.0.1"

_met_lock = threading.Lock()
# A meeting happens once per process: its outcome, by what led to it.
MEETINGS = changes.ProcessState("the ranks' meetings and where they placed each rank", Owner.RANKS, dict)


@dataclasses.dataclass(frozen=True)
class Slot:
    """One rank's place in the job."""

    rank: int
    server: str  # the server as the cluster description names it
    host: str  # the address the other ranks reach it at
    port: int
    device_id: int | None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclasses.dataclass(frozen=True)
class Cluster:
    """All ranks of the job, in rank order, and which one this process is."""

    slots: tuple[Slot, ...]
    rank: int
    source: str  # where the description came from, for messages

    @property
    def size(self) -> int:
        return len(self.slots)

    @property
    def me(self) -> Slot:
        return self.slots[self.rank]

    @property
    def single_host(self) -> bool:
        return len({slot.server for slot in self.slots}) == 1

    @property
    def local_ranks(self) -> list[int]:
        """The ranks on this process's server, in rank order."""
        return [slot.rank for slot in self.slots if slot.server == self.me.server]

    @property
    def local_rank(self) -> int:
        return self.local_ranks.index(self.rank)

    @staticmethod
    def task(rank: int) -> str:
        return f"/job:{JOB}/replica:0/task:{rank}"

    def describe(self, rank: int) -> str:
        """`rank 1 (127.0.0.1:29601)`, for messages."""
        return f"rank {rank} ({self.slots[rank].address})"

    def cluster_spec(self):
        import tensorflow as tf

        return tf.train.ClusterSpec({JOB: [slot.address for slot in self.slots]})


def base_port() -> int:
    value = os.environ.get(PORT_VARIABLE, "").strip()
    if not value:
        return DEFAULT_BASE_PORT
    if not value.isdigit() or not 1024 <= int(value) <= 65000:
        raise RankConfigError(
            f"{PORT_VARIABLE}={value!r} must be a port number from 1024 to 65000 (the first rank "
            "of each host listens there, the next ones on the following ports)"
        )
    return int(value)


def current_cluster() -> Cluster:
    """The cluster described by this process's environment."""
    found = ranks.scheduler()
    if found is not None and found.size > 1:
        return _scheduler_cluster(found)
    size, rank = ranks.rank_size(), ranks.rank_id()
    table = os.environ.get("RANK_TABLE_FILE", "")
    unlisted = [(r, None) for r in range(size)]
    if size > 1 and ranks.uses_cm_variables():
        host, port = ranks.cm_chief()
        worker = os.environ.get("CM_WORKER_IP", "").strip()
        if worker and worker != host:
            raise RankConfigError(
                f"CM_WORKER_IP={worker} is not CM_CHIEF_IP={host}: HCCL numbers the devices of "
                "several hosts at run time, which has no host counterpart; describe a job on "
                "several hosts with a rank table (RANK_TABLE_FILE) or `launch --hosts`"
            )
        servers, source = [(host, unlisted)], "CM_CHIEF_IP"
    elif size > 1 and table:
        servers, source, port = read_rank_table(table, size), f"rank table {table}", base_port()
    else:
        servers, source, port = [(LOOPBACK, unlisted)], "one host", base_port()
    single_host = len(servers) == 1
    slots = [
        Slot(rank=r, server=server, host=LOOPBACK if single_host else server, port=port + position, device_id=device)
        for server, devices in servers
        for position, (r, device) in enumerate(devices)
    ]
    cluster = Cluster(slots=tuple(sorted(slots, key=lambda slot: slot.rank)), rank=rank, source=source)
    _check_device(cluster)
    return cluster


def _scheduler_cluster(found: SchedulerRanks) -> Cluster:
    places = found.places
    if places is None:
        with _met_lock:
            met = changes.state(MEETINGS)
            if found not in met:
                met[found] = meeting.exchange(found, ranks.connect_timeout_s())
            places = met[found]
    single_host = len({place.host for place in places}) == 1
    slots = tuple(
        Slot(rank=r, server=place.host, host=LOOPBACK if single_host else place.host, port=place.port, device_id=None)
        for r, place in enumerate(places)
    )
    return Cluster(slots=slots, rank=found.rank, source=f"{found.scheduler} job ({found.variables})")


def read_rank_table(path: str, size: int) -> list[tuple[str, list[tuple[int, int]]]]:
    """The servers of a rank table, each with its (rank, device id) pairs in the table's order."""
    data = _load(path)
    servers = data.get("server_list") if isinstance(data, dict) else None
    if not isinstance(servers, list) or not servers:
        raise RankConfigError(f'rank table {path}: expected a JSON object with a non-empty "server_list"')
    result, seen = [], set()
    for index, server in enumerate(servers):
        where = f"rank table {path}, server_list[{index}]"
        if not isinstance(server, dict) or not server.get("server_id") or not isinstance(server.get("device"), list):
            raise RankConfigError(f'{where}: each server needs a "server_id" (its host address) and a "device" list')
        devices = []
        for device in server["device"]:
            rank = _table_int(device, "rank_id", where)
            if rank in seen:
                raise RankConfigError(f"{where}: rank_id {rank} appears twice")
            seen.add(rank)
            devices.append((rank, _table_int(device, "device_id", where)))
        result.append((str(server["server_id"]), devices))
    if len(seen) != size:
        raise RankConfigError(f"RANK_SIZE={size} but rank table {path} lists {len(seen)} devices")
    if seen != set(range(size)):
        raise RankConfigError(f"rank table {path}: rank_id values must be 0 to {size - 1}, got {sorted(seen)}")
    return result


def _load(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except OSError as error:
        raise RankConfigError(f"RANK_TABLE_FILE={path} cannot be read: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise RankConfigError(f"RANK_TABLE_FILE={path} is not JSON: {error}") from None


def _table_int(entry, key: str, where: str) -> int:
    value = entry.get(key) if isinstance(entry, dict) else None
    if value is None or not str(value).isdigit():
        raise RankConfigError(f'{where}: every device needs a non-negative integer "{key}", got {entry!r}')
    return int(value)


def _check_device(cluster: Cluster) -> None:
    """The device this process was given must be the one the rank table gives its rank."""
    own, listed = ranks.device_id(), cluster.me.device_id
    if own is not None and listed is not None and own != listed:
        raise RankConfigError(
            f"RANK_ID={cluster.rank} has device_id {listed} in the {cluster.source}, but this "
            f"process was given device {own} (ASCEND_DEVICE_ID / DEVICE_ID)"
        )


def check_address_is_local(cluster: Cluster) -> None:
    """A rank listens on its server's address, which must belong to this machine. Binding a socket to it tells,
    without sending anything."""
    host = cluster.me.host
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((host, 0))
    except OSError:
        raise RankConfigError(
            f"RANK_ID={cluster.rank} is on server {cluster.me.server} in the {cluster.source}, "
            "but that address does not belong to this machine"
        ) from None


def describe_ranks() -> str:
    """What this process found about its job, for `explain --ranks`: who said so, rank, size, local rank, device,
    and every rank's address (or the meeting point where the ranks will exchange them). Meets no one."""
    found = ranks.scheduler()
    device = ranks.device_id_source()
    device_text = "none" if device is None else f"{device[1]} ({device[0]})"
    if found is not None and found.size > 1:
        lines = [
            f"Ranks: a {found.scheduler} job, from {found.variables}",
            f"  rank {found.rank} of {found.size}, local rank {found.local_rank} ({found.local_rank_variable}), "
            f"device {device_text}",
        ]
        if found.places is None:
            lines += [
                f"  every rank's address: exchanged at the meeting point MASTER_ADDR:MASTER_PORT = "
                f"{found.meeting.address} when the job starts (rank 0 listens there)",
                f"  this rank listens on port {found.port}",
            ]
            return "\n".join(lines)
        described = _scheduler_cluster(found)
    else:
        described = current_cluster()
        if described.size == 1:
            return (
                "Ranks: one rank, this process (no job of several ranks in RANK_SIZE, CM_*, Slurm, MPI, "
                "torchrun-style or TF_CONFIG variables)"
            )
        lines = [
            f"Ranks: an Ascend job, from the {described.source}",
            f"  rank {described.rank} of {described.size}, local rank {described.local_rank}, device {device_text}",
        ]
    lines.append("  every rank's address:")
    lines += [
        f"    rank {slot.rank}: {slot.address}{' (this process)' if slot.rank == described.rank else ''}"
        for slot in described.slots
    ]
    return "\n".join(lines)
