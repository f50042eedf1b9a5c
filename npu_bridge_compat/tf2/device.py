"""`npu_device.open().as_default()`: the TF2 door. One plan for the whole process, read from `global_options()`.

As in the adapter (tf_adapter_2.x/python/npu_device/npu_device.py), `open()` reads the option tree once (options
set later warn that they have no effect), opens one device per process (the same id again returns the same handle,
another id is refused), and with RANK_SIZE > 1 joins the job's ranks under the adapter's checks (a rank table and
RANK_ID, or the CM_* variables). On a host, opening plans the options and applies what the process takes: the
environment (op lists, XLA flags), op determinism, the device id's GPU, a GPU memory cap and thread pools.
`as_default()` then applies the rest to everything the script runs afterwards:

- the grappler rewrite settings (mixed precision and its op lists, constant folding, recomputation) and
  graph-kernel fusion (enable_graph_kernel) to every function this thread calls: `tf.function`s and Keras' steps;
- the program's own `tf.function`s decorated from then on: dumps, numeric checks and keep-dtype built in
  (tf2/functions.py);
- Keras `fit` / `evaluate` / `predict`: the Keras door's run-time units (dumps, numeric checks and keep-dtype built
  into the traced steps), as if each call carried an `NPUCallback` of these options;
- a profiler trace of the rest of the process.

What the door holds lives on the handle and in the changes registry: the opened device is listed there (undoing
it lets `open()` plan `global_options()` again), the handle is the default while its `as_default()` changes are in
force, and `set_npu_loop_size` sets NPU_LOOP_SIZE, the adapter's own variable for it. Only the option tree is the
process's, as in the adapter (`global_options()`): it is the program's configuration, which `open()` reads.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading

import tensorflow as tf

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat.config import disable_v2_behaviour
from npu_bridge_compat.compat.eager import (
    eager_context_started,
    function_calls_configured,
    replace_function_decorator,
)
from npu_bridge_compat.compat.keras import add_callback_to_model_calls
from npu_bridge_compat.distributed import ranks
from npu_bridge_compat.errors import NpuCompatWarning, NpuConfigError, warn
from npu_bridge_compat.options import tf2_tree as tf2_options
from npu_bridge_compat.options.readers import build_options
from npu_bridge_compat.plan import HostFacts, HostPlan, build_plan
from npu_bridge_compat.plan.features import (
    GpuMemoryLimit,
    GraphKernelFusion,
    InterOpThreads,
    IntraOpThreads,
    MixedPrecision,
    NumericChecks,
    ProfilerTrace,
    RewriteSetting,
    TensorDump,
    VisibleDevice,
)
from npu_bridge_compat.runtime.doors import Door, enter_plan, narrowed, plan_for_door
from npu_bridge_compat.runtime.keras_calls import KERAS_CALL_FEATURES, PlanCallback
from npu_bridge_compat.runtime.precision import note_program_policy
from npu_bridge_compat.runtime.profiling import profiler_trace
from npu_bridge_compat.tf2.functions import with_units

TF2_DOOR = Door(
    "npu_device.open()",
    (
        RewriteSetting,
        GraphKernelFusion,
        ProfilerTrace,
        TensorDump,
        NumericChecks,
        VisibleDevice,
        GpuMemoryLimit,
        InterOpThreads,
        IntraOpThreads,
    ),
    "A TF2 program has no session to carry session settings.",
    measures_precision=True,
)
LOOP_SIZE_VARIABLE = "NPU_LOOP_SIZE"
OWNER = Owner.TF2_DOOR
OPENED = "npu_device.open()"
PROFILER_TRACE = "TensorFlow profiler"

_lock = threading.Lock()
# global_options(): the program's configuration, as in the adapter
PROGRAM_OPTIONS = changes.ProcessState(
    "npu_device.global_options(): the program's option tree", OWNER, lambda: tf2_options.OptionGroup("")
)
_handle: NpuDeviceHandle | None = None  # the device opened, while its opening is in force (_Opened)


def global_options() -> tf2_options.OptionGroup:
    """The process's option tree; `open()` reads it."""
    with _lock:
        return changes.state(PROGRAM_OPTIONS)


