"""A TF2 script ported to Ascend as ModelZoo's TensorFlow2 models are (npu_device options from flags,
open().as_default(), a sharded dataset, the distributed Keras optimizer wrapper, a broadcast of the initial
weights), unchanged. Run it with

    python -m npu_bridge_compat run examples/tf2/train.py --epochs=2
    python -m npu_bridge_compat launch -n 2 examples/tf2/train.py --epochs=2          # two ranks
    python -m npu_bridge_compat run examples/tf2/train.py --data_dump_flag=True --data_dump_path=/tmp/dump

It prints the translation report, the loss of each epoch and the steps per second.
"""

import argparse
import ast
import os
import time

import npu_device as npu
import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--batch_size", type=int, default=64, help="global batch size")
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--precision_mode", default="allow_mix_precision")
parser.add_argument("--data_dump_flag", type=ast.literal_eval, default=False)
parser.add_argument("--data_dump_path", default="/tmp/npu_dump")
parser.add_argument("--data_dump_step", default="10")
parser.add_argument("--over_dump", type=ast.literal_eval, default=False)
args = parser.parse_args()


def npu_config():
    if args.data_dump_flag:
        os.makedirs(args.data_dump_path, exist_ok=True)
        npu.global_options().dump_config.enable_dump = True
        npu.global_options().dump_config.dump_path = args.data_dump_path
        npu.global_options().dump_config.dump_step = args.data_dump_step
        npu.global_options().dump_config.dump_mode = "all"
    if args.over_dump:
        os.makedirs(args.data_dump_path, exist_ok=True)
        npu.global_options().dump_config.enable_dump_debug = True
        npu.global_options().dump_config.dump_path = args.data_dump_path
        npu.global_options().dump_config.dump_debug_mode = "all"
    npu.global_options().precision_mode = args.precision_mode
    return npu.open().as_default()


device = npu_config()
random = np.random.RandomState(0)
features = random.randn(4096, 32).astype(np.float32)
labels = (features @ random.randn(32, 1) > 0).astype(np.float32)
dataset, batch_size = npu.distribute.shard_and_rebatch_dataset(
    tf.data.Dataset.from_tensor_slices((features, labels)), args.batch_size
)
dataset = dataset.shuffle(1024, seed=device.worker_id).batch(batch_size, drop_remainder=True)

model = tf.keras.Sequential(
    [
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(1, activation="sigmoid"),
    ]
)
model.build([None, 32])
npu.distribute.broadcast(model.trainable_variables, root_rank=0)
optimizer = npu.distribute.npu_distributed_keras_optimizer_wrapper(tf.keras.optimizers.Adam(1e-3))
model.compile(optimizer=optimizer, loss="binary_crossentropy", metrics=["accuracy"])

start = time.perf_counter()
history = model.fit(dataset, epochs=args.epochs, verbose=0)
elapsed = time.perf_counter() - start
steps = args.epochs * (len(features) // device.workers_num // batch_size)
for epoch, (loss, accuracy) in enumerate(zip(history.history["loss"], history.history["accuracy"]), 1):
    print(f"rank {device.worker_id}/{device.workers_num} epoch {epoch}: loss {loss:.4f}, accuracy {accuracy:.3f}")
print(f"rank {device.worker_id}: {steps / elapsed:.0f} steps/s")
