"""`npu_device.ops.gelu` and the `gen_npu_ops` kernels TF2 scripts call, computed by `fused/` with the Ascend
kernels' math."""

from __future__ import annotations

import tensorflow as tf

from npu_bridge_compat.compat.keras import is_keras_symbolic
from npu_bridge_compat.fused.nn import fast_gelu


def gelu(x):
    """As the adapter's ops.gelu: GELU itself on eager tensors, the fused fast_gelu kernel (with its gradient)
    in graphs, tf.functions and Keras models under construction."""
    if is_keras_symbolic(x):
        return tf.keras.layers.Lambda(fast_gelu)(
            x
        )  # a functional model's symbolic tensor takes layers, as the adapter's
    if isinstance(x, tf.Tensor) and tf.executing_eagerly() and hasattr(x, "numpy"):
        return tf.nn.gelu(x)
    return fast_gelu(x)
