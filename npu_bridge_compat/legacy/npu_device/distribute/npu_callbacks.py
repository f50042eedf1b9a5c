"""`npu_device.distribute.npu_callbacks`."""

from npu_bridge_compat.distributed import NPUBroadcastGlobalVariablesCallback  # noqa: F401
from npu_bridge_compat.tf2.distribute import broadcast as broadcast_helper  # noqa: F401
from npu_bridge_compat.tf2.distribute import broadcast_keras_model  # noqa: F401
