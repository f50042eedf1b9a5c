"""`npu_device.train.optimizer`."""

from . import npu_loss_scale_optimizer


def __getattr__(name: str):
    # Built when first used, for the Keras that tf.keras is then (importing npu_device loads no Keras).
    if name == "NpuLossScaleOptimizer":
        return npu_loss_scale_optimizer.NpuLossScaleOptimizer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
