"""Run an unmodified ported script as `python SCRIPT ARGS` would, in the world it was written for.

`python -m npu_bridge_compat run` is this module's `run_program`; `scan --try`'s trials call it too, so that a
trial starts a script exactly as `run` does. Every change it makes (the adapter's import paths, the TF 1.15 or
TF 2.6 world, the ports' NumPy and Python era, `sys.argv`, the script's folder on `sys.path`, the exit listing,
logging and warnings filters, RANK_ID & co. from a scheduler's variables) goes through the registry.
"""

from __future__ import annotations

import gc
import os
import runpy
import sys
from collections.abc import Sequence

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat import select_keras_2
from npu_bridge_compat.compat.xla import reserve_fusion_flags
from npu_bridge_compat.distributed.ranks import export_scheduler_ranks
from npu_bridge_compat.errors import NpuConfigError
from npu_bridge_compat.imports.world import Status
from npu_bridge_compat.legacy.runs import ONLY_FOR, RunAs
from npu_bridge_compat.plan.platform import GRAPH_KERNEL_ENV, graph_kernel_mode


class ScriptNotFound(NpuConfigError, FileNotFoundError):
    """`run` was given a script that does not exist."""


def ask_for_graph_kernel_fusion(mode: str) -> None:
    """Every door's plan in this process (and the ranks it starts) fuses in `mode` (plan/platform.py)."""
    changes.set_environment(GRAPH_KERNEL_ENV, mode, owner=Owner.RUN, reason="graph-kernel fusion for every plan")


def graph_kernel_request(flag: bool) -> str | None:
    """The fusion mode `--graph-kernel` asks for: the user's own NPU_BRIDGE_COMPAT_GRAPH_KERNEL when it is set
    (what the user set wins, `on` included), else auto; None without the flag."""
    if not flag:
        return None
    own = os.environ.get(GRAPH_KERNEL_ENV, "")
    return graph_kernel_mode(own) if own.strip() else "auto"


def choose_world(script: str, world: str | None) -> str:
    """The world to run `script` in: `world` when the user chose one (tf1, tf2), else the one its signs decide
    (scan/run_decision.py: its file and the project modules it imports, read, never run), said in one line on stderr
    when the signs had to be weighed. Imports TensorFlow (after select_keras_2) to look names up."""
    if world is not None:
        if world not in tuple(RunAs):
            raise NpuConfigError(f"unknown world {world!r}: tf1 or tf2")
        return world
    from npu_bridge_compat.logs import log_line
    from npu_bridge_compat.scan.classify import decide_program

    select_keras_2()  # its names are looked up in the Keras the program gets
    decision = decide_program(script)
    if decision.guessed and decision.has_signs:
        flag = RunAs(decision.world).flag
        log_line(
            f"npu_bridge_compat: running {os.path.basename(script)} as a {decision.summary(limit=2)} program; "
            f"{flag} says so yourself"
        )
    return decision.world


class _StartUpObjectsFrozen:
    """gc.freeze() while entered. A class that holds gc's functions, not a generator: the registry may keep it
    entered to the interpreter's end, when a generator's cleanup finds the module's globals gone."""

    def __init__(self) -> None:
        self._freeze, self._unfreeze = gc.freeze, gc.unfreeze

    def __enter__(self) -> None:
        self._freeze()

    def __exit__(self, *exception) -> None:
        self._unfreeze()


