"""A ported TF2 custom training loop with NPU dumps, numeric checks and mixed precision set through
npu_device.global_options(): a tf.function step decorated after open().as_default(), calling a Keras layer whose
`call` is a tf.function too (with `training` passed by position, as Keras 2 scripts do), as ModelZoo's TF2 models
write them. After 4 steps an Inf input must stop the step with NonFiniteValueError. Prints one JSON line: losses,
the error, and the dtype grappler chose for the step's MatMul.

Usage: tf2_custom_loop_port.py DUMP_PATH PRECISION_MODE
"""

import json
import sys

import npu_device
import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context  # the test reads the executed graphs, as tests/helpers.py does

npu_device.global_options().dump_config.enable_dump = True
npu_device.global_options().dump_config.dump_path = sys.argv[1]
npu_device.global_options().dump_config.dump_step = "1|3"
npu_device.global_options().dump_config.enable_dump_debug = True
npu_device.global_options().precision_mode = sys.argv[2]
npu_device.open().as_default()


class Projection(tf.keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.kernel = tf.Variable(np.full([16, 16], 0.01, np.float32))

    @tf.function
    def call(self, x, training=True):
        return tf.matmul(x, self.kernel, name="project") * (1.0 if training else 0.5)


projection = Projection()
kernel = projection.kernel
optimizer = tf.keras.optimizers.SGD(0.1)
keras_2 = not tf.keras.__name__.startswith("keras._tf_keras")  # Keras 3 takes non-tensor arguments by keyword


@tf.function
def train_step(features):
    with tf.GradientTape() as tape:
        projected = projection(features, True) if keras_2 else projection(features, training=True)
        loss = tf.reduce_mean(tf.square(projected))
    optimizer.apply_gradients(zip(tape.gradient(loss, [kernel]), [kernel]))
    return loss


context.enable_run_metadata()
losses = [float(train_step(tf.ones([8, 16]))) for _ in range(4)]
graphs = [g for f in context.export_run_metadata().function_graphs for g in f.partition_graphs]
context.disable_run_metadata()
matmul_dtype = next(  # the forward MatMul, inside the layer's own function (grappler may rename it)
    tf.dtypes.as_dtype(node.attr["T"].type).name
    for g in graphs
    for node in g.node
    if "MatMul" in node.op and "project" in node.name and "grad" not in node.name
)
try:
    train_step(tf.fill([8, 16], np.float32(np.inf)))
    error = None
except Exception as failure:  # noqa: BLE001 - the test checks its type and message
    error = f"{type(failure).__name__}: {failure}"
print(json.dumps({"losses": losses, "error": error, "matmul_dtype": matmul_dtype}), flush=True)
