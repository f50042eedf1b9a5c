"""A TF2 training loop sunk as the adapter's loop size asks (tf_adapter_2.x's own tests write it so): a tf.function
that runs a tf.function step 10 times in a `for ... in tf.range(10)` loop (AutoGraph converts it), with
NpuLossScaleOptimizer, all_reduce and mixed precision. Prints one JSON line."""

import json

import npu_device
import tensorflow as tf

npu_device.global_options().precision_mode = "allow_mix_precision"
npu_device.open().as_default()
npu_device.set_npu_loop_size(10)

optimizer = npu_device.train.optimizer.NpuLossScaleOptimizer(tf.keras.optimizers.SGD(0.01))
keras_2 = hasattr(optimizer, "get_scaled_loss")
weights = [tf.Variable(1.0), tf.Variable(2.0)]


@tf.function
def train_step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.multiply(weights[0], weights[1]))
        scaled = optimizer.get_scaled_loss(loss) if keras_2 else optimizer.scale_loss(loss)
    grads = tape.gradient(scaled, weights)
    if keras_2:
        grads = optimizer.get_unscaled_gradients(grads)
    optimizer.apply_gradients(zip(npu_device.distribute.all_reduce(grads), weights))


@tf.function
def train_loop():
    for _ in tf.range(10):
        train_step()


train_loop()
print(
    json.dumps(
        {
            "iterations": int(optimizer.iterations.numpy()),
            "finite": bool(optimizer.last_step_finite.numpy()),
            "weights": [float(w.numpy()) for w in weights],
        }
    ),
    flush=True,
)
