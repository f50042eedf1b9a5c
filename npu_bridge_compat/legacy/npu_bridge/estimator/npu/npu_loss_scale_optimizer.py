"""`npu_bridge.estimator.npu.npu_loss_scale_optimizer`."""

from npu_bridge_compat.loss_scale import (  # noqa: F401
    ExponentialUpdateLossScaleManager,
    FixedLossScaleManager,
    NPULossScaleOptimizer,
)