def run_program(
    script: str,
    script_arguments: Sequence[str] = (),
    *,
    world: str | None = None,
    graph_kernel: str | None = None,
    show_deprecations: bool = False,
    list_changes: bool = False,
    obs_root: str | None = None,
) -> int:
    """Run `script` with `script_arguments` in this process; exceptions and SystemExit propagate as with
    `python SCRIPT`. `world`: `tf1` (a TF 1.15 program), `tf2` (a TF2 one, written for TensorFlow 2.6), or None
    to decide from the program's signs (choose_world). `graph_kernel`: a fusion mode for every plan (off, auto,
    on: graph_kernel_request). `obs_root`: a folder the program's obs:// and s3:// URLs map to (obs://b/k is
    obs_root/b/k) instead of object storage. Raises ScriptNotFound, or an NpuConfigError for an adapter environment
    that the adapter would refuse or an --obs-root that is no folder, before the script starts."""
    from npu_bridge_compat.legacy.modelarts import use_obs_root
    from npu_bridge_compat.legacy.tf1 import TF1_VERSION
    from npu_bridge_compat.logs import defer_tensorflow_handler, log_line, quiet_library_deprecations

    path = os.path.abspath(script)
    if not os.path.isfile(path):
        raise ScriptNotFound(f"no such script: {script}")
    select_keras_2()  # before the script (or the aliases) imports TensorFlow
    export_scheduler_ranks()  # a script started by srun, mpirun, torchrun reads RANK_ID & co. as on Ascend
    if graph_kernel is not None:
        ask_for_graph_kernel_fusion(graph_kernel)
    reserve_fusion_flags()  # before the script starts TensorFlow, in case one of its configurations asks for fusion
    if obs_root is not None:
        log_line(f"npu_bridge_compat: {use_obs_root(obs_root)}")
    run_as = RunAs(choose_world(script, world))
    tf1 = run_as is RunAs.TF1
    for served in run_as.worlds:  # legacy/runs.py's one list: the adapter's paths, the program's era, tf.estimator
        served.serve()
    if tf1:
        import tensorflow as tf

        log_line(
            f"npu_bridge_compat: run --tf1: {os.path.basename(script)} and the modules of its folder see TensorFlow "
            f"1.15's API and version (tf.__version__ {TF1_VERSION}); installed libraries see TensorFlow "
            f"{tf.__version__}"
        )
    defer_tensorflow_handler()  # TensorFlow's messages are printed once, should the script configure logging
    if not show_deprecations:
        quiet_library_deprecations()
    if list_changes:
        changes.add_exit_handler(
            _print_changes,
            owner=Owner.RUN,
            reason="`run --changes`: list the changes when the script ends",
            label="list the changes",
        )
    changes.replace_attribute(
        sys,
        "argv",
        [script, *script_arguments],
        owner=Owner.RUN,
        reason="the script sees its own arguments, as under `python SCRIPT ARGS`",
    )
    changes.add_to_sys_path(
        os.path.dirname(path), owner=Owner.RUN, reason="the script's folder comes first, as under `python SCRIPT`"
    )
    changes.enter(
        _StartUpObjectsFrozen(),
        "the garbage collector's permanent generation",
        owner=Owner.RUN,
        reason="the objects of TensorFlow and the worlds, loaded before the script, are left out of the "
        "collector's full passes (gc.freeze), which would each walk them all while the script runs",
    )
    try:
        runpy.run_path(path, run_name="__main__")
    except AttributeError as error:
        hint = None if tf1 else tf1_hint(error)
        if hint:  # a note is printed after the traceback
            error.add_note(
                f"npu_bridge_compat: {hint}. Run it as a TF 1.15 program: python -m npu_bridge_compat "
                f"run --tf1 {script} (`scan` lists the files that need it)."
            )
        raise
    return 0


def _print_changes() -> None:
    print(changes.describe(), file=sys.stderr)


def tf1_hint(error: AttributeError) -> str | None:
    """What to tell a user whose script, run without `--tf1`, stopped on a TF 1.15 name (`tf.ConfigProto`,
    `tf.train.SessionRunHook`, ...): what a world only `run --tf1` serves says of it; None when none serves it."""
    module, name = getattr(error, "obj", None), getattr(error, "name", None)
    module_name = getattr(module, "__name__", "")
    if not name or not module_name.startswith("tensorflow"):
        return None
    public = module_name.replace("tensorflow._api.v2.", "tensorflow.", 1).replace("tensorflow._api.v2", "tensorflow")
    dotted = f"{public}.{name}"
    for world in RunAs.TF1.worlds:
        if ONLY_FOR.get(world.name) is RunAs.TF1 and world.answers(dotted):
            status = world.status(dotted)
            if status.status in (Status.WORKS, Status.DIFFERS):
                return f"{dotted.replace('tensorflow.', 'tf.', 1)} is TensorFlow 1.15 API: {status.detail}"
    return None
