"""A stand-in for the ports' npu_convert_dropout.py: Keras' Dropout.call replaced by one that calls npu_ops.dropout
in training."""

import npu_ops
import tensorflow as tf


def dropout_call(self, inputs, training=None):
    if training is None:
        training = tf.keras.backend.learning_phase()

    def dropped_inputs():
        noise_shape = self._get_noise_shape(inputs)
        return npu_ops.dropout(inputs, noise_shape=noise_shape, seed=self.seed, keep_prob=1 - self.rate)

    return tf.__internal__.smart_cond.smart_cond(training, dropped_inputs, lambda: tf.identity(inputs))


tf.keras.layers.Dropout.call = dropout_call
