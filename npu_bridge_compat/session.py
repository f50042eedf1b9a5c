"""The session door: NPUSession and the adapter's ConfigProto and resource helpers.

    config = npu_config_proto(config_proto=tf.compat.v1.ConfigProto())
    custom_op = config.graph_options.rewrite_options.custom_optimizers[0]
    custom_op.parameter_map["precision_mode"].s = b"allow_mix_precision"
    with NPUSession(config=config) as sess:
        ...

NPUSession reads the NpuOptimizer options through the translator, hands TensorFlow the host config (no
NpuOptimizer entry, no explicit grappler optimizer list, plus the plan's edits), sets the plan's environment, logs
the report once, keeps host-kept ops (without_npu_compile_scope, in_out_pair regions) off the accelerator, and
serves fetches made together with a looped train op from the loop (their last-iteration values).
For MonitoredTrainingSession and InteractiveSession, `host_session_config(config)` gives the host config.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

import tensorflow as tf
from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2

from npu_bridge_compat.distributed import get_local_rank_id, get_local_rank_size, get_rank_id, get_rank_size
from npu_bridge_compat.distributed.doors import rank_session
from npu_bridge_compat.errors import NpuOptionValueError
from npu_bridge_compat.host import build_plan, log_once
from npu_bridge_compat.host.apply import (
    PROCESS_FEATURES,
    apply_environment,
    apply_process_settings,
    warn_unapplied,
)
from npu_bridge_compat.host.batchnorm import install_horizon_gate
from npu_bridge_compat.host.dump import TensorDumper
from npu_bridge_compat.host.features import (
    BatchNormWorkaround,
    HostRegions,
    NumericChecks,
    ProfilerTrace,
    StepLoop,
    TensorDump,
)
from npu_bridge_compat.host.numeric import numeric_check
from npu_bridge_compat.host.placement_graph import host_region_ops, keep_on_host
from npu_bridge_compat.host.profiling import profiler_trace
from npu_bridge_compat.host.step_probes import StepProbes
from npu_bridge_compat.host.subgraph import (
    fetched_operations,
    kept_dtype_operations,
    keeping_dtype,
    step_operations,
    warn_kept_in_loop,
)
from npu_bridge_compat.options import options_from_config_proto
from npu_bridge_compat.options.readers import NPU_OPTIMIZER
from npu_bridge_compat.util import looped_train_ops

install_horizon_gate()  # graphs built under forward_compatibility_horizon(2019, 5, 1) get the pre-V3 batch norm

V3_BATCH_NORM_OPS = frozenset({"FusedBatchNormV3", "FusedBatchNormGradV3"})


def _plan_for(config, source: str):
    options = options_from_config_proto(config or config_pb2.ConfigProto(), source=source)
    plan = build_plan(options, config=config)
    log_once(plan.report)
    apply_environment(plan)
    apply_process_settings(plan)
    return plan


def host_session_config(config=None) -> config_pb2.ConfigProto:
    """The host ConfigProto for a config carrying NPU options (for MonitoredTrainingSession, InteractiveSession
    and any API that takes a session config); the options are validated and the report logged once."""
    return _plan_for(config, "session config").host_config(config)


class NPUSession(tf.compat.v1.Session):
    """`tf.compat.v1.Session` that honours the NpuOptimizer options of its config."""

    def __init__(self, target: str = "", graph=None, config=None) -> None:
        self._session = None  # what Session.__del__ looks at, should the options be refused below
        self.npu_plan = _plan_for(config, "Session config")
        self.npu_options = self.npu_plan.options
        self._graph_version_checked = -1
        self._ops_checked = 0
        self._loops: list = []
        self._loop_probes: dict[str, StepProbes | None] = {}  # train op name -> probes built into its loop
        self._initialised: set = set()  # refs of the probes' variables this session initialised
        warn_unapplied(self.npu_plan, "NPUSession",
                       (StepLoop, BatchNormWorkaround, HostRegions, ProfilerTrace, TensorDump, NumericChecks,
                        *PROCESS_FEATURES))
        dump = self.npu_plan.feature(TensorDump)
        # What adds fetches to each run, in the order their results are handled: keep_dtype_scope under mixed
        # precision, numeric checks (which stop a failing step before its dump is written, as before), dumps.
        self._extensions = ([_KeepDtype()] if self.npu_plan.uses_mixed_precision else []) + \
            ([_NumericChecks(self.npu_options.dump_path or None)] if self.npu_plan.feature(NumericChecks) else []) + \
            ([_Dumps(dump)] if dump is not None else [])
        trace = self.npu_plan.feature(ProfilerTrace)
        self._profiler = contextlib.ExitStack()
        host_config = self.npu_plan.host_config(config)
        if self.npu_plan.feature(StepLoop) and not host_config.session_inter_op_thread_pool:
            # Configured pools let a run choose the caller's thread (see _served_by_loop); pool 0 is the pool
            # the session would have had.
            host_config.session_inter_op_thread_pool.add(num_threads=host_config.inter_op_parallelism_threads)
        target, host_config = rank_session(target, host_config)  # several ranks: this rank's server
        self._caller_thread_allowed = bool(host_config.session_inter_op_thread_pool)
        super().__init__(target, graph, host_config)
        if trace is not None:
            self._profiler.enter_context(profiler_trace(trace.output))

    def _prepare_new_ops(self) -> None:
        """Check and place the ops added since the last run; TensorFlow has not seen them yet, so they can still
        be changed."""
        operations = self.graph.get_operations()
        new_ops, first = operations[self._ops_checked:], self._ops_checked == 0
        self._ops_checked, self._graph_version_checked = len(operations), self.graph.version
        if self.npu_plan.feature(BatchNormWorkaround):
            v3 = [op.name for op in new_ops if op.type in V3_BATCH_NORM_OPS]
            if v3:
                raise NpuOptionValueError(
                    f"mix_compile_mode is True but the graph has FusedBatchNormV3 ops ({', '.join(v3[:3])}"
                    f"{', ...' if len(v3) > 3 else ''}), which mixed compute cannot run on the NPU. Build the model "
                    "inside `with tf.compat.forward_compatibility_horizon(2019, 5, 1):` (as Ascend's mixed-compute "
                    "guide says) so that batch norm uses FusedBatchNorm / FusedBatchNormV2.")
        regions = self.npu_plan.feature(HostRegions)
        if regions is not None and first:
            keep_on_host(host_region_ops(self.graph, regions), self.npu_plan.host)
        self._loops = looped_train_ops(self.graph)  # a new loop adds ops, so this stays current
        if self.npu_plan.uses_mixed_precision:
            for looped in self._loops:
                if looped.loop_op in new_ops:  # the loop runs a copy of the step, which no run fetches
                    warn_kept_in_loop(keeping_dtype(step_operations(self.graph, [looped.train_op])),
                                      "the set_iteration_per_loop loop")

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self._graph.version != self._graph_version_checked:
            self._prepare_new_ops()
        looped = None
        if self._loops:
            fetches, looped, probes = _served_by_loop(fetches, self._loops, self._probes_for)
            if looped is not None and looped.is_simple and self._caller_thread_allowed:
                options = _in_caller_thread(options)
            if probes is not None:  # the loop dumps and checks its own iterations
                self._initialise(probes.variables)
                results = super().run(fetches, feed_dict, options, run_metadata)
                if probes.failure is not None:
                    probes.raise_if_failed(super().run(probes.failure))
                return results
        if not self._extensions or looped is not None:
            return super().run(fetches, feed_dict, options, run_metadata)
        fetched = fetched_operations(fetches)
        key = tuple(op.name for op in fetched)  # one fetch structure: one graph on Ascend, one cache entry here
        extras = [(extension, extension.extra_fetches(self.graph, key, fetched)) for extension in self._extensions]
        extras = [(extension, extra) for extension, extra in extras if extra is not None]
        if not extras:
            return super().run(fetches, feed_dict, options, run_metadata)
        results, values = super().run((fetches, [extra for _, extra in extras]), feed_dict, options, run_metadata)
        for (extension, _), value in zip(extras, values):
            extension.after_run(key, value)
        return results

    def _probes_for(self, looped) -> StepProbes | None:
        """The dumps and checks built into the iterations of a looped train op (one set per loop, named after
        its train op), if the options ask for any."""
        name = looped.train_op.name
        if name not in self._loop_probes:
            with self.graph.as_default():
                self._loop_probes[name] = StepProbes.for_plan(self.npu_plan, graph_name=name)
        return self._loop_probes[name]

    def _initialise(self, variables: list) -> None:
        """Initialise variables this session made after the script ran its initialisers."""
        new = [v for v in variables if v.ref() not in self._initialised]
        if new:
            super().run([v.initializer for v in new])
            self._initialised.update(v.ref() for v in new)

    def close(self) -> None:
        self._profiler.close()  # the trace is written when the session ends
        super().close()


class _KeepDtype:
    """Ops under keep_dtype_scope stay float32: they become targets of the runs that compute them, and grappler's
    mixed-precision pass never converts a node a run must preserve. Targets return nothing, so this costs no
    copy; only ops the run computes anyway are named, so nothing extra runs."""

    def __init__(self) -> None:
        self._kept: dict[tuple, list] = {}

    def extra_fetches(self, graph, key, fetched):
        if key not in self._kept:
            self._kept[key] = kept_dtype_operations(graph, fetched) if fetched else []
        return self._kept[key] or None

    def after_run(self, key, value) -> None:
        """Targets return nothing."""


class _NumericChecks:
    """Finiteness flags over the tensors each fetch structure computes; a non-finite output stops the step."""

    def __init__(self, dump_path: str | None) -> None:
        self._dump_path = dump_path  # where a failing op's inputs are saved
        self._checks: dict[tuple, Any] = {}

    def extra_fetches(self, graph, key, fetched):
        if key not in self._checks:
            self._checks[key] = numeric_check(graph, fetched, self._dump_path) if fetched else None
        return self._checks[key].flags if self._checks[key] is not None else None

    def after_run(self, key, flags) -> None:
        self._checks[key].raise_if_non_finite(flags)


class _Dumps:
    """Dumps the selected steps of each distinct fetch structure (each is its own graph on Ascend, with its own
    iteration count); the directory is named after the first fetch."""

    def __init__(self, feature) -> None:
        self._feature = feature
        self._dumpers: dict[tuple, list] = {}  # fetch names -> [dumper, steps run so far]

    def extra_fetches(self, graph, key, fetched):
        if key not in self._dumpers:
            self._dumpers[key] = [TensorDumper(self._feature, key[0] if key else "run"), 0]
        dumper, step = self._dumpers[key]
        self._dumpers[key][1] += 1
        wanted = dumper.fetches(graph, fetched) if fetched and dumper.selects(step) else {}
        return wanted or None

    def after_run(self, key, values) -> None:
        dumper, steps = self._dumpers[key]
        dumper.write(steps - 1, values)


def _served_by_loop(fetches, loops, probes_for):
    """Fetches that include a looped train op, with the other tensors taken from the loop's last iteration and
    the loop built with the probes `probes_for(looped)` gives; the looped train op the run executes (or None)
    and those probes (or None)."""
    by_op = {looped.loop_op: looped for looped in loops}
    flat = tf.nest.flatten(fetches)
    looped = next((by_op[f] for f in flat if isinstance(f, tf.Operation) and f in by_op), None)
    if looped is None:
        return fetches, None, None
    tensors = [f for f in flat if isinstance(f, tf.Tensor)]
    probes = probes_for(looped)
    if not tensors and probes is None:
        return fetches, looped, None
    loop_op, carried = looped.loop_fetching(tensors, probes)
    replacement = {tensor.ref(): value for tensor, value in zip(tensors, carried)}
    rewritten = [loop_op if f is looped.loop_op else replacement[f.ref()] if isinstance(f, tf.Tensor) else f
                 for f in flat]
    return tf.nest.pack_sequence_as(fetches, rewritten), looped, probes


def _in_caller_thread(options):
    """Run options that execute the run in the calling thread. A loop runs its iterations one after another
    anyway; without a thread hand-off per op a small step runs several times faster on a few cores
    (benchmarks/session_iterations_per_loop.py)."""
    chosen = config_pb2.RunOptions()
    if options is not None:
        chosen.CopyFrom(options)
    chosen.inter_op_thread_pool = -1  # TensorFlow's value for "the caller's thread"
    return chosen


# --- the adapter's ConfigProto helpers ----------------------------------------------------------------------

def npu_config_proto(config_proto=None) -> config_pb2.ConfigProto:
    """The adapter's helper: a ConfigProto with an NpuOptimizer entry (added once, turning memory optimisation
    off), soft placement, no remapping and XLA off."""
    config = config_proto if isinstance(config_proto, config_pb2.ConfigProto) else config_pb2.ConfigProto()
    rewrite = config.graph_options.rewrite_options
    if not any(entry.name == NPU_OPTIMIZER for entry in rewrite.custom_optimizers):
        rewrite.custom_optimizers.add().name = NPU_OPTIMIZER
        rewrite.memory_optimization = rewriter_config_pb2.RewriterConfig.NO_MEM_OPT
    config.allow_soft_placement = True
    config.log_device_placement = False
    rewrite.remapping = rewriter_config_pb2.RewriterConfig.OFF
    config.graph_options.optimizer_options.global_jit_level = config_pb2.OptimizerOptions.OFF
    return config


def npu_graph_options(graph_options=None) -> config_pb2.GraphOptions:
    """The adapter's helper: GraphOptions with XLA off."""
    options = graph_options if isinstance(graph_options, config_pb2.GraphOptions) else config_pb2.GraphOptions()
    options.optimizer_options.global_jit_level = config_pb2.OptimizerOptions.OFF
    return options


