"""A TF 1.15 training script that already imports tensorflow.compat.v1 and keeps its model in a sibling package
(`seq_model`, on PYTHONPATH); run through tf1_launcher.py with `run --tf1 LAUNCHER MODEL_DIR HPARAMS`.
Prints one JSON line for the test.
"""

import json
import os
import sys

import numpy as np
import seq_model
import tensorboard.plugins.mesh.summary as installed_library  # an installed library doing `import tensorflow as tf`
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
model_dir, overrides = sys.argv[1], sys.argv[2]
hparams = seq_model.default_hparams().parse(overrides)

rng = np.random.RandomState(0)
data = rng.randint(0, hparams.vocab_size, size=(64, 5))
ids = tf.placeholder(tf.int32, [None, None])
targets = tf.placeholder(tf.int32, [None, None])
loss, train_op, global_step = seq_model.build(hparams, ids, targets)
saver = tf.train.Saver()
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = []
    for step in range(hparams.steps):
        batch = data[(step * hparams.batch_size) % len(data) :][: hparams.batch_size]
        losses.append(float(sess.run([loss, train_op], {ids: batch, targets: batch % 2})[0]))
    checkpoint = saver.save(sess, os.path.join(model_dir, "model.ckpt"), global_step=global_step)
    step = int(sess.run(global_step))

print(
    json.dumps(
        {
            "global_step": step,
            "losses": losses,
            "checkpoint": checkpoint,
            "hparams": hparams.to_json(),
            "model_tf": seq_model.TF_NAME,
            "library_tf": installed_library.tf.__name__,
            "floatx": seq_model.FLOATX,
        }
    )
)
