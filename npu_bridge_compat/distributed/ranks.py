"""Which rank this process is, read from the environment exactly as the adapter reads it, or, when Ascend's own
variables are absent, as the launcher that started the process gives it (schedulers.py: Slurm, MPI,
torchrun-style variables, TF_CONFIG).

This is the one place that reads RANK_ID, RANK_SIZE, DEVICE_ID, ASCEND_DEVICE_ID and the CM_* variables:

- `RANK_SIZE` (or `CM_WORKER_SIZE`; both at once is the adapter's error) is the number of ranks, 1 when unset.
- `RANK_ID` is this process's rank. With the CM_* variables there is no RANK_ID: HCCL numbers the devices
  itself; on one host that is the device's position after the chief's device (`CM_CHIEF_DEVICE`).
- The device id is `ASCEND_DEVICE_ID`, else `DEVICE_ID`, as the adapter's GetEnvDeviceID reads them (the logical
  id first; `session_device_id` overrides both in a session config), else a scheduler's local rank. On a host it
  selects the GPU of the rank.
- Ascend's variables win when present (RANK_SIZE, RANK_ID, CM_WORKER_SIZE or CM_CHIEF_IP set): a scheduler's are
  then not read. `run` sets them from a scheduler's (`export_scheduler_ranks`) for ported scripts that read them
  themselves, and marks them as derived (NPU_BRIDGE_COMPAT_RANKS_FROM), so that the scheduler's facts still hold.
- `HCCL_CONNECT_TIMEOUT` (how long ranks wait for each other to start) and `HCCL_EXEC_TIMEOUT` (how long one
  collective may wait) keep their Ascend meaning and defaults.
"""

from __future__ import annotations

import os

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.distributed import schedulers
from npu_bridge_compat.distributed.schedulers import SchedulerRanks
from npu_bridge_compat.distributed.variables import RankConfigError, integer

# The exit status of a rank that ends because the job lost another rank (EX_TEMPFAIL: it did nothing wrong);
# `launch` tells it from a rank that failed on its own.
EXIT_RANK_LOST = 75

WORLD_GROUP = "hccl_world_group"
CONNECT_TIMEOUT_S = 120  # Ascend's default HCCL_CONNECT_TIMEOUT
EXEC_TIMEOUT_S = 1836  # Ascend's default HCCL_EXEC_TIMEOUT


_ASCEND_JOB_VARIABLES = ("RANK_SIZE", "RANK_ID", "CM_WORKER_SIZE", "CM_CHIEF_IP")
DERIVED_VARIABLE = "NPU_BRIDGE_COMPAT_RANKS_FROM"  # names the scheduler Ascend's variables were set from


def scheduler() -> SchedulerRanks | None:
    """What the launcher that started this process says, when Ascend's variables do not describe the job (or
    were set from it)."""
    derived = os.environ.get(DERIVED_VARIABLE, "")
    if any(os.environ.get(name, "").strip() for name in _ASCEND_JOB_VARIABLES) and not derived:
        return None
    found = schedulers.find()
    return found if not derived or (found is not None and found.scheduler == derived) else None


def export_scheduler_ranks() -> None:
    """Give a ported script that reads RANK_ID, RANK_SIZE, DEVICE_ID or ASCEND_DEVICE_ID itself (as ModelZoo's
    scripts do) the values its scheduler's variables mean."""
    found = scheduler()
    if found is None or found.size == 1 or os.environ.get(DERIVED_VARIABLE):
        return
    values = {
        "RANK_SIZE": found.size,
        "RANK_ID": found.rank,
        "DEVICE_ID": found.local_rank,
        "ASCEND_DEVICE_ID": found.local_rank,
        DERIVED_VARIABLE: found.scheduler,
    }
    for name, value in values.items():
        changes.set_environment(
            name,
            str(value),
            owner=Owner.RANKS,
            reason=f"the rank facts of the {found.scheduler} job, as Ascend names them",
        )


def uses_cm_variables() -> bool:
    """Whether the cluster is described by CM_CHIEF_IP & co. instead of a rank table."""
    return bool(os.environ.get("CM_CHIEF_IP"))


