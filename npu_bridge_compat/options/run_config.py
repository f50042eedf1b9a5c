"""NPURunConfig's arguments as the adapter declares them: its holders of several options (ProfilingConfig,
DumpConfig, ...), which arguments hold them, which have no host meaning, the adapter's type checks, and the NPU
options the arguments name. NPURunConfig (estimator/config.py) builds on them, and `scan` checks a script's
NPURunConfig(...) calls with them, so both read the arguments alike.
"""

from __future__ import annotations

from typing import Any

from npu_bridge_compat.errors import NpuOptionTypeError, NpuOptionValueError
from npu_bridge_compat.options.table import OPTIONS


class ProfilingConfig:
    """Profiling switch and its JSON options (profiling_mode / profiling_options)."""

    def __init__(self, enable_profiling: bool = False, profiling_options: str | None = None) -> None:
        self._enable_profiling = enable_profiling
        self._profiling_options = profiling_options

    def npu_options(self) -> dict[str, Any]:
        if not self._enable_profiling:
            return {}
        return {"profiling_mode": True, "profiling_options": self._profiling_options or ""}


class DumpConfig:
    """Data dump and overflow detection (enable_dump, dump_path, dump_step, dump_mode, enable_dump_debug, ...)."""

    def __init__(
        self,
        enable_dump: bool = False,
        dump_path: str | None = None,
        dump_step: str | None = None,
        dump_mode: str = "output",
        enable_dump_debug: bool = False,
        dump_debug_mode: str = "all",
        dump_data: str = "tensor",
        dump_layer: str | None = None,
    ) -> None:
        self._enable_dump = enable_dump
        self._dump_path = dump_path
        self._dump_step = dump_step
        self._dump_mode = dump_mode
        self._enable_dump_debug = enable_dump_debug
        self._dump_debug_mode = dump_debug_mode
        self.dump_data = dump_data
        self.dump_layer = dump_layer

    def npu_options(self) -> dict[str, Any]:
        return _changed(
            {
                "enable_dump": self._enable_dump,
                "dump_path": self._dump_path,
                "dump_step": self._dump_step,
                "dump_mode": self._dump_mode,
                "enable_dump_debug": self._enable_dump_debug,
                "dump_debug_mode": self._dump_debug_mode,
                "dump_data": self.dump_data,
                "dump_layer": self.dump_layer,
            }
        )


class DynamicInputConfig:
    """Gear-mode dynamic shapes: input_shape, dynamic_dims and dynamic_node_type, all three required, and the
    newest adapter's compile_hybrid_mode (optional here, so scripts written for older adapters keep working)."""

    def __init__(
        self, input_shape: str, dynamic_dims: str, dynamic_node_type: int, compile_hybrid_mode: int | None = None
    ) -> None:
        self._input_shape = input_shape
        self._dynamic_dims = dynamic_dims
        self._dynamic_node_type = dynamic_node_type
        self._compile_hybrid_mode = compile_hybrid_mode

    def npu_options(self) -> dict[str, Any]:
        values = {
            "input_shape": self._input_shape,
            "dynamic_dims": self._dynamic_dims,
            "dynamic_node_type": self._dynamic_node_type,
        }
        if any(value is None for value in values.values()):
            return {}
        if self._compile_hybrid_mode is not None:
            values["compile_hybrid_mode"] = self._compile_hybrid_mode
        return values


class MemoryConfig:
    """Graph Engine memory policies."""

    def __init__(
        self,
        atomic_clean_policy: int = 0,
        static_memory_policy: int = 0,
        memory_optimization_policy: str | None = None,
        variable_use_1g_huge_page: int = 0,
    ) -> None:
        self._atomic_clean_policy = atomic_clean_policy
        self._static_memory_policy = static_memory_policy
        self._memory_optimization_policy = memory_optimization_policy
        self._variable_use_1g_huge_page = variable_use_1g_huge_page

    def npu_options(self) -> dict[str, Any]:
        return _changed(
            {
                "atomic_clean_policy": self._atomic_clean_policy,
                "static_memory_policy": self._static_memory_policy,
                "memory_optimization_policy": self._memory_optimization_policy,
                "variable_use_1g_huge_page": self._variable_use_1g_huge_page,
            }
        )


class GraphMemoryOptimizeConfig:
    """Recomputation and graph slicing ('auto' or 'manual')."""

    def __init__(self, recompute: str | None = None, graph_slice: str | None = None) -> None:
        for name, value in (("recompute", recompute), ("graph_slice", graph_slice)):
            if value is not None and value not in ("auto", "manual"):
                raise NpuOptionValueError(f"{name} should be in ['auto', 'manual'] (got {value!r})")
        self.recompute = recompute
        self._graph_slice = graph_slice