def global_npu_ctx() -> NpuDeviceHandle | None:
    """The device made default by `open().as_default()`, None before (and once its changes are undone)."""
    handle = _handle
    return handle if handle is not None and handle.is_default() else None


def set_npu_loop_size(loop_size: int) -> None:
    """The adapter's loop sink: on an NPU a `tf.function` that loops over an iterator runs `loop_size` iterations
    per call on the device, and the docs require the script's own loop count to equal it. On a host the script's
    loop runs exactly as written; Keras calls whose steps_per_execution differs are warned about. The size is
    NPU_LOOP_SIZE from now on (through the changes registry), the variable the adapter reads too."""
    if isinstance(loop_size, bool) or not isinstance(loop_size, int) or loop_size < 1:
        raise NpuConfigError(f"set_npu_loop_size: loop_size must be an int >= 1, got {loop_size!r}")
    changes.undo(owner=OWNER, target=f"${LOOP_SIZE_VARIABLE}")  # the size set before: one value per owner
    changes.set_environment(
        LOOP_SIZE_VARIABLE,
        str(loop_size),
        owner=OWNER,
        reason="npu_device.set_npu_loop_size: the loop size Keras calls are checked against",
    )


def loop_size() -> int:
    """NPU_LOOP_SIZE (set_npu_loop_size sets it), else 1."""
    value = os.environ.get(LOOP_SIZE_VARIABLE, "").strip()
    if not value:
        return 1
    if not value.isdigit() or int(value) < 1:
        raise NpuConfigError(f"{LOOP_SIZE_VARIABLE} must be an int >= 1, got {LOOP_SIZE_VARIABLE}={value!r}")
    return int(value)


def open(device_id: int | None = None) -> NpuDeviceHandle:  # noqa: A001 - the adapter's name
    """Open the process's device (ASCEND_DEVICE_ID, else 0): plan `global_options()` and apply its process-wide
    part. One device per process, as on Ascend: the same id again returns it, until the changes registry undoes
    the opening."""
    if device_id is None:
        device_id = ranks.device_id() or 0
    with _lock:
        if _handle is not None:
            if _handle.device_id == device_id:
                return _handle
            raise RuntimeError(
                f"Failed create npu instance on device {device_id} as existed instance on [{_handle.device_id}]"
            )
        workers = ranks.rank_size()
        worker_id = _join_ranks() if workers > 1 else 0
        tree = changes.state(PROGRAM_OPTIONS)
        plan = plan_options(tree)
        enter_plan(plan, TF2_DOOR)
        _configure_devices(plan, device_id, several_ranks=workers > 1)
        handle = NpuDeviceHandle(device_id, workers, worker_id, plan)
        changes.enter(
            _Opened(handle, tree),
            OPENED,
            owner=OWNER,
            reason=f"device {device_id} is open with the plan of global_options() (undone: open() plans them again)",
            value=device_id,
        )
        return handle


class _Opened(contextlib.AbstractContextManager):
    """While entered, `handle` is the process's device, opened with the options of `tree`. A class, not a
    generator: a generator still suspended when the interpreter shuts down is closed then, and its cleanup would
    run against modules already torn down."""

    def __init__(self, handle: NpuDeviceHandle, tree: tf2_options.OptionGroup) -> None:
        self._handle, self._tree = handle, tree

    def __enter__(self) -> None:
        global _handle
        _handle = self._handle
        tf2_options.mark_read(self._tree)

    def __exit__(self, *exception) -> None:
        global _handle
        _handle = None
        tf2_options.mark_read(self._tree, read=False)


