"""`npu_bridge.estimator.npu.npu_scope`."""

from npu_bridge_compat.estimator.config import NpuExecutePlacement  # noqa: F401
from npu_bridge_compat.scope import *  # noqa: F401,F403