class ExperimentalConfig:
    """Experimental Graph Engine settings."""

    def __init__(
        self,
        logical_device_cluster_deploy_mode: str = "LB",
        logical_device_id: str | None = None,
        model_deploy_mode: str | None = None,
        model_deploy_devicelist: str | None = None,
        graph_memory_optimize_config: GraphMemoryOptimizeConfig | None = None,
        enable_graph_parallel: bool | None = None,
        graph_parallel_option_path: str | None = None,
        graph_compiler_cache_dir: str | None = None,
        resource_config_path: str | None = None,
        accelerate_train_mode: str | None = None,
    ) -> None:
        if graph_memory_optimize_config is not None and not isinstance(
            graph_memory_optimize_config, GraphMemoryOptimizeConfig
        ):
            raise NpuOptionValueError(
                "graph_memory_optimize_config type must be GraphMemoryOptimizeConfig "
                f"(got {type(graph_memory_optimize_config).__name__})"
            )
        # Reaches the adapter's graph as an attribute, not as a session option; NPURunConfig plans it.
        self.recompute = graph_memory_optimize_config.recompute if graph_memory_optimize_config else None
        self._values = {
            "experimental_logical_device_cluster_deploy_mode": logical_device_cluster_deploy_mode,
            "experimental_logical_device_id": logical_device_id,
            "experimental_model_deploy_mode": model_deploy_mode,
            "experimental_model_deploy_devicelist": model_deploy_devicelist,
            "graph_slice": graph_memory_optimize_config._graph_slice if graph_memory_optimize_config else None,
            "enable_graph_parallel": enable_graph_parallel,
            "graph_parallel_option_path": graph_parallel_option_path,
            "graph_compiler_cache_dir": graph_compiler_cache_dir,
            "resource_config_path": resource_config_path,
            "experimental_accelerate_train_mode": accelerate_train_mode,
        }

    def npu_options(self) -> dict[str, Any]:
        return _changed(self._values)


def _changed(values: dict[str, Any]) -> dict[str, Any]:
    """The entries that are set and differ from the adapter's default for the key."""
    return {key: value for key, value in values.items() if value is not None and value != OPTIONS[key].default}


# NPURunConfig arguments that hold several options.
HOLDERS = {
    "profiling_config": ProfilingConfig,
    "dump_config": DumpConfig,
    "dynamic_input_config": DynamicInputConfig,
    "memory_config": MemoryConfig,
    "experimental_config": ExperimentalConfig,
}
# Every holder class, GraphMemoryOptimizeConfig included (ExperimentalConfig reads it).
HOLDER_CLASSES = (*HOLDERS.values(), GraphMemoryOptimizeConfig)
_AOE_ARGUMENTS = ("aoe_mode", "work_path", "distribute_config")  # written only when aoe_mode is set
NO_HOST_MEANING = ("distribute", "horovod_mode")  # NPURunConfig arguments that are not NPU options


def check_holders(arguments: dict[str, Any]) -> None:
    """The adapter's type checks of NPURunConfig's holder and flag arguments."""
    for name, holder in HOLDERS.items():
        if arguments[name] is not None and not isinstance(arguments[name], holder):
            raise NpuOptionValueError(
                f"{name} must be provided with type {holder.__name__} (got {type(arguments[name]).__name__})"
            )
    if not isinstance(arguments["mix_compile_mode"], bool):
        raise NpuOptionTypeError(
            f'"mix_compile_mode" type must be bool (got {type(arguments["mix_compile_mode"]).__name__})'
        )
    if not isinstance(arguments["jit_compile"], str):
        raise NpuOptionTypeError(f"jit_compile: Expected str, got {type(arguments['jit_compile']).__name__}")


def npu_values(arguments: dict[str, Any]) -> dict[str, Any]:
    """The NPU options NPURunConfig's arguments name: each option argument that is set and differs from the
    table's default, and the holders' options."""
    values: dict[str, Any] = {}
    for name, value in arguments.items():
        if name in OPTIONS and name not in _AOE_ARGUMENTS and value is not None and value != OPTIONS[name].default:
            values[name] = value
        elif name in HOLDERS and value is not None:
            values.update(value.npu_options())
    if arguments["mix_compile_mode"]:
        values["iterations_per_loop"] = arguments["iterations_per_loop"]  # the mixed-compute rule names it
    if arguments["aoe_mode"] is not None:
        values.update({name: arguments[name] for name in _AOE_ARGUMENTS if arguments[name] is not None})
    return values


class RunConfigArguments:
    """The base of NPURunConfig: a configuration whose constructor takes the adapter's NPURunConfig arguments,
    which `npu_values` maps to NPU options (the scan recognises NPURunConfig and a script's subclasses by it)."""


class OptionKeywords:
    """The base of a configuration whose keyword arguments are NPU options themselves (NPUCallback(**options),
    read by `options_from_kwargs`): the scan checks a script's calls of one so."""
