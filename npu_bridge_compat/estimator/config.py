"""NPURunConfig, as the adapter declares it, built on the one translator (its arguments' meaning and holders live
with the options: options/run_config.py).

`NPURunConfig` validates every NPU option at construction (through `options_from_kwargs`, merged over the
NpuOptimizer entries of `session_config`, which NPURunConfig's own arguments override as in the adapter), and
hands the Estimator the host `session_config` of the plan. A session config given later (`replace`, which
TensorFlow's Estimator calls itself) is read and planned the same way.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import enum
from collections.abc import Iterator

from absl import logging

from npu_bridge_compat.compat.estimator import told_when_an_estimator_is_built
from npu_bridge_compat.estimator_library import estimator_class
from npu_bridge_compat.options import options_from_kwargs
from npu_bridge_compat.options.readers import config_proto_values
from npu_bridge_compat.options.run_config import (  # noqa: F401 - the holders are the Estimator door's names too
    NO_HOST_MEANING,
    DumpConfig,
    DynamicInputConfig,
    ExperimentalConfig,
    GraphMemoryOptimizeConfig,
    MemoryConfig,
    ProfilingConfig,
    RunConfigArguments,
    check_holders,
    npu_values,
)
from npu_bridge_compat.runtime.doors import SESSION_SETTINGS, Door, enter_plan, plan_for_door

# A plain tf.estimator.Estimator given an NPURunConfig applies only what its session config carries.
PLAIN_ESTIMATOR = Door(
    "tf.estimator.Estimator",
    SESSION_SETTINGS,
    "The NPU options' iterations_per_loop, dumps, numeric checks, profiling and host regions take "
    "effect only with NPUEstimator, as on Ascend; this Estimator runs one step per session run.",
)


class NpuExecutePlacement(enum.Enum):
    """Where an npu_variable_scope places its ops on Ascend (no host effect)."""

    ALL = "all"
    CUBE = "cube"
    VECTOR = "vector"
    TAISHAN = "taishan"
    DVPP = "dvpp"
    HOST = "host"


# Set while NPUEstimator builds itself: it enters its config's plan itself, with all it carries out.
_building_npu_estimator = contextvars.ContextVar("building NPUEstimator", default=False)


@contextlib.contextmanager
def building_npu_estimator() -> Iterator[None]:
    """The Estimator built inside the block is an NPUEstimator, not a plain Estimator given an NPURunConfig."""
    token = _building_npu_estimator.set(True)
    try:
        yield
    finally:
        _building_npu_estimator.reset(token)


def _enter_plan_of_plain_estimator(config: NPURunConfig) -> None:
    """A plain Estimator (or a canned one, TPUEstimator, model_to_estimator's) given an NPURunConfig applies its
    session settings when it is built; the rest needs NPUEstimator, which a warning says once."""
    if not _building_npu_estimator.get():
        enter_plan(config.npu_plan, PLAIN_ESTIMATOR)


class NPURunConfig(RunConfigArguments, estimator_class("RunConfig")):
    """`tf.estimator.RunConfig` with the Ascend adapter's NPU arguments, defaults and checks."""

    def __init__(
        self,
        iterations_per_loop=1,
        profiling_config=None,
        model_dir=None,
        tf_random_seed=None,
        save_summary_steps=0,
        save_checkpoints_steps=None,
        save_checkpoints_secs=None,
        session_config=None,
        keep_checkpoint_max=5,
        keep_checkpoint_every_n_hours=10000,
        log_step_count_steps=100,
        distribute=None,
        enable_data_pre_proc=None,  # the adapter writes True; a host needs neither
        precision_mode=None,
        enable_reduce_precision=False,
        variable_format_optimize=None,
        mix_compile_mode=False,
        hcom_parallel=True,
        graph_memory_max_size=None,
        variable_memory_max_size=None,
        dump_config=None,
        stream_max_parallel_num=None,
        is_tailing_optimization=False,
        horovod_mode=False,
        graph_run_mode=1,
        op_debug_level=None,
        enable_scope_fusion_passes=None,
        enable_exception_dump=2,
        op_select_implmode=None,
        optypelist_for_implmode=None,
        dynamic_input_config=None,
        aoe_mode=None,
        work_path=None,
        buffer_optimize="l2_optimize",
        enable_small_channel=0,
        fusion_switch_file=None,
        enable_compress_weight=False,
        compress_weight_conf=None,
        op_compiler_cache_mode=None,
        op_compiler_cache_dir=None,
        debug_dir=None,
        hcom_multi_mode=False,
        dynamic_input=None,
        dynamic_graph_execute_mode="dynamic_execute",
        dynamic_inputs_shape_range=None,
        train_distribute=None,
        eval_distribute=None,
        local_rank_id=None,
        local_device_list=None,
        session_device_id=None,
        distribute_config=None,
        modify_mixlist=None,
        op_precision_mode=None,
        device_type="default_device_type",
        soc_config=None,
        hccl_timeout=None,
        op_wait_timeout=None,
        op_execute_timeout=None,
        HCCL_algorithm=None,
        customize_dtypes=None,
        op_debug_config=None,
        memory_config=None,
        experimental_config=None,
        topo_sorting_mode=None,
        aoe_config_file=None,
        insert_op_file=None,
        stream_sync_timeout=-1,
        event_sync_timeout=-1,
        external_weight=False,
        deterministic=0,
        frozen_variable=False,
        variable_placement="Device",
        jit_compile="auto",
        precision_mode_v2=None,
        ac_parallel_enable=None,
        quant_dumpable=None,
        input_fusion_size=131072,
        compile_dynamic_mode=None,
        graph_max_parallel_model_num=1,
        export_compile_stat=1,
        aicore_num=None,
        oo_constant_folding=True,
        input_batch_cpy=False,
        shape_generalization_mode="STRICT",
        all_tensor_not_empty=False,
        auto_multistream_parallel_mode=None,
        oo_level="O3",
        optimization_switch=None,
        auto_tune_mode=None,
        enable_graph_kernel=False,  # a host extension: graph-kernel fusion (an NPU always fuses)
    ):  # auto_tune_mode: adapter 1.x, before aoe_mode
        arguments = {name: value for name, value in locals().items() if name not in ("self", "__class__")}
        check_holders(arguments)
        self._argument_values = npu_values(arguments)
        self._recompute = experimental_config.recompute if experimental_config is not None else None
        for name in NO_HOST_MEANING:
            if arguments[name] not in (None, False):
                logging.warning("NPURunConfig(%s=%r) has no host equivalent; it is ignored.", name, arguments[name])
        self.iterations_per_loop = iterations_per_loop
        self.mix_compile_mode = mix_compile_mode
        self.horovod_mode = horovod_mode
        self._plan(session_config)
        if save_checkpoints_steps is None and save_checkpoints_secs is None:
            save_checkpoints_steps = 100  # the adapter's default, where RunConfig saves every 600 seconds
        super().__init__(
            model_dir=model_dir,
            tf_random_seed=tf_random_seed,
            save_summary_steps=save_summary_steps,
            save_checkpoints_steps=save_checkpoints_steps,
            save_checkpoints_secs=save_checkpoints_secs,
            session_config=self.npu_plan.host_config(session_config),
            keep_checkpoint_max=keep_checkpoint_max,
            keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
            log_step_count_steps=log_step_count_steps,
            train_distribute=train_distribute,
            eval_distribute=eval_distribute,
        )

    def _plan(self, session_config) -> None:
        """Read the NpuOptimizer entries of `session_config` under this config's own arguments, and plan them."""
        values = self._argument_values
        if session_config is not None:
            values = {**config_proto_values(session_config, source="NPURunConfig(session_config=...)"), **values}
        self.npu_options = options_from_kwargs(values, source="NPURunConfig")
        self.npu_plan = plan_for_door(self.npu_options, config=session_config, recompute=self._recompute)

    def replace(self, **kwargs) -> NPURunConfig:
        """RunConfig.replace; a new session_config is read and planned, and the Estimator gets its host copy."""
        if kwargs.get("session_config") is None:
            return super().replace(**kwargs)
        replanned = copy.copy(self)
        replanned._plan(kwargs["session_config"])
        kwargs["session_config"] = replanned.npu_plan.host_config(kwargs["session_config"])
        return super(NPURunConfig, replanned).replace(**kwargs)

    @property
    def steps_per_run(self) -> int:
        return self.npu_plan.steps_per_run

    device_fn = told_when_an_estimator_is_built(
        _enter_plan_of_plain_estimator, estimator_class("RunConfig"), estimator_class("Estimator")
    )
