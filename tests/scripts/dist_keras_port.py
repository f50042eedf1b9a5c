"""A ported TF2 Keras script on several ranks: KerasDistributeOptimizer, npu_callbacks_append (the broadcast
callback) and NPUCallback with iterations_per_loop. Each rank starts from its own weights and reads its shard.
Prints one JSON line per rank.

Usage: dist_keras_port.py STEPS ITERATIONS_PER_LOOP
"""
import json
import sys

import tensorflow as tf
from npu_bridge.npu_init import *  # first: several ranks join TensorFlow's collective runtime here

import dist_model
from npu_bridge_compat.keras import NPUCallback

steps, iterations = int(sys.argv[1]), int(sys.argv[2])
rank, size = get_rank_id(), get_rank_size()
model = tf.keras.Sequential([
    tf.keras.layers.Dense(8, activation="relu", kernel_initializer=tf.keras.initializers.GlorotUniform(seed=rank)),
    tf.keras.layers.Dense(1, kernel_initializer=tf.keras.initializers.GlorotUniform(seed=rank + 1)),
])
model.build([None, 4])
own_initial = [w.tolist() for w in model.get_weights()]
model.compile(optimizer=KerasDistributeOptimizer(tf.keras.optimizers.SGD(dist_model.LEARNING_RATE)), loss="mse")
history = model.fit(dist_model.dataset(rank, size), epochs=1, steps_per_epoch=steps, verbose=0,
                    callbacks=npu_callbacks_append([NPUCallback(iterations_per_loop=iterations)]))
print(json.dumps({"rank": rank, "own_initial": own_initial, "iterations": int(model.optimizer.iterations.numpy()),
                  "final": [w.tolist() for w in model.get_weights()]}), flush=True)
