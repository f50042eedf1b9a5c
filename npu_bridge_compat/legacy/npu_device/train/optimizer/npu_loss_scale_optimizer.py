"""`npu_device.train.optimizer.npu_loss_scale_optimizer`."""

from npu_bridge_compat.tf2 import loss_scale


def __getattr__(name: str):
    # Built when first used, for the Keras that tf.keras is then (importing npu_device loads no Keras).
    if name == "NpuLossScaleOptimizer":
        return loss_scale.NpuLossScaleOptimizer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
