"""A script started by a command under `run` (the hook, sitecustomize.py, started it again as
`python -m npu_bridge_compat.processes SCRIPT ARGS`): `run`'s start of one script, with the flags given to `run`,
its world decided from its own signs unless `--tf1`/`--tf2` was given, written to the command's records.

A rank of a ported script's loop (RANK_SIZE > 1 and RANK_ID) runs on this host, as under `launch`: its job is
described by a rank table of this host written in the hook's folder, whatever servers the script's own
RANK_TABLE_FILE names (their addresses are never read or contacted), and the ranks talk over loopback. With
`run --ranks N` (NPU_BRIDGE_COMPAT_RANKS=N) only ranks 0 to N-1 run and RANK_SIZE is N; the others end at once.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Sequence

from npu_bridge_compat.errors import NpuConfigError
from npu_bridge_compat.processes import FLAGS_VARIABLE, HOOK_VARIABLE, RANKS_VARIABLE, TREE_VARIABLE, record

EXIT_INVALID = 2


def _integer(name: str) -> int | None:
    value = os.environ.get(name, "").strip()
    return int(value) if value.isdigit() else None


def rank_count() -> tuple[int, int, int] | None:
    """(rank, the script's RANK_SIZE, the ranks that run) for a rank of a script's loop; None for a process that
    is not one."""
    size, rank = _integer("RANK_SIZE"), _integer("RANK_ID")
    if size is None or size < 2 or rank is None or os.environ.get("CM_CHIEF_IP"):
        return None
    asked = os.environ.get(RANKS_VARIABLE, "").strip()
    if asked and (not asked.isdigit() or int(asked) < 1):
        raise NpuConfigError(f"{RANKS_VARIABLE}={asked!r}: expected a positive number of ranks")
    return rank, size, min(int(asked), size) if asked else size


def run_on_this_host(rank: int, count: int) -> None:
    """Describe this rank's job as `count` ranks of this host, on loopback."""
    from npu_bridge_compat import changes
    from npu_bridge_compat.changes import Owner
    from npu_bridge_compat.distributed.cluster import LOOPBACK
    from npu_bridge_compat.distributed.launch import rank_table

    table = os.path.join(os.environ[HOOK_VARIABLE], f"rank_table_{count}.json")
    if not os.path.exists(table):  # the ranks start together: each writes it whole, then renames it into place
        partial = f"{table}.{os.getpid()}"
        with open(partial, "w", encoding="utf-8") as file:
            json.dump(rank_table([LOOPBACK], count), file, indent=1)
        os.replace(partial, table)
    given = os.environ.get("RANK_TABLE_FILE", "")
    values = {"RANK_SIZE": count, "RANK_TABLE_FILE": table, "DEVICE_ID": rank, "ASCEND_DEVICE_ID": rank}
    for name, value in values.items():
        changes.set_environment(
            name,
            str(value),
            owner=Owner.RANKS,
            reason=f"the script's rank {rank} runs on this host, on loopback"
            + (f", not on the servers of {given}" if given else ""),
        )


def run_child(argv: Sequence[str]) -> int:
    """Start SCRIPT ARGS (`argv`) as `run` would, with the flags `run` passed down."""
    command = [os.path.basename(sys.executable), *argv]
    try:
        job = rank_count()
    except NpuConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    if job is not None and job[0] >= job[2]:  # before TensorFlow is imported: the left-out ranks end at once
        rank, size, count = job
        sys.stderr.write(
            f"npu_bridge_compat: rank {rank} of the script's {size} is left out: --ranks {count} runs ranks 0 to "
            f"{count - 1} on this host\n"
        )
        record(command=command, served="left out (--ranks)", status=0)
        return 0
    from npu_bridge_compat.cli import build_parser, main
    from npu_bridge_compat.runner import choose_world

    flags = shlex.split(os.environ.get(FLAGS_VARIABLE, ""))
    parsed = build_parser().parse_args(["run", *flags, *argv])
    try:
        if job is not None:
            run_on_this_host(job[0], job[2])
        world = choose_world(parsed.script, parsed.world) if os.path.isfile(parsed.script) else None
    except NpuConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    decided = "given to run" if parsed.world else "decided from its signs"
    record(command=command, served=str(world) if world else "none", decided=decided)
    status, error = 1, None  # an exception out of the script ends the process with 1
    try:
        flags = [flag for flag in flags if flag not in ("--tf1", "--tf2")]
        status = main(["run", *flags, *([f"--{world}"] if world else []), *argv])
        return status
    except SystemExit as exit:
        code = exit.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
        raise
    except Exception as raised:  # what stopped the script, for `scan --try`; Python still prints it
        from npu_bridge_compat.scan.trial_child import describe_exception

        tree = os.environ.get(TREE_VARIABLE) or os.path.dirname(os.path.abspath(parsed.script))
        error = describe_exception(raised, tree)
        raise
    finally:
        record(status=status, **({"error": error} if error else {}))
