"""The Estimator door: NPURunConfig, NPUEstimator, NPUEstimatorSpec and the configuration holders."""

from npu_bridge_compat.estimator.config import (
    DumpConfig,
    DynamicInputConfig,
    ExperimentalConfig,
    GraphMemoryOptimizeConfig,
    MemoryConfig,
    NpuExecutePlacement,
    NPURunConfig,
    ProfilingConfig,
)
from npu_bridge_compat.estimator.estimator import NPUEstimator, NPUEstimatorSpec

__all__ = [
    "DumpConfig",
    "DynamicInputConfig",
    "ExperimentalConfig",
    "GraphMemoryOptimizeConfig",
    "MemoryConfig",
    "NPUEstimator",
    "NPUEstimatorSpec",
    "NPURunConfig",
    "NpuExecutePlacement",
    "ProfilingConfig",
]