def npu_optimizer_options(optimizer_options=None) -> config_pb2.OptimizerOptions:
    """The adapter's helper: OptimizerOptions with XLA off."""
    options = (optimizer_options if isinstance(optimizer_options, config_pb2.OptimizerOptions)
               else config_pb2.OptimizerOptions())
    options.global_jit_level = config_pb2.OptimizerOptions.OFF
    return options


def npu_run_config_init(run_config=None):
    """The adapter's helper for a plain RunConfig: its session config's NPU options, translated for this host."""
    run_config = tf.estimator.RunConfig() if run_config is None else run_config
    config = config_pb2.ConfigProto()
    if run_config.session_config is not None:
        config.CopyFrom(run_config.session_config)
    return run_config.replace(session_config=host_session_config(npu_config_proto(config)))


# --- resources and ranks ------------------------------------------------------------------------------------

@dataclasses.dataclass
class _Ranks:
    rank_id: int = 0
    local_rank_id: int = 0
    rank_size: int = 1
    local_rank_size: int = 1


_ranks = _Ranks()


def init_resource(config=None) -> tuple[Any, Any]:
    """The adapter's helper: a session for the config and the op that shuts the device down (a no-op here)."""
    _ranks.rank_id, _ranks.rank_size = get_rank_id(), get_rank_size()
    _ranks.local_rank_id, _ranks.local_rank_size = get_local_rank_id(), get_local_rank_size()
    session = NPUSession(config=config)
    with session.graph.as_default():
        shutdown = tf.no_op(name="npu_shutdown_system")
    return session, shutdown


def shutdown_resource(session, shutdown_op) -> None:
    session.run(shutdown_op)


def close_session(session) -> None:
    session.close()


def get_npu_rank_id() -> int:
    return _ranks.rank_id


def get_npu_local_rank_id() -> int:
    return _ranks.local_rank_id


def get_npu_rank_size() -> int:
    return _ranks.rank_size


def get_npu_local_rank_size() -> int:
    return _ranks.local_rank_size


class NpuEmptyHook(tf.compat.v1.train.SessionRunHook):
    """The adapter's empty hook."""
