"""`npu_bridge.estimator.npu.npu_config`."""

from npu_bridge_compat.estimator.config import (  # noqa: F401
    DumpConfig,
    DynamicInputConfig,
    ExperimentalConfig,
    GraphMemoryOptimizeConfig,
    MemoryConfig,
    NpuExecutePlacement,
    NPURunConfig,
    ProfilingConfig,
)
from npu_bridge_compat.legacy.sessions import decorator_tf_session  # noqa: F401
