"""Rank, size, local rank and every rank's address as a cluster's launcher gives them, when Ascend's own variables
(RANK_ID, RANK_SIZE, CM_*) are absent.

- Slurm (`srun`): SLURM_PROCID, SLURM_STEP_NUM_TASKS (else SLURM_NTASKS), SLURM_LOCALID, the node list
  SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST) in Slurm's hostlist syntax (`node[01-03,07],gpu5`) and
  SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE, `2(x3),1`). Ranks sit on the nodes as Slurm's default
  block distribution places them: the first tasks on the first node, and so on.
- Open MPI (`mpirun`): OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK; MPICH's Hydra and Intel MPI: PMI_RANK, PMI_SIZE,
  MPI_LOCALRANKID. They name no host of the other ranks: rank 0's host is MASTER_ADDR.
- torchrun-style (PyTorch's launchers, most Kubernetes training operators): RANK, WORLD_SIZE, LOCAL_RANK,
  LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
- A Kubernetes TFJob's TF_CONFIG: `cluster` (chief, then workers, are the ranks in order) and `task`.

Where the variables name no address of the other ranks (MPI, torchrun-style), the ranks exchange them at a meeting
point on rank 0's host (meeting.py). A launcher started by another one (torchrun or mpirun under srun, say) names
the ranks: the variables of the launcher nearest the process win (torchrun-style and TF_CONFIG, then MPI, then
Slurm, whose variables then describe the launchers' own tasks); two launchers of one kind that disagree are an
error.

Ports. A rank's gRPC server listens on the port Slurm reserved for its step (SLURM_STEP_RESV_PORTS, the one at the
rank's position on its node), else on BASE + its local rank, BASE being NPU_BRIDGE_COMPAT_PORT, else MASTER_PORT,
else 29600. With a meeting point, the meeting takes MASTER_PORT (else NPU_BRIDGE_COMPAT_PORT, else 29600) and the
servers the ports after it. torchrun's own agent holds MASTER_PORT for its store: under it, everything moves one
port up.

This module reads no TensorFlow: the host plan and `explain --ranks` read it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping

from npu_bridge_compat.distributed.variables import RankConfigError, integer

PORT_VARIABLE = "NPU_BRIDGE_COMPAT_PORT"
DEFAULT_BASE_PORT = 29600
SLURM, OPEN_MPI, MPICH, TORCHRUN, TF_CONFIG = "Slurm", "Open MPI", "MPICH / Intel MPI", "torchrun-style", "TF_CONFIG"
# torchrun sets it when its agent hosts the store at MASTER_ADDR:MASTER_PORT that the workers share.
TORCHRUN_AGENT_STORE = "TORCHELASTIC_USE_AGENT_STORE"


@dataclasses.dataclass(frozen=True)
class Place:
    """Where one rank listens."""

    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclasses.dataclass(frozen=True)
class SchedulerRanks:
    """This process's place in a job a scheduler started."""

    scheduler: str
    rank: int
    size: int
    local_rank: int
    local_rank_variable: str  # the variable the local rank (and so the device) came from
    said_by: tuple[str, ...]  # NAME=value of every variable read
    port: int  # this rank's server port
    places: tuple[Place, ...] | None  # every rank's, in rank order; None: exchanged at the meeting point
    meeting: Place | None = None  # where the ranks exchange their addresses, when the variables name none

    @property
    def variables(self) -> str:
        return ", ".join(self.said_by)


def expand_hostlist(text: str, variable: str = "SLURM_JOB_NODELIST") -> list[str]:
    """Slurm's hostlist syntax: `node[01-03,07],gpu5` is node01, node02, node03, node07, gpu5 (zero padding kept;
    several bracketed parts in one name give every combination)."""
    names: list[str] = []
    for item in _split_outside_brackets(text.strip(), variable):
        names += _expand_name(item, variable, text)
    if not names:
        raise RankConfigError(f"{variable}={text!r} names no host")
    return names


def _split_outside_brackets(text: str, variable: str) -> list[str]:
    items, depth, current = [], 0, ""
    for character in text:
        if character == "[":
            depth += 1
        elif character == "]":
            depth -= 1
            if depth < 0:
                raise RankConfigError(f"{variable}={text!r}: a ']' without its '['")
        if character == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += character
    if depth:
        raise RankConfigError(f"{variable}={text!r}: a '[' without its ']'")
    items.append(current)
    if any(not item.strip() for item in items):
        raise RankConfigError(f"{variable}={text!r}: an empty host name between commas")
    return [item.strip() for item in items]


