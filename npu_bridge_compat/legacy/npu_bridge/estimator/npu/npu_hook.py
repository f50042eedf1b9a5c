"""`npu_bridge.estimator.npu.npu_hook`."""

from npu_bridge_compat.distributed import NPUBroadcastGlobalVariablesHook, broadcast_global_variables  # noqa: F401
from npu_bridge_compat.legacy.hooks import (  # noqa: F401
    NPUCheckpointSaverHook,
    NPUOutputTensorHook,
    SetIterationsVarHook,
    TellMeStepOrLossHook,
)
