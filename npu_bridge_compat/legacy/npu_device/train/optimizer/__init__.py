"""`npu_device.train.optimizer`."""

from npu_bridge_compat.tf2.loss_scale import NpuLossScaleOptimizer  # noqa: F401
