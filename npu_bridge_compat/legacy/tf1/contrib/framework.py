"""contrib.framework's tensor_util checks that TensorFlow 2 dropped: `with_shape` and `with_same_shape`, which pass a
tensor on once its shape is known to match (statically where both shapes are known, else with an assertion run
before the tensor is read)."""

from __future__ import annotations

import tensorflow as tf


def with_shape(expected_shape, tensor):
    """`tensor`, asserted to have `expected_shape` (a list, TensorShape or 1-D integer tensor)."""
    tensor = tf.convert_to_tensor(tensor)
    if isinstance(expected_shape, (list, tuple, tf.TensorShape)):
        expected = tf.TensorShape(expected_shape)
        if expected.is_fully_defined() and tensor.shape.is_fully_defined():
            if not expected.is_compatible_with(tensor.shape):
                raise ValueError(f"Invalid shape for tensor {tensor.name}, expected {expected}, got {tensor.shape}.")
            return tensor
        expected_shape = expected.as_list() if expected.is_fully_defined() else expected_shape
    check = tf.debugging.assert_equal(
        tf.shape(tensor, out_type=tf.int64),
        tf.cast(tf.convert_to_tensor(expected_shape), tf.int64),
        message=f"Wrong shape for {tensor.name}",
    )
    with tf.control_dependencies([check]):
        return tf.identity(tensor)


def with_same_shape(expected_tensor, tensor):
    """`tensor`, asserted to have the shape of `expected_tensor`."""
    expected_tensor = tf.convert_to_tensor(expected_tensor)
    shape = expected_tensor.shape
    return with_shape(shape.as_list() if shape.is_fully_defined() else tf.shape(expected_tensor), tensor)
