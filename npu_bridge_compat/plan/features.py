"""The host plan's features: each one thing to do on this host, as a small typed value.

A feature is data: what to do, never done here. Settings say how they edit a configuration the door owns:
- `SessionSetting`: a field of the session's ConfigProto (`apply_to`, editing the copy the door hands TensorFlow).
  `RewriteSetting`s are grappler rewrite options, which also reach the functions Keras traces.
- `ProcessSetting`: a process-wide TensorFlow switch or environment variable (`environment` names the
  variables); the run-time core applies it when a door enters the plan (`runtime/process.py`), through the
  changes registry.
- `RunUnitFeature`: carried out around training runs by a run-time unit (`npu_bridge_compat.runtime`).
Which doors carry out which kinds is declared by the doors (`runtime/doors.py`). Building a plan changes nothing in
the process.
"""

from __future__ import annotations

import dataclasses
import enum
import os
from collections.abc import Mapping

from npu_bridge_compat.options.grammars import InOutPair

AMP_ENV_PREFIX = "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_"  # grappler reads its mixed-precision lists here


class Feature:
    """Base of the plan's features."""

    def environment(self) -> Mapping[str, str]:
        """Environment variables this feature needs (read by TensorFlow process-wide)."""
        return {}


class SessionSetting(Feature):
    """A setting of the session's ConfigProto."""

    def apply_to(self, config) -> None:
        raise NotImplementedError


class RewriteSetting(SessionSetting):
    """A grappler rewrite option: set in a session's config, or in the config Keras' function calls carry."""

    def apply_to(self, config) -> None:
        self.rewrite(config.graph_options.rewrite_options)

    def rewrite(self, rewrite_options) -> None:
        raise NotImplementedError


class ProcessSetting(Feature):
    """A process-wide switch or environment variable, applied by the run-time core when a door enters the plan."""


class RunUnitFeature(Feature):
    """Carried out around training runs by a run-time unit of the door."""


# --- run-time units -----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class StepLoop(RunUnitFeature, SessionSetting):
    """Run `iterations` training steps per session run / train-function call."""

    iterations: int

    def apply_to(self, config) -> None:
        # A configured inter-op pool lets a looped run of a small step choose the caller's thread (runtime/loop.py);
        # pool 0 is the pool the session would have had.
        if not config.session_inter_op_thread_pool:
            config.session_inter_op_thread_pool.add(num_threads=config.inter_op_parallelism_threads)


@dataclasses.dataclass(frozen=True)
class BatchNormWorkaround(RunUnitFeature):
    """Build graphs with the pre-FusedBatchNormV3 ops (FusedBatchNorm / FusedBatchNormV2), for mixed compute."""


@dataclasses.dataclass(frozen=True)
class HostRegions(RunUnitFeature):
    """Mixed-compute regions from in_out_pair; `on_host` is True when they stay on the host CPU."""

    pairs: tuple[InOutPair, ...]
    on_host: bool


@dataclasses.dataclass(frozen=True)
class ProfilerTrace(RunUnitFeature):
    """Trace the training steps with the TensorFlow profiler into `output`."""

    output: str
    options: Mapping[str, str]


@dataclasses.dataclass(frozen=True)
class TensorDump(RunUnitFeature):
    """Write op tensors of the selected steps under `path` (`steps` empty: every step)."""

    path: str
    steps: tuple[tuple[int, int], ...]
    mode: str  # input | output | all
    data: str  # tensor | stats
    layers: tuple[str, ...]  # op names to restrict the dump to; empty: all


@dataclasses.dataclass(frozen=True)
class NumericChecks(RunUnitFeature):
    """Stop training at the first op (in graph order) with an Inf/NaN output, naming it; with `dump_path`, save
    that op's inputs there."""

    dump_path: str | None = None


@dataclasses.dataclass(frozen=True)
class GraphKernelFusion(RunUnitFeature, SessionSetting):
    """Graph-kernel fusion: XLA auto-clustering of the fusible ops (element-wise, reductions, shapes; the process
    flags of compat/xla.py keep MatMul and Conv out), each cluster compiled into one fused kernel. `mode` "on"
    fuses every function; "auto" runs each function's first calls (a session's run signature, a Keras or TF2
    function) in both forms and keeps the faster (runtime/fusion.py), so a function not yet decided runs
    unfused. Sessions take it in their config, functions in their call config; a run-time unit measures and
    reports. The run-time core reserves XLA's process flags for it (compat/xla.py) when a door enters the plan."""

    mode: str = "auto"

    @property
    def measured(self) -> bool:
        return self.mode == "auto"

    def apply_to(self, config) -> None:
        """A session's config: clustered ("on"), or left to the process's XLA flag, which the run-time unit sets
        while a signature's fused form is built ("auto")."""
        from tensorflow.core.protobuf import config_pb2

        levels = config_pb2.OptimizerOptions
        config.graph_options.optimizer_options.global_jit_level = levels.DEFAULT if self.measured else levels.ON_1

    def apply_to_function_calls(self, config, fused: bool | None = None) -> None:
        """A function call's config: fused or not (`fused`), or else as the mode says (auto: unfused until the
        function's runs decide)."""
        from tensorflow.core.protobuf import config_pb2

        fused = (self.mode == "on") if fused is None else fused
        levels = config_pb2.OptimizerOptions
        config.graph_options.optimizer_options.global_jit_level = levels.ON_1 if fused else levels.OFF


# --- session settings ---------------------------------------------------------------------------------------


