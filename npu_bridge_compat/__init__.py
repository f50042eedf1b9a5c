"""npu_bridge_compat: run TensorFlow scripts ported to Ascend NPUs on CPU and GPU hosts.

One translator reads NPU options from any door (keyword arguments, a ConfigProto's NpuOptimizer entries),
validates them as the Ascend adapter does, and plans their host equivalents:

    options = options_from_config_proto(config)
    plan = build_plan(options)
    print(plan.report)

Importing this package installs nothing: the `npu_bridge` import aliases are opt-in. It adds XLA's fusion flags
to TF_XLA_FLAGS before TensorFlow reads them (inert unless graph-kernel fusion is asked for; compat/xla.py).
"""

from npu_bridge_compat.compat.xla import reserve_fusion_flags

reserve_fusion_flags()

from npu_bridge_compat.errors import NpuConfigError, NpuOptionTypeError, NpuOptionValueError  # noqa: E402
from npu_bridge_compat.options import (  # noqa: E402
    OPTIONS,
    NpuOptions,
    options_from_config_proto,
    options_from_kwargs,
)
from npu_bridge_compat.plan import HostPlan, Report, build_plan  # noqa: E402

__all__ = [
    "OPTIONS",
    "HostPlan",
    "NpuConfigError",
    "NpuOptionTypeError",
    "NpuOptionValueError",
    "NpuOptions",
    "Report",
    "build_plan",
    "options_from_config_proto",
    "options_from_kwargs",
]
