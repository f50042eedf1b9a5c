"""`npu_device.distribute.weight_update_grouping`."""

from npu_bridge_compat.tf2.distribute import grouping_broadcast, grouping_gradients_apply  # noqa: F401