def _join_ranks() -> int:
    """Join the job's ranks; the cluster's checks (rank table and RANK_ID, or CM_*) are the adapter's."""
    from npu_bridge_compat.distributed.collective_runtime import start

    return start().cluster.rank


def plan_options(tree: tf2_options.OptionGroup, host: HostFacts | None = None) -> HostPlan:
    """The host plan of the options assigned in `tree` (open() plans global_options() so), for `host` (this host, as
    a door plans, by default)."""
    values, names, recompute = tf2_options.assigned(tree)
    try:
        options = build_options(values, tf2_options.SOURCE, names)
    except NpuConfigError as error:
        text = str(error)
        renamed = [f"{key} is {name}" for key, name in names.items() if key in text and name not in text]
        if renamed:
            error.add_note(f"npu_device names these options: {', '.join(renamed)}")
        raise
    if host is None:
        return plan_for_door(options, recompute=recompute)
    return build_plan(options, host, recompute=recompute)


def _configure_devices(plan: HostPlan, device_id: int, several_ranks: bool) -> None:
    """The device id's GPU, its memory cap and the thread pools, through tf.config, which takes them only before
    TensorFlow starts its runtime."""
    wanted = [
        f for f in plan.features if isinstance(f, (VisibleDevice, GpuMemoryLimit, InterOpThreads, IntraOpThreads))
    ]
    gpus = tf.config.list_physical_devices("GPU")
    if eager_context_started():
        if wanted:
            warn(
                f"npu_device.open() came after TensorFlow started, so {', '.join(map(str, wanted))} cannot take "
                "effect; open the device before creating tensors.",
                NpuCompatWarning,
            )
        return
    chosen = gpus
    if gpus and not several_ranks:  # a rank's GPU is chosen when it joins the ranks
        index = next((f.index for f in wanted if isinstance(f, VisibleDevice)), device_id)
        chosen = [gpus[index]] if index < len(gpus) else gpus
        configure = functools.partial(tf.config.set_visible_devices, chosen, "GPU")
        _fixed("visible GPUs", [gpu.name for gpu in chosen], configure)
    for feature in wanted:
        if isinstance(feature, GpuMemoryLimit):
            for gpu in chosen:
                limit = [tf.config.LogicalDeviceConfiguration(memory_limit=feature.megabytes)]
                configure = functools.partial(tf.config.set_logical_device_configuration, gpu, limit)
                _fixed(f"{gpu.name} memory limit", feature.megabytes, configure)
        elif isinstance(feature, InterOpThreads):
            setter = tf.config.threading.set_inter_op_parallelism_threads
            _fixed("inter-op threads", feature.count, functools.partial(setter, feature.count))
        elif isinstance(feature, IntraOpThreads):
            setter = tf.config.threading.set_intra_op_parallelism_threads
            _fixed("intra-op threads", feature.count, functools.partial(setter, feature.count))


def _fixed(what: str, value, apply) -> None:
    """A device setting TensorFlow fixes when its runtime starts: registered as irreversible."""
    changes.change_irreversibly(
        f"TensorFlow {what}", value, apply, owner=OWNER, reason="npu_device.open(): the device's settings"
    )


