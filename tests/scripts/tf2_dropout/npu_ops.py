"""A stand-in for the npu_ops.py module ModelZoo's TF2 ports carry: dropout through gen_npu_ops' mask kernels,
with the seeds of TensorFlow's get_seed rule (None and None when no graph seed is set)."""

import tensorflow as tf
from npu_device import gen_npu_ops

DEFAULT_GRAPH_SEED = 87654321


def get_seed(op_seed):
    graph_seed = tf.compat.v1.get_default_graph().seed
    if graph_seed is not None:
        return graph_seed, op_seed if op_seed is not None else 0
    return (DEFAULT_GRAPH_SEED, op_seed) if op_seed is not None else (None, None)


def dropout(x, keep_prob, noise_shape=None, seed=None, name=None):
    x = tf.convert_to_tensor(x, name="x")
    seed, seed2 = get_seed(seed)
    noise_shape = tf.shape(x) if noise_shape is None else noise_shape
    mask = gen_npu_ops.drop_out_gen_mask(noise_shape, keep_prob, seed, seed2, name)
    return gen_npu_ops.drop_out_do_mask(x, mask, keep_prob, name)
