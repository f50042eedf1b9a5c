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

import dataclasses
from typing import Any

import tensorflow as tf
from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2

from npu_bridge_compat.compat.batchnorm import install_horizon_gate
from npu_bridge_compat.compat.sessions import session_running_hooks, session_without_runtime
from npu_bridge_compat.distributed import get_local_rank_id, get_local_rank_size, get_rank_id, get_rank_size
from npu_bridge_compat.distributed.rank_doors import rank_session
from npu_bridge_compat.errors import NpuOptionValueError
from npu_bridge_compat.estimator_library import estimator_class
from npu_bridge_compat.options import options_from_config_proto
from npu_bridge_compat.options.readers import NPU_OPTIMIZER
from npu_bridge_compat.plan.features import BatchNormWorkaround
from npu_bridge_compat.runtime.doors import RUN_UNITS, SESSION_SETTINGS, Door, enter_plan, plan_for_door
from npu_bridge_compat.runtime.loop import LoopServer
from npu_bridge_compat.runtime.probes import StepProbes
from npu_bridge_compat.runtime.units import SETTLING_UNITS, units_for

SESSION_DOOR = Door("NPUSession", (*RUN_UNITS, *SESSION_SETTINGS), measures_precision=True)
V3_BATCH_NORM_OPS = frozenset({"FusedBatchNormV3", "FusedBatchNormGradV3"})


def _plan_for(config, source: str, door: Door | None = None):
    options = options_from_config_proto(config or config_pb2.ConfigProto(), source=source)
    plan = plan_for_door(options, config=config)
    enter_plan(plan, door)
    return plan


def host_session_config(config=None) -> config_pb2.ConfigProto:
    """The host ConfigProto for a config carrying NPU options (for MonitoredTrainingSession, InteractiveSession
    and any API that takes a session config); the options are validated and the report logged once."""
    return _plan_for(config, "session config").host_config(config)


class NPUSession(tf.compat.v1.Session):
    """`tf.compat.v1.Session` that honours the NpuOptimizer options of its config.

    Its runs go through the plan's run-time units (as hooks, driven the way MonitoredSession drives hooks; their
    `begin` comes before the first run, when the graph is built) and through the loop server, which answers
    fetches made together with a looped train op from the loop.
    """

    def __init__(self, target: str = "", graph=None, config=None) -> None:
        session_without_runtime(self)  # should the options be refused below
        self.npu_plan = _plan_for(config, "Session config", SESSION_DOOR)
        self.npu_options = self.npu_plan.options
        self._graph_version_checked = -1
        self._ops_checked = 0
        self._begun = False
        host_config = self.npu_plan.host_config(config)
        target, host_config = rank_session(target, host_config)  # several ranks: this rank's server
        self._caller_thread_allowed = bool(host_config.session_inter_op_thread_pool)  # see runtime/loop.py
        super().__init__(target, graph, host_config)
        self._loops = LoopServer(self.graph, self._probes_for)
        self._units = units_for(self.npu_plan)
        self._hooked = session_running_hooks(_PlainRuns(self), self._units) if self._units else None
        # Units that settle what a run adds alone let a settled run skip the hook driver (units.SETTLING_UNITS).
        self._settling = self._units if all(isinstance(unit, SETTLING_UNITS) for unit in self._units) else ()
        for unit in self._units:
            unit.after_create_session(self, None)

    def _prepare_new_ops(self) -> None:
        """Check the ops added since the last run, and begin the units before the first run; TensorFlow has not
        seen the new ops yet, so they can still be changed."""
        operations = self.graph.get_operations()
        new_ops, self._ops_checked = operations[self._ops_checked :], len(operations)
        self._graph_version_checked = self.graph.version
        if self.npu_plan.feature(BatchNormWorkaround):
            v3 = [op.name for op in new_ops if op.type in V3_BATCH_NORM_OPS]
            if v3:
                raise NpuOptionValueError(
                    f"mix_compile_mode is True but the graph has FusedBatchNormV3 ops ({', '.join(v3[:3])}"
                    f"{', ...' if len(v3) > 3 else ''}), which mixed compute cannot run on the NPU. Build the model "
                    "inside `with tf.compat.forward_compatibility_horizon(2019, 5, 1):` (as Ascend's mixed-compute "
                    "guide says) so that batch norm uses FusedBatchNorm / FusedBatchNormV2."
                )
        if not self._begun:
            self._begun = True
            with self.graph.as_default():
                for unit in self._units:
                    unit.begin()

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self.graph.version != self._graph_version_checked:
            self._prepare_new_ops()
        if self._hooked is not None:
            targets = self._settled(fetches, feed_dict) if self._settling and not self._loops.serves_any else None
            if targets is None:
                return self._hooked.run(fetches, feed_dict, options, run_metadata)
            if not targets:
                return super().run(fetches, feed_dict, options, run_metadata)
            return super().run((fetches, *targets), feed_dict, options, run_metadata)[0]
        if not self._loops.serves_any:  # the common case, kept short: a plain run
            return super().run(fetches, feed_dict, options, run_metadata)
        return self._plain_run(fetches, feed_dict, options, run_metadata)

    def _settled(self, fetches, feed_dict) -> tuple | None:
        """The extra targets the settling units add to this run, or None while one is unsettled."""
        targets: tuple = ()
        for unit in self._settling:
            more = unit.settled(fetches, feed_dict)
            if more is None:
                return None
            targets += more
        return targets

    def _plain_run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """A run with the loop server, without the units."""
        return self._loops.run(super().run, fetches, feed_dict, options, run_metadata, self._caller_thread_allowed)

    def _probes_for(self, looped) -> StepProbes | None:
        """The dumps and checks built into the iterations of a looped train op (named after its train op)."""
        return StepProbes.for_plan(self.npu_plan, graph_name=looped.train_op.name)

    def close(self) -> None:
        for unit in self._units:
            unit.end(self)  # the profiler writes its trace now
        super().close()


class _PlainRuns:
    """What the hook driver wraps: the session's runs, served by the loop server."""

    def __init__(self, session: NPUSession) -> None:
        self.graph = session.graph
        self.run = session._plain_run


# --- the adapter's ConfigProto helpers ----------------------------------------------------------------------


def npu_config_proto(config_proto=None) -> config_pb2.ConfigProto:
    """The adapter's helper: a ConfigProto with an NpuOptimizer entry (added once, turning memory optimisation
    off), soft placement, no remapping and XLA off. From now on, graphs built under
    `forward_compatibility_horizon(2019, 5, 1)` get the pre-V3 batch norm, as mixed compute needs."""
    install_horizon_gate()
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
    options = (
        optimizer_options
        if isinstance(optimizer_options, config_pb2.OptimizerOptions)
        else config_pb2.OptimizerOptions()
    )
    options.global_jit_level = config_pb2.OptimizerOptions.OFF
    return options


def npu_run_config_init(run_config=None):
    """The adapter's helper for a plain RunConfig: its session config's NPU options, translated for this host."""
    run_config = estimator_class("RunConfig")() if run_config is None else run_config
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
