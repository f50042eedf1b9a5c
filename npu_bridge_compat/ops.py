"""The adapter's op modules (npu_ops, npu_unary_ops, npu_aicore_ops, ...) in terms of TensorFlow ops.

Ops with a TensorFlow equivalent are that op; Ascend-only fused kernels import fine and raise a clear error when
called.
"""

from __future__ import annotations

import tensorflow as tf

from npu_bridge_compat.errors import NpuOptionValueError, device_only


def dropout(x, keep_prob, noise_shape=None, seed=None, name=None):
    """npu_ops.dropout: `tf.nn.dropout` with the NPU's keep_prob argument (0 < keep_prob <= 1)."""
    if isinstance(keep_prob, (int, float)) and not 0 < keep_prob <= 1:
        raise NpuOptionValueError(f"keep_prob must be a scalar tensor or a float in the range (0, 1], got "
                                  f"{keep_prob}")
    with tf.name_scope(name or "npu_dropout"):
        x = tf.convert_to_tensor(x)
        if not x.dtype.is_floating:
            raise NpuOptionValueError(f"npu_ops.dropout works on float tensors, got {x.dtype.name}")
        if isinstance(keep_prob, (int, float)) and keep_prob == 1:
            return tf.identity(x)
        return tf.nn.dropout(x, rate=1 - keep_prob, noise_shape=noise_shape, seed=seed)


def initialize_system(name=None):
    """npu_ops.initialize_system: opens the NPU on Ascend; a runnable no-op on a host."""
    return tf.no_op(name=name or "npu_initialize_system")


def shutdown_system(name=None):
    """npu_ops.shutdown_system: closes the NPU on Ascend; a runnable no-op on a host."""
    return tf.no_op(name=name or "npu_shutdown_system")


NPUInit = initialize_system
NPUShutdown = shutdown_system


def gelu(x):
    """npu_unary_ops.gelu: the NPU's fused GELU, which uses the tanh approximation."""
    return tf.nn.gelu(x, approximate=True)


def fast_gelu(x, name=None):
    """npu_aicore_ops.fast_gelu: x * sigmoid(1.702 x), the fast GELU approximation Ascend implements."""
    with tf.name_scope(name or "fast_gelu"):
        x = tf.convert_to_tensor(x)
        return x * tf.sigmoid(1.702 * x)


class _UnaryOps:
    """The adapter exposes these as attributes of an `npu_unary_ops` object."""

    gelu = staticmethod(gelu)


class _AicoreOps:
    fast_gelu = staticmethod(fast_gelu)
    dropout_v3 = staticmethod(device_only("npu_aicore_ops.dropout_v3"))


npu_unary_ops = _UnaryOps()
npu_aicore_ops = _AicoreOps()

LARS = device_only("npu_ops.LARS")
LARSV2 = device_only("npu_ops.LARSV2")
basic_lstm_cell = device_only("npu_ops.basic_lstm_cell")
adam_apply_one_assign = device_only("npu_ops.adam_apply_one_assign")
adam_apply_one_with_decay_assign = device_only("npu_ops.adam_apply_one_with_decay_assign")
lamb_apply_optimizer_assign = device_only("npu_vector_ops.lamb_apply_optimizer_assign")
lamb_apply_weight_assign = device_only("npu_vector_ops.lamb_apply_weight_assign")
deformable_conv2d = device_only("npu_cube_ops.deformable_conv2d")
embeddingrankid = device_only("npu_cpu_ops.embeddingrankid")
randomchoicewithmask = device_only("npu_cpu_ops.randomchoicewithmask")