def _expand_name(name: str, variable: str, whole: str) -> list[str]:
    start = name.find("[")
    if start < 0:
        return [name]
    end = name.index("]", start)
    prefix, ranges, rest = name[:start], name[start + 1 : end], name[end + 1 :]
    suffixes = _expand_name(rest, variable, whole)
    return [prefix + number + suffix for number in _expand_ranges(ranges, variable, whole) for suffix in suffixes]


def _expand_ranges(ranges: str, variable: str, whole: str) -> list[str]:
    numbers = []
    for part in ranges.split(","):
        low, dash, high = part.strip().partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise RankConfigError(
                f"{variable}={whole!r}: [{ranges}] must hold numbers and ranges like 01-03,07, got {part!r}"
            )
        if dash and int(high) < int(low):
            raise RankConfigError(f"{variable}={whole!r}: the range {part} runs backwards")
        width = len(low)
        numbers += [str(number).zfill(width) for number in range(int(low), int(high if dash else low) + 1)]
    return numbers


def expand_tasks_per_node(text: str, variable: str = "SLURM_TASKS_PER_NODE") -> list[int]:
    """Slurm's tasks per node: `2(x3),1` is 2, 2, 2, 1."""
    counts = []
    for part in text.strip().split(","):
        found = re.fullmatch(r"\s*(\d+)\s*(?:\(x(\d+)\))?\s*", part)
        if found is None or int(found.group(1)) == 0 or found.group(2) == "0":
            raise RankConfigError(
                f"{variable}={text!r}: expected counts like 2(x3),1 (two tasks on each of three nodes, then one), "
                f"got {part!r}"
            )
        counts += [int(found.group(1))] * int(found.group(2) or 1)
    return counts


def reserved_ports(text: str, variable: str = "SLURM_STEP_RESV_PORTS") -> list[int]:
    """Slurm's reserved ports: `12000-12003` (or a comma-separated list of such ranges and ports)."""
    ports = []
    for part in text.strip().split(","):
        low, dash, high = part.strip().partition("-")
        if not low.isdigit() or (dash and not high.isdigit()) or int(high if dash else low) < int(low):
            raise RankConfigError(f"{variable}={text!r}: expected a port range like 12000-12015, got {part!r}")
        ports += range(int(low), int(high if dash else low) + 1)
    return ports


def find(environment: Mapping[str, str] | None = None) -> SchedulerRanks | None:
    """What the launcher nearest this process says, or None when no launcher's variables are set."""
    environment = os.environ if environment is None else environment
    for level in ((TORCHRUN, TF_CONFIG), (OPEN_MPI, MPICH), (SLURM,)):
        found = [_READERS[name](environment) for name in level if _present(name, environment)]
        if len(found) == 2 and (found[0].rank, found[0].size) != (found[1].rank, found[1].size):
            first, second = found
            raise RankConfigError(
                f"{first.scheduler} and {second.scheduler} disagree: rank {first.rank} of {first.size} "
                f"({first.variables}) against rank {second.rank} of {second.size} ({second.variables}); unset the "
                "variables of the one that did not start this process"
            )
        if found:
            return found[0]
    return None


_PRESENCE = {
    SLURM: ("SLURM_PROCID",),
    OPEN_MPI: ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    MPICH: ("PMI_RANK", "PMI_SIZE"),
    TORCHRUN: ("RANK", "WORLD_SIZE"),
    TF_CONFIG: ("TF_CONFIG",),
}


def _present(scheduler: str, environment: Mapping[str, str]) -> bool:
    return any(environment.get(name, "").strip() for name in _PRESENCE[scheduler])


def _said(environment: Mapping[str, str], *names: str) -> tuple[str, ...]:
    return tuple(f"{name}={environment[name]}" for name in names if environment.get(name, "").strip())


def _required(environment: Mapping[str, str], name: str, scheduler: str, given: str, why: str, minimum: int = 0):
    value = integer(name, minimum, environment)
    if value is None:
        raise RankConfigError(f"{given} is set but {name} is not: a {scheduler} job needs it ({why})")
    return value


def _check_rank(rank: int, size: int, rank_name: str, size_name: str) -> None:
    if rank >= size:
        raise RankConfigError(f"{rank_name}={rank} is out of range for {size_name}={size} (0 to {size - 1})")


def _first_set(environment: Mapping[str, str], *names: str) -> str | None:
    return next((name for name in names if environment.get(name, "").strip()), None)


def _base_port(environment: Mapping[str, str], order: tuple[str, ...] = (PORT_VARIABLE, "MASTER_PORT")):
    """(port, variable) of the first port: the first of the variables `order` names that is set, else the
    default."""
    for name in order:
        value = environment.get(name, "").strip()
        if value:
            if not value.isdigit() or not 1024 <= int(value) <= 65000:
                raise RankConfigError(
                    f"{name}={value!r} must be a port number from 1024 to 65000 (the ranks' servers listen on it "
                    "and the ports after it)"
                )
            return int(value), name
    return DEFAULT_BASE_PORT, "the default port"


