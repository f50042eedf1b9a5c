"""A ModelArts program as Ascend's ports write them: it copies its data from --data_url (an obs:// URL) to a local
cache folder with moxing, trains a TF 1.15 graph on it, saves a checkpoint, copies the checkpoints to --train_url
and writes a result file straight to object storage. Prints a JSON report last."""

import argparse
import json
import os

import moxing as mox
import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--data_url", required=True)
parser.add_argument("--train_url", required=True)
parser.add_argument("--cache_dir", required=True)
args = parser.parse_args()

data_dir = os.path.join(args.cache_dir, "data")
model_dir = os.path.join(args.cache_dir, "result")
os.makedirs(model_dir)
mox.file.copy_parallel(args.data_url, data_dir)
features = np.load(os.path.join(data_dir, "train", "features.npy"))
labels = np.load(os.path.join(data_dir, "train", "labels.npy"))

x = tf.placeholder(tf.float32, [None, features.shape[1]])
y = tf.placeholder(tf.float32, [None, 1])
weights = tf.Variable(tf.zeros([features.shape[1], 1]))
loss = tf.reduce_mean(tf.square(tf.matmul(x, weights) - y))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
losses = []
with tf.Session() as session:
    session.run(tf.global_variables_initializer())
    for _ in range(30):
        _, value = session.run([train_op, loss], {x: features, y: labels})
        losses.append(float(value))
    tf.train.Saver().save(session, os.path.join(model_dir, "model.ckpt"), global_step=30)

if not mox.file.exists(args.train_url):
    mox.file.make_dirs(args.train_url)
mox.file.copy_parallel(model_dir, args.train_url)
with mox.file.File(args.train_url.rstrip("/") + "/losses.txt", "w") as result:
    result.write(f"{losses[0]} {losses[-1]}\n")
print(
    json.dumps(
        {
            "copied": sorted(mox.file.list_directory(data_dir, recursive=True)),
            "uploaded": mox.file.list_directory(args.train_url),
            "first_loss": losses[0],
            "last_loss": losses[-1],
        }
    )
)
