"""`npu_device.ops.gelu` and the `gen_npu_ops` kernels TF2 scripts call, computed by `fused/` with the Ascend
kernels' math."""

from __future__ import annotations

import tensorflow as tf

from npu_bridge_compat.compat.keras import tf_keras_is_keras_3
from npu_bridge_compat.fused.nn import fast_gelu


def gelu(x):
    """As the adapter's ops.gelu: GELU itself on eager tensors, the fused fast_gelu kernel (with its gradient)
    in graphs, tf.functions and Keras models under construction."""
    if isinstance(x, tf.Tensor) and tf.executing_eagerly() and hasattr(x, "numpy"):
        return tf.nn.gelu(x)
    if tf_keras_is_keras_3() and not isinstance(x, (tf.Tensor, tf.Variable)):
        return tf.keras.layers.Lambda(fast_gelu)(x)  # a Keras 3 symbolic input takes no TensorFlow op
    return fast_gelu(x)