def rank_size() -> int:
    """The number of ranks: RANK_SIZE, else CM_WORKER_SIZE, else a scheduler's, else 1."""
    if os.environ.get("CM_WORKER_SIZE") is not None and os.environ.get("RANK_SIZE") is not None:
        raise RankConfigError("RANK_SIZE and CM_WORK_SIZE cannot be configured at the same time")
    found = scheduler()
    if found is not None:
        return found.size
    size = integer("RANK_SIZE", minimum=1)
    return size if size is not None else integer("CM_WORKER_SIZE", minimum=1) or 1


def device_id_source() -> tuple[str, int] | None:
    """(variable, value) of the device id: ASCEND_DEVICE_ID, else DEVICE_ID, else the local rank a scheduler
    gave; None when none is set."""
    found = scheduler()
    if found is not None and found.size > 1 and os.environ.get(DERIVED_VARIABLE):
        return found.local_rank_variable, found.local_rank
    for name in ("ASCEND_DEVICE_ID", "DEVICE_ID"):
        value = integer(name)
        if value is not None:
            return name, value
    if found is not None and found.size > 1:
        return found.local_rank_variable, found.local_rank
    return None


def device_id() -> int | None:
    """The accelerator index of this process (see device_id_source)."""
    found = device_id_source()
    return None if found is None else found[1]


def rank_id() -> int:
    """This process's rank in the world group."""
    found = scheduler()
    if found is not None:
        return found.rank
    size = rank_size()
    if uses_cm_variables():
        rank = _cm_rank(size)
    else:
        rank = integer("RANK_ID")
        if rank is None:
            if size > 1:
                others = schedulers.find()
                raise RankConfigError(
                    f"RANK_SIZE={size} but RANK_ID is not set: every process of a job with "
                    "several ranks needs its RANK_ID (0 to RANK_SIZE - 1)"
                    + (
                        f"; or unset RANK_SIZE to take the ranks from {others.scheduler} ({others.variables})"
                        if others is not None
                        else ""
                    )
                )
            rank = 0
    if rank >= size:
        raise RankConfigError(f"RANK_ID={rank} is out of range for RANK_SIZE={size} (0 to {size - 1})")
    return rank


def _cm_rank(size: int) -> int:
    """On one host, HCCL numbers the CM_* devices from the chief's: rank = (device - chief device) mod size."""
    if os.environ.get("RANK_TABLE_FILE"):
        raise RankConfigError("CM_CHIEF_IP and RANK_TABLE_FILE cannot be configured at the same time")
    if os.environ.get("RANK_ID") is not None:
        raise RankConfigError("RANK_ID cannot be set with CM_CHIEF_IP: the CM_* variables number the ranks")
    chief_device = integer("CM_CHIEF_DEVICE")
    if chief_device is None or integer("CM_CHIEF_PORT") is None:
        raise RankConfigError("CM_CHIEF_IP needs CM_CHIEF_PORT and CM_CHIEF_DEVICE as well")
    device = device_id()
    if device is None:
        raise RankConfigError("with CM_CHIEF_IP every process needs its ASCEND_DEVICE_ID (or DEVICE_ID)")
    return (device - chief_device) % size


def cm_chief() -> tuple[str, int]:
    """The chief's address and port of a CM_* job."""
    return os.environ["CM_CHIEF_IP"], integer("CM_CHIEF_PORT") or 0


def connect_timeout_s() -> int:
    """How long ranks wait for all ranks to start (HCCL_CONNECT_TIMEOUT)."""
    return integer("HCCL_CONNECT_TIMEOUT", minimum=1) or CONNECT_TIMEOUT_S


def exec_timeout_s() -> int:
    """How long one collective waits for the other ranks (HCCL_EXEC_TIMEOUT)."""
    return integer("HCCL_EXEC_TIMEOUT", minimum=1) or EXEC_TIMEOUT_S


def rank_folders() -> list[str]:
    """The folder that keeps this rank's files (dumps) apart from the other ranks': none with one rank."""
    return [f"rank_{rank_id()}"] if rank_size() > 1 else []
