"""The adapter's op modules (npu_ops, npu_unary_ops, npu_aicore_ops, npu_vector_ops, npu_cube_ops, npu_cpu_ops)
in terms of TensorFlow ops.

Ops with a TensorFlow equivalent are that op; the fused kernels are computed with their Ascend formulas by
`npu_bridge_compat.fused`. Only what needs the embedding service stays device-only.
"""

from __future__ import annotations

import tensorflow as tf

from npu_bridge_compat.errors import device_only
from npu_bridge_compat.fused.nn import deformable_conv2d, dropout, dropout_v3, randomchoicewithmask  # noqa: F401
from npu_bridge_compat.fused.nn import fast_gelu as fused_fast_gelu
from npu_bridge_compat.fused.optimizers import (  # noqa: F401
    LARS,
    LARSV2,
    adam_apply_one_assign,
    adam_apply_one_with_decay_assign,
    lamb_apply_optimizer_assign,
    lamb_apply_weight_assign,
)
from npu_bridge_compat.fused.rnn import basic_lstm_cell  # noqa: F401


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
        return fused_fast_gelu(x)


class _UnaryOps:
    """The adapter exposes these as attributes of an `npu_unary_ops` object."""

    gelu = staticmethod(gelu)


class _AicoreOps:
    fast_gelu = staticmethod(fast_gelu)
    dropout_v3 = staticmethod(dropout_v3)


npu_unary_ops = _UnaryOps()
npu_aicore_ops = _AicoreOps()

embeddingrankid = device_only(
    "npu_cpu_ops.embeddingrankid", "keep the embedding table in a variable and read it with tf.nn.embedding_lookup"
)