class NpuDeviceHandle:
    """The opened device, as the adapter's NpuDeviceHandle: `workers_num`, `worker_id`, `as_default()`."""

    def __init__(self, device_id: int, workers_num: int, worker_id: int, plan: HostPlan) -> None:
        self.device_id, self.workers_num, self.worker_id, self.npu_plan = device_id, workers_num, worker_id, plan

    def name(self) -> str:
        return f"/job:localhost/replica:0/task:0/device:NPU:{self.device_id}"

    def is_cluster_worker(self) -> bool:
        return self.workers_num > 1 and self.workers_num > self.worker_id >= 0

    def scope(self):
        """The adapter places ops on the NPU here; a host runs them where TensorFlow places them."""
        return contextlib.nullcontext()

    def as_default(self) -> NpuDeviceHandle:
        """Apply the plan to everything the script runs from now on (see the module's docstring), through the
        changes registry (again: a no-op); the profiler trace is written when the process exits."""
        self._default_change = changes.enter(
            function_calls_configured(self.npu_plan.configure_function_calls),
            "the main thread's function-call config",
            owner=OWNER,
            reason="grappler settings and graph-kernel fusion for every function the program and Keras call",
        )
        trace = self.npu_plan.feature(ProfilerTrace)
        if trace is not None:
            changes.enter(
                profiler_trace(trace.output),
                PROFILER_TRACE,
                owner=OWNER,
                reason=f"profiling_mode: a trace of the process under {trace.output}",
            )
            changes.add_exit_handler(
                _write_profiler_trace,
                owner=OWNER,
                reason="the profiler writes its trace when it stops, at the latest when the process exits",
                label="write the profiler trace",
            )
        replace_function_decorator(with_units(self.npu_plan), owner=OWNER)
        add_callback_to_model_calls(tf.keras.Model, self._keras_callback, owner=OWNER)
        return self

    _default_change: changes.Change | None = None  # as_default()'s, while the handle is the default

    def is_default(self) -> bool:
        """Whether `as_default()` made this device the default and its changes are in force."""
        return self._default_change is not None and changes.is_in_force(self._default_change)

    def _keras_callback(self, model):
        """The run-time core's callback for one fit/evaluate/predict call, carrying what must be built into Keras'
        traced steps (dumps, numeric checks, keep-dtype under mixed precision, the fusion report); None when the
        plan has none of it, since the process already holds the rest of the plan (its profiler trace too)."""
        _check_loop_size(model)
        note_program_policy(self.npu_plan.host)
        if self._per_call_plan is None:
            return None
        return PlanCallback(self._per_call_plan, step_loop=False)

    @functools.cached_property
    def _per_call_plan(self) -> HostPlan | None:
        """The plan a Keras call carries out (the loop is the program's own steps_per_execution); None when it
        has nothing to build into the traced steps."""
        built_in = (TensorDump, NumericChecks, MixedPrecision, GraphKernelFusion)  # fusion: its report of clusters
        if not any(isinstance(f, built_in) for f in self.npu_plan.features):
            return None
        per_call = tuple(kind for kind in KERAS_CALL_FEATURES if kind is not ProfilerTrace)
        return narrowed(self.npu_plan, per_call)


def _write_profiler_trace() -> None:
    changes.undo(changes=[change for change in changes.in_force(OWNER) if change.target == PROFILER_TRACE])


def _check_loop_size(model) -> None:
    from npu_bridge_compat.compat import keras_steps_per_execution

    size = loop_size()
    if size == 1:
        return
    try:
        steps = keras_steps_per_execution(model)
    except (TypeError, ValueError):  # not a number of steps: Keras itself says what it takes
        return
    if steps != size:
        warn(
            f"the NPU loop size is {size} ({LOOP_SIZE_VARIABLE} or set_npu_loop_size) but the model runs "
            f"{steps} step(s) per call (compile's steps_per_execution); Ascend's docs require them equal. On this "
            "host the model runs as compiled.",
            NpuCompatWarning,
        )


def enable_v1() -> None:
    """TF1 behaviour from now on (`tf.compat.v1.disable_v2_behavior()`), with the TF1 adapter's API under
    `npu_device.compat.v1`. The device id opened so far stays the TF1 adapter's (ASCEND_DEVICE_ID)."""
    if _handle is not None:
        changes.set_environment(
            "ASCEND_DEVICE_ID",
            str(_handle.device_id),
            owner=OWNER,
            reason="the TF1 adapter's API under npu_device.compat.v1 reads the device opened so far",
        )
    disable_v2_behaviour(
        owner=OWNER, reason="npu_device.compat.enable_v1: TF1 behaviour from now on, as in the adapter"
    )
