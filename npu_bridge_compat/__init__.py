"""npu_bridge_compat: run TensorFlow scripts ported to Ascend NPUs on CPU and GPU hosts.

One translator reads NPU options from any door (keyword arguments, a ConfigProto's NpuOptimizer entries),
validates them as the Ascend adapter does, and plans their host equivalents:

    options = options_from_config_proto(config)
    plan = build_plan(options)
    print(plan.report)

Importing this package changes nothing outside it: every change to TensorFlow, Keras, a user's objects or the
process is made by the door or command that needs it, through one registry (`npu_bridge_compat.changes`: listed by
`python -m npu_bridge_compat explain --changes`, undoable).
"""

from npu_bridge_compat.compat.xla import reserve_fusion_flags
from npu_bridge_compat.errors import NpuConfigError, NpuOptionTypeError, NpuOptionValueError
from npu_bridge_compat.options import (
    OPTIONS,
    NpuOptions,
    options_from_config_proto,
    options_from_kwargs,
)
from npu_bridge_compat.plan import HostPlan, Report, build_plan

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
    "reserve_fusion_flags",
]