def _read_slurm(environment: Mapping[str, str]) -> SchedulerRanks:
    rank = integer("SLURM_PROCID", 0, environment)
    size_name = _first_set(environment, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS")
    if size_name is None:
        raise RankConfigError(
            "SLURM_PROCID is set but neither SLURM_STEP_NUM_TASKS nor SLURM_NTASKS is: a Slurm job needs the "
            "number of its tasks (start the ranks with srun)"
        )
    size = integer(size_name, 1, environment)
    _check_rank(rank, size, "SLURM_PROCID", size_name)
    said = _said(environment, "SLURM_PROCID", size_name, "SLURM_LOCALID", "SLURM_NODEID")
    if size == 1:  # one process: nothing to meet, no device to choose
        return SchedulerRanks(SLURM, 0, 1, 0, "SLURM_LOCALID", said, 0, None)
    local_rank = _required(environment, "SLURM_LOCALID", SLURM, "SLURM_PROCID", "the rank's device and port")
    nodes_name = _first_set(environment, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")
    tasks_name = _first_set(environment, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE")
    if nodes_name is None or tasks_name is None:
        missing = "SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST)" if nodes_name is None else "SLURM_TASKS_PER_NODE"
        raise RankConfigError(f"{size_name}={size} but {missing} is not set: the ranks' hosts come from it")
    nodes = expand_hostlist(environment[nodes_name], nodes_name)
    tasks = expand_tasks_per_node(environment[tasks_name], tasks_name)
    said += _said(environment, nodes_name, tasks_name)
    if len(tasks) != len(nodes) or sum(tasks) != size:
        raise RankConfigError(
            f"{nodes_name}={environment[nodes_name]} ({len(nodes)} nodes) with {tasks_name}="
            f"{environment[tasks_name]} ({len(tasks)} nodes, {sum(tasks)} tasks) cannot hold the {size} tasks of "
            f"{size_name}={size}"
        )
    node_of = [node for node, count in enumerate(tasks) for _ in range(count)]
    position = [index for count in tasks for index in range(count)]
    node_id = integer("SLURM_NODEID", 0, environment)
    if position[rank] != local_rank or node_id not in (None, node_of[rank]):
        raise RankConfigError(
            f"SLURM_PROCID={rank} with SLURM_LOCALID={local_rank}"
            f"{'' if node_id is None else f', SLURM_NODEID={node_id}'}: Slurm's block distribution of "
            f"{tasks_name}={environment[tasks_name]} puts rank {rank} at position {position[rank]} of node "
            f"{node_of[rank]} ({nodes[node_of[rank]]}); run srun with --distribution=block"
        )
    ports_value = environment.get("SLURM_STEP_RESV_PORTS", "").strip()
    if ports_value:
        reserved = reserved_ports(ports_value)
        if len(reserved) < max(tasks):
            raise RankConfigError(
                f"SLURM_STEP_RESV_PORTS={ports_value} reserves {len(reserved)} ports, but a node runs {max(tasks)} "
                "ranks, one port each (srun --resv-ports)"
            )
        ports = [reserved[index] for index in position]
        said += _said(environment, "SLURM_STEP_RESV_PORTS")
    else:
        base, name = _base_port(environment)
        ports = [base + index for index in position]
        said += _said(environment, name)
    places = tuple(Place(nodes[node], port) for node, port in zip(node_of, ports))
    return SchedulerRanks(SLURM, rank, size, local_rank, "SLURM_LOCALID", said, ports[rank], places)


def _meeting_job(
    environment: Mapping[str, str],
    scheduler: str,
    names: tuple[str, str, str, str],  # rank, size, local rank, local size
) -> SchedulerRanks:
    rank_name, size_name, local_name, local_size_name = names
    rank = _required(environment, rank_name, scheduler, size_name, "this process's rank")
    size = _required(environment, size_name, scheduler, rank_name, "the number of ranks", minimum=1)
    _check_rank(rank, size, rank_name, size_name)
    said = _said(environment, *names)
    if size == 1:  # one process: nothing to meet, no device to choose
        return SchedulerRanks(scheduler, 0, 1, 0, local_name, said, 0, None)
    local_rank = _required(environment, local_name, scheduler, rank_name, "the rank's device and port")
    local_size = integer(local_size_name, 1, environment)
    if local_size is not None:
        _check_rank(local_rank, local_size, local_name, local_size_name)
    host = environment.get("MASTER_ADDR", "").strip()
    if not host:
        hint = "" if scheduler == TORCHRUN else " (mpirun does not set it: export it, with MASTER_PORT)"
        raise RankConfigError(
            f"{rank_name}={rank}, {size_name}={size}: the ranks meet at rank 0's host to exchange their addresses, "
            f"and MASTER_ADDR, which names it, is not set{hint}"
        )
    base, name = _base_port(environment, ("MASTER_PORT", PORT_VARIABLE))
    if environment.get(TORCHRUN_AGENT_STORE, "").strip().lower() == "true":
        base += 1
    said += _said(environment, "MASTER_ADDR", name, TORCHRUN_AGENT_STORE)
    meeting = Place(host, base)
    return SchedulerRanks(scheduler, rank, size, local_rank, local_name, said, base + 1 + local_rank, None, meeting)


def _read_open_mpi(environment: Mapping[str, str]) -> SchedulerRanks:
    names = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE")
    return _meeting_job(environment, OPEN_MPI, names)


def _read_mpich(environment: Mapping[str, str]) -> SchedulerRanks:
    return _meeting_job(environment, MPICH, ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"))


def _read_torchrun(environment: Mapping[str, str]) -> SchedulerRanks:
    return _meeting_job(environment, TORCHRUN, ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"))


def _read_tf_config(environment: Mapping[str, str]) -> SchedulerRanks:
    text = environment["TF_CONFIG"]
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise RankConfigError(f"TF_CONFIG is not JSON: {error}") from None
    cluster = config.get("cluster") if isinstance(config, dict) else None
    task = config.get("task") if isinstance(config, dict) else None
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        raise RankConfigError('TF_CONFIG needs a "cluster" object and a "task" object ({"type": ..., "index": ...})')
    others = sorted(set(cluster) - {"chief", "worker"})
    if others:
        raise RankConfigError(
            f"TF_CONFIG's cluster has {', '.join(others)}: the ranks are its chief and workers only (parameter "
            "servers and evaluators have no counterpart among HCCL's ranks)"
        )
    addresses = [*_job_addresses(cluster, "chief"), *_job_addresses(cluster, "worker")]
    kind, index = task.get("type"), task.get("index", 0)
    jobs = {"chief": 0, "worker": len(_job_addresses(cluster, "chief"))}
    if kind not in jobs or isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise RankConfigError(f'TF_CONFIG\'s task must be {{"type": "chief" or "worker", "index": N}}, got {task!r}')
    if index >= len(_job_addresses(cluster, kind)):
        raise RankConfigError(
            f"TF_CONFIG's task {kind} {index} is not in its cluster, which has {len(_job_addresses(cluster, kind))} "
            f"{kind} addresses"
        )
    places = tuple(_place(address) for address in addresses)
    rank = jobs[kind] + index
    same_host = [other for other, place in enumerate(places) if place.host == places[rank].host]
    said = (f'TF_CONFIG task {{"type": "{kind}", "index": {index}}} of {len(places)} addresses',)
    return SchedulerRanks(
        TF_CONFIG, rank, len(places), same_host.index(rank), "TF_CONFIG", said, places[rank].port, places
    )


def _job_addresses(cluster: dict, job: str) -> list[str]:
    addresses = cluster.get(job, [])
    if not isinstance(addresses, list) or not all(isinstance(address, str) for address in addresses):
        raise RankConfigError(f'TF_CONFIG\'s cluster "{job}" must be a list of "host:port" strings')
    return addresses


def _place(address: str) -> Place:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise RankConfigError(f'TF_CONFIG\'s cluster address {address!r} is not "host:port"')
    return Place(host.strip("[]"), int(port))


_READERS = {
    SLURM: _read_slurm,
    OPEN_MPI: _read_open_mpi,
    MPICH: _read_mpich,
    TORCHRUN: _read_torchrun,
    TF_CONFIG: _read_tf_config,
}


def gpu_index(found: SchedulerRanks, visible: int) -> int:
    """The GPU a scheduler-started rank takes among the `visible` ones (CUDA_VISIBLE_DEVICES as the scheduler
    narrowed it): the one at its local rank's position."""
    if found.local_rank >= visible:
        shown = os.environ.get("CUDA_VISIBLE_DEVICES")
        narrowed = f"CUDA_VISIBLE_DEVICES={shown} leaves" if shown is not None else "this host has"
        raise RankConfigError(
            f"rank {found.rank} has local rank {found.local_rank} ({found.local_rank_variable}), but {narrowed} "
            f"{visible} GPU{'s' * (visible != 1)}: start at most {visible} ranks per host"
        )
    return found.local_rank