class PrecisionChoice(str, enum.Enum):
    """Who decides whether a planned mixed-precision pass runs (`MixedPrecision.choice`)."""

    KEPT = "kept"  # it runs: the host computes it fast (GPU tensor cores) or the user asked for it
    MEASURED = "measured"  # each function's first runs try it and float32 and keep the faster (runtime/precision.py)
    PROBED = "probed"  # the flags cannot tell: a host probe (once per CPU and TensorFlow version) first, then MEASURED

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True)
class MixedPrecision(RewriteSetting):
    """A grappler mixed-precision pass (`grappler_pass`: its RewriterConfig field) computing in `dtype`, its
    op-list edits (`lists`: ALLOWLIST_ADD, DENYLIST_REMOVE, ... -> op types), whether it converts every op it can,
    and who decides whether it runs (`choice`: the run-time core resolves PROBED and MEASURED)."""

    grappler_pass: str
    lists: tuple[tuple[str, tuple[str, ...]], ...] = ()
    force_all: bool = False
    dtype: str = "bfloat16"
    choice: PrecisionChoice = PrecisionChoice.KEPT

    def rewrite(self, rewrite_options) -> None:
        setattr(rewrite_options, self.grappler_pass, _toggle(True))

    def rewrite_form(self, rewrite_options, reduced: bool) -> None:
        """The pass on (the reduced-precision form) or off (the float32 form), for one function call's config."""
        setattr(rewrite_options, self.grappler_pass, _toggle(reduced))

    def environment(self) -> Mapping[str, str]:
        variables = {AMP_ENV_PREFIX + name: ",".join(ops) for name, ops in self.lists}
        if self.force_all:
            variables[AMP_ENV_PREFIX + "LEVEL"] = "UNSAFE_FORCE_ALL"
        return variables


@dataclasses.dataclass(frozen=True)
class GrapplerSwitch(RewriteSetting):
    """Turn one grappler pass (a RewriterConfig toggle such as `remapping`) on or off."""

    optimizer: str
    on: bool

    def rewrite(self, rewrite_options) -> None:
        setattr(rewrite_options, self.optimizer, _toggle(self.on))


@dataclasses.dataclass(frozen=True)
class Recomputation(RewriteSetting):
    """Grappler's memory optimizer recomputes activations instead of keeping them: `mode` is a
    RewriterConfig.MemOptType name (RECOMPUTATION_HEURISTICS, MANUAL)."""

    mode: str

    def rewrite(self, rewrite_options) -> None:
        from tensorflow.core.protobuf import rewriter_config_pb2

        rewrite_options.memory_optimization = rewriter_config_pb2.RewriterConfig.MemOptType.Value(self.mode)


@dataclasses.dataclass(frozen=True)
class GpuMemoryLimit(SessionSetting):
    """Cap the memory TensorFlow takes on the GPU: one virtual GPU of that size."""

    megabytes: int

    def apply_to(self, config) -> None:
        config.gpu_options.experimental.ClearField("virtual_devices")
        config.gpu_options.experimental.virtual_devices.add().memory_limit_mb.append(self.megabytes)


@dataclasses.dataclass(frozen=True)
class VisibleDevice(SessionSetting):
    """Use only the GPU with this index."""

    index: int

    def apply_to(self, config) -> None:
        config.gpu_options.visible_device_list = str(self.index)


@dataclasses.dataclass(frozen=True)
class InterOpThreads(SessionSetting):
    """Threads that run independent ops of a step at once."""

    count: int

    def apply_to(self, config) -> None:
        config.inter_op_parallelism_threads = self.count


@dataclasses.dataclass(frozen=True)
class IntraOpThreads(SessionSetting):
    """Threads one op may use."""

    count: int

    def apply_to(self, config) -> None:
        config.intra_op_parallelism_threads = self.count


@dataclasses.dataclass(frozen=True)
class GraphOptimizerLevel(SessionSetting):
    """The graph optimizer TensorFlow runs on every partition: at level L0 it folds no constants (L1 always
    does); common-subexpression elimination stays as chosen."""

    level: str
    common_subexpression_elimination: bool = True

    def apply_to(self, config) -> None:
        from tensorflow.core.protobuf import config_pb2

        options = config.graph_options.optimizer_options
        options.opt_level = config_pb2.OptimizerOptions.Level.Value(self.level)
        options.do_common_subexpression_elimination = self.common_subexpression_elimination


@dataclasses.dataclass(frozen=True)
class OperationTimeout(SessionSetting):
    """Fail a blocking operation that takes longer than this."""

    milliseconds: int

    def apply_to(self, config) -> None:
        config.operation_timeout_in_ms = self.milliseconds


# --- process settings ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class OpDeterminism(ProcessSetting):
    """Make TensorFlow ops deterministic."""


@dataclasses.dataclass(frozen=True)
class TensorFloat32(ProcessSetting):
    """Allow (True) or forbid (False) TF32 matmuls and convolutions on GPUs that have them."""

    enabled: bool


@dataclasses.dataclass(frozen=True)
class XlaCompileCache(ProcessSetting):
    """XLA's persistent compilation cache in `directory` (used where XLA compiles)."""

    directory: str

    def environment(self) -> Mapping[str, str]:
        return {"TF_XLA_FLAGS": f"--tf_xla_persistent_cache_directory={self.directory}"}


@dataclasses.dataclass(frozen=True)
class GraphDumps(ProcessSetting):
    """TensorFlow graphs and XLA HLO written under `directory`."""

    directory: str

    def environment(self) -> Mapping[str, str]:
        return {
            "TF_DUMP_GRAPH_PREFIX": self.directory,
            "XLA_FLAGS": f"--xla_dump_to={os.path.join(self.directory, 'xla')}",
        }


def _toggle(on: bool) -> int:
    from tensorflow.core.protobuf import rewriter_config_pb2  # planning alone needs no TensorFlow

    return rewriter_config_pb2.RewriterConfig.ON if on else rewriter_config_pb2.RewriterConfig.OFF
