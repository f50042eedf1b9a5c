"""A ported TF2 script that asks for graph-kernel fusion through npu_device's options: a tf.function step
(MatMul, then an element-wise GELU chain) and a Keras fit. Prints one JSON line: the op types of the executed
graphs, the step's output, and the clusters the fusion report saw in fit.

Usage: tf2_graph_kernel_port.py on|off
"""

import json
import sys

import npu_device
import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context  # the test reads the executed graphs, as tests/helpers.py does

from npu_bridge_compat.runtime.fusion import observed_fusion

npu_device.global_options().enable_graph_kernel = sys.argv[1] == "on"
npu_device.open().as_default()

kernel = tf.constant(np.linspace(-1, 1, 64 * 64, dtype=np.float32).reshape(64, 64))


@tf.function
def step(x):
    hidden = tf.matmul(x, kernel)
    gelu = 0.5 * hidden * (1.0 + tf.math.erf(hidden / np.sqrt(2.0)))
    return tf.reduce_mean(tf.tanh(gelu) * 1.5 + gelu, axis=1)


step(tf.ones([8, 64]))  # in mode auto the first call is the unfused form's, the second the fused form's
context.enable_run_metadata()
output = step(tf.ones([8, 64]))
graphs = [g for f in context.export_run_metadata().function_graphs for g in f.partition_graphs]
context.disable_run_metadata()

model = tf.keras.Sequential([tf.keras.layers.Dense(16), tf.keras.layers.Lambda(lambda t: tf.tanh(t) * t + 1.0)])
model.compile(tf.keras.optimizers.SGD(0.01), "mse")
features = np.random.RandomState(0).randn(64, 8).astype(np.float32)
model.fit(features, features[:, :1], batch_size=16, epochs=1, verbose=0)
print(
    json.dumps(
        {
            "ops": sorted({node.op for g in graphs for node in g.node}),
            "output": output.numpy().tolist(),
            "fit_clusters": sum(summary.clusters for summary in observed_fusion()),
        }
    ),
    flush=True,
)
