"""A ported TF2 Keras script on several ranks: KerasDistributeOptimizer, npu_callbacks_append (the broadcast
callback) and NPUCallback with iterations_per_loop. Each rank starts from its own weights and reads its shard.
Prints one JSON line per rank.

Then, as 8p scripts do, each rank saves its weights into its own model_dir, loads them into a fresh model and
evaluates (the loss all-reduced across the ranks).

Usage: dist_keras_port.py STEPS ITERATIONS_PER_LOOP [MODEL_DIR]
"""

import json
import os
import sys

import dist_model
import tensorflow as tf
from npu_bridge.npu_init import *  # first: several ranks join TensorFlow's collective runtime here

from npu_bridge_compat.keras import NPUCallback

steps, iterations = int(sys.argv[1]), int(sys.argv[2])
rank, size = get_rank_id(), get_rank_size()


def built_model():
    model = tf.keras.Sequential(
        [
            tf.keras.layers.Dense(
                8, activation="relu", kernel_initializer=tf.keras.initializers.GlorotUniform(seed=rank)
            ),
            tf.keras.layers.Dense(1, kernel_initializer=tf.keras.initializers.GlorotUniform(seed=rank + 1)),
        ]
    )
    model.build([None, 4])
    return model


model = built_model()
own_initial = [w.tolist() for w in model.get_weights()]
model.compile(optimizer=KerasDistributeOptimizer(tf.keras.optimizers.SGD(dist_model.LEARNING_RATE)), loss="mse")
history = model.fit(
    dist_model.dataset(rank, size),
    epochs=1,
    steps_per_epoch=steps,
    verbose=0,
    callbacks=npu_callbacks_append([NPUCallback(iterations_per_loop=iterations)]),
)
print(
    json.dumps(
        {
            "rank": rank,
            "own_initial": own_initial,
            "iterations": int(model.optimizer.iterations.numpy()),
            "final": [w.tolist() for w in model.get_weights()],
        }
    ),
    flush=True,
)
if len(sys.argv) > 3:
    path = os.path.join(sys.argv[3], f"rank{rank}", "weights.weights.h5")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    model.save_weights(path)
    restored = built_model()
    restored.load_weights(path)
    restored.compile(loss="mse")
    loss = restored.evaluate(dist_model.dataset(rank, size), steps=3, verbose=0)
    global_loss = float(hccl_ops.allreduce(tf.constant(loss, tf.float32), "sum").numpy()) / size
    print(
        json.dumps(
            {
                "rank": rank,
                "restored": [w.tolist() for w in restored.get_weights()],
                "global_loss": global_loss,
                "checkpoints": os.listdir(os.path.dirname(path)),
            }
        ),
        flush=True,
    )
