"""A ported graph-mode Keras script using set_keras_session_npu_config."""

import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *

tf.compat.v1.disable_eager_execution()
config = tf.compat.v1.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precision")
sess = set_keras_session_npu_config(config=config)
model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="relu"), tf.keras.layers.Dense(1)])
model.compile(npu_keras_optimizer(tf.keras.optimizers.legacy.SGD(0.01)), "mse")  # graph-mode Keras 2.15
data = np.random.RandomState(0).randn(64, 4).astype(np.float32)
history = model.fit(data, data[:, :1], epochs=2, batch_size=16, verbose=0, callbacks=npu_callbacks_append())
print("epochs", len(history.history["loss"]))
close_session(sess)
