"""`npu_bridge.estimator.npu.npu_loss_scale_manager`."""

from npu_bridge_compat.loss_scale import ExponentialUpdateLossScaleManager, FixedLossScaleManager  # noqa: F401
