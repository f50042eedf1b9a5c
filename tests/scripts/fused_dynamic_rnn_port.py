"""A TF 1.15 script ported to Ascend: an LSTM built with the adapter's fused DynamicRNN (forget_bias=1.0, as
ModelZoo's scripts pass) learns to sum a sequence, with data dumps on; run with `run --tf1 SCRIPT DUMP_PATH`."""

import json
import os
import sys

import numpy as np
import tensorflow as tf
from npu_bridge.estimator.npu.npu_dynamic_rnn import DynamicRNN
from npu_bridge.npu_init import *

dump_path = sys.argv[1]
steps, batch, features = 6, 16, 2
rng = np.random.RandomState(0)
inputs = rng.uniform(-1, 1, size=(512, steps, features)).astype(np.float32)
targets = inputs.sum(axis=(1, 2))[:, None].astype(np.float32)
x, y = tf.data.make_one_shot_iterator(
    tf.data.Dataset.from_tensor_slices((inputs, targets)).repeat().batch(batch, drop_remainder=True)
).get_next()

with tf.variable_scope("rnn"):
    lstm = DynamicRNN(hidden_size=16, dtype=tf.float32, forget_bias=1.0)
    outputs, output_h, output_c, i, j, f, o, tanhc = lstm(tf.transpose(x, [1, 0, 2]), seq_length=None)
prediction = tf.layers.dense(output_h[-1], 1)
loss = tf.reduce_mean(tf.square(prediction - y), name="loss")
train_op = tf.train.AdamOptimizer(0.02).minimize(loss, global_step=tf.train.get_or_create_global_step())

config = tf.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["use_off_line"].b = True
custom_op.parameter_map["enable_dump"].b = True
custom_op.parameter_map["dump_path"].s = tf.compat.as_bytes(dump_path)
custom_op.parameter_map["dump_step"].s = b"1|3"
custom_op.parameter_map["dump_mode"].s = b"output"

with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(160):
        _, loss_value = sess.run([train_op, loss])
        if step % 40 == 0 or step == 159:
            print("loss", step, loss_value)

for root, _, files in sorted(os.walk(dump_path)):
    if "index.json" in files:
        with open(os.path.join(root, "index.json")) as index:
            dumped = {entry["op"]: entry for entry in json.load(index)}
        weight = np.load(os.path.join(root, dumped["rnn/dynamic_rnn/dynamicrnn/w/read"]["file"]))
        print(os.path.basename(root), "BlockLSTM", "rnn/dynamic_rnn/BlockLSTM" in dumped, "w", list(weight.shape))
