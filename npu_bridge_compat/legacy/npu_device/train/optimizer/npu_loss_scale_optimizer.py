"""`npu_device.train.optimizer.npu_loss_scale_optimizer`."""

from npu_bridge_compat.tf2.loss_scale import NpuLossScaleOptimizer  # noqa: F401
