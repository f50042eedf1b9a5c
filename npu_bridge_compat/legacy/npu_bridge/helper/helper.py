"""`npu_bridge.helper.helper`: loads the adapter's compiled op library on Ascend."""

from npu_bridge_compat.errors import device_only

get_gen_ops = device_only("npu_bridge.helper.helper.get_gen_ops")
