"""A ported TF2 Keras script, written as ModelZoo's TensorFlow2 models are (mnist_main.py): npu_device options,
open().as_default(), a sharded and rebatched dataset, the distributed Keras optimizer wrapper and a broadcast of
the initial weights, then fit. Each rank starts from its own weights. Prints one JSON line per rank.

Usage: tf2_keras_port.py STEPS [DUMP_PATH]   (with DUMP_PATH, dumps step 1 and checks numerics)
"""

import json
import sys

import dist_model
import npu_device
import tensorflow as tf

steps = int(sys.argv[1])
npu_device.global_options().precision_mode = "must_keep_origin_dtype"
if len(sys.argv) > 2:
    npu_device.global_options().dump_config.enable_dump = True
    npu_device.global_options().dump_config.dump_path = sys.argv[2]
    npu_device.global_options().dump_config.dump_step = "1"
    npu_device.global_options().dump_config.dump_mode = "output"
npu = npu_device.open().as_default()
rank, size = npu.worker_id, npu.workers_num

examples = tf.data.Dataset.from_tensor_slices((dist_model.FEATURES, dist_model.LABELS))
dataset, batch = npu_device.distribute.shard_and_rebatch_dataset(examples, dist_model.BATCH * size)
dataset = dataset.batch(batch, drop_remainder=True).repeat()

model = tf.keras.Sequential(
    [
        tf.keras.layers.Dense(8, activation="relu", kernel_initializer=tf.keras.initializers.GlorotUniform(seed=rank)),
        tf.keras.layers.Dense(1, kernel_initializer=tf.keras.initializers.GlorotUniform(seed=rank + 1)),
    ]
)
model.build([None, 4])
own_initial = [w.tolist() for w in model.get_weights()]
npu_device.distribute.broadcast(model.trainable_variables, root_rank=0)
optimizer = npu_device.distribute.npu_distributed_keras_optimizer_wrapper(
    tf.keras.optimizers.SGD(dist_model.LEARNING_RATE)
)
model.compile(optimizer=optimizer, loss="mse")
model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0)
print(
    json.dumps(
        {
            "rank": rank,
            "size": size,
            "batch": batch,
            "own_initial": own_initial,
            "iterations": int(model.optimizer.iterations.numpy()),
            "final": [w.tolist() for w in model.get_weights()],
        }
    ),
    flush=True,
)
