"""A TF2 program written for TensorFlow 2.6 / Keras 2.6 as Ascend's ports are (unmodified by the tests; run with
`run SCRIPT DIR`): Keras 2.6 module paths, the npu_convert_dropout patch, an OptimizerV2 subclass, the
experimental mixed precision API. Prints one JSON line for the test."""

import json
import os
import pickle
import sys

import keras
import numpy as np
import tensorflow as tf
from keras import backend_config
from keras.datasets.cifar import load_batch
from keras.layers import core
from keras.optimizer_v2 import optimizer_v2
from keras.utils import control_flow_util, np_utils
from tensorflow.python.distribute import distribution_strategy_context
from tensorflow.python.framework.ops import convert_to_tensor_v2_with_dispatch
from tensorflow.python.keras.layers import LSTM
from tensorflow.python.keras.utils import CustomObjectScope, multi_gpu_model
from tensorflow.python.training.tracking import tracking

dropped = []


def dropout_call(self, inputs, training=None):  # the ports' npu_convert_dropout patch, on tf.nn.dropout
    if training is None:
        training = keras.backend.learning_phase()

    def dropped_inputs():
        dropped.append(1)
        return tf.nn.dropout(inputs, rate=self.rate)

    return control_flow_util.smart_cond(training, dropped_inputs, lambda: tf.identity(inputs))


core.Dropout.call = dropout_call


class HalfStepSGD(tf.keras.optimizers.SGD):
    """A ported optimizer: subclasses TF 2.6's tf.keras.optimizers class and calls OptimizerV2's methods."""

    def _prepare_local(self, var_device, var_dtype, apply_state):
        super()._prepare_local(var_device, var_dtype, apply_state)
        apply_state[(var_device, var_dtype)]["half_lr"] = self._decayed_lr(var_dtype) / 2

    def _resource_apply_dense(self, grad, var, apply_state=None):
        coefficients = apply_state[(var.device, var.dtype.base_dtype)]
        return var.assign_sub(coefficients["half_lr"] * grad)


model_dir = sys.argv[1]
batch = {b"data": np.arange(2 * 3072, dtype=np.uint8).reshape(2, 3072) % 251, b"labels": [3, 7]}
with open(os.path.join(model_dir, "data_batch_1"), "wb") as file:
    pickle.dump(batch, file)
images, labels = load_batch(os.path.join(model_dir, "data_batch_1"))

tf.keras.mixed_precision.experimental.set_policy("float32")
policy = tf.keras.mixed_precision.experimental.Policy("mixed_float16")
model = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(3,)), tf.keras.layers.Dropout(0.5)])
weights = model.get_weights()[0].copy()
optimizer = HalfStepSGD(0.2)
x = np.ones((8, 3), np.float32)
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(model(x, training=False))
gradients = tape.gradient(loss, model.trainable_variables)
optimizer.apply_gradients(zip(gradients, model.trainable_variables))
model.compile(optimizer=HalfStepSGD(0.01), loss="mse")
history = model.fit(x, np.zeros((8, 4), np.float32), epochs=2, verbose=0)
try:
    multi_gpu_model(model, 2)
    no_counterpart = None
except AttributeError as error:  # NoCounterpartError is an AttributeError
    no_counterpart = str(error)
scaled = tf.keras.mixed_precision.experimental.LossScaleOptimizer(tf.keras.optimizers.SGD(0.1), loss_scale=128)
with CustomObjectScope({"Anything": int}):
    in_scope = tf.keras.utils.get_registered_object("Anything") is int
print(
    json.dumps(
        {
            "keras_version": tf.keras.__version__,
            "keras_is_tf_keras": keras.layers.Dense is tf.keras.layers.Dense,
            "epsilon": backend_config.epsilon(),
            "cifar": [list(images.shape), list(labels)],
            "one_hot": np_utils.to_categorical([1], 3).tolist(),
            "optimizer_v2": isinstance(tf.keras.optimizers.Adam(), optimizer_v2.OptimizerV2),
            "step_change": float(np.abs(weights - model.layers[0].kernel.numpy()).max()),
            "dropout_calls": len(dropped),
            "loss_finite": bool(np.isfinite(history.history["loss"]).all()),
            "policy": [policy.name, policy.compute_dtype],
            "loss_scale": [float(scaled.loss_scale), bool(scaled.dynamic)],
            "lstm": LSTM is tf.keras.layers.LSTM,
            "in_scope": in_scope,
            "strategy": type(distribution_strategy_context.get_strategy()).__name__,
            "converted": convert_to_tensor_v2_with_dispatch([1.5]).numpy().tolist(),
            "trackable": issubclass(tracking.AutoTrackable, tf.Module.__mro__[1]),
            "no_counterpart": no_counterpart,
        }
    )
)
