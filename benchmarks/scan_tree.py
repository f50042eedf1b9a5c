"""How long `python -m npu_bridge_compat scan` takes on a tree the size of Ascend's ModelZoo-TensorFlow.

    python benchmarks/scan_tree.py                    # a synthetic 35,000-file tree in a temporary folder
    python benchmarks/scan_tree.py --tree PATH        # a real tree (e.g. a checkout of ModelZoo-TensorFlow)

The synthetic tree has ModelZoo's shape: about 1,000 model folders of 35 files each, 54% of them Python (about
8 KB on average, a few over 100 KB, each with the two licence headers ModelZoo files carry): ported Estimator and
sess.run entry scripts, model definitions, TF 1.15 contrib code, data utilities, a few Python 2 files; the rest
shell launchers, READMEs, requirement lists and JSON configs. The scan runs as a user runs it (a fresh process,
TensorFlow's import included), with its JSON written to a file; the budget is one minute.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUDGET_SECONDS = 60
FILES = 35_000
FILES_PER_MODEL = 35
PYTHON_SHARE = 0.54

LICENSE = """# Copyright 2017 The TensorFlow Authors. All Rights Reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
# ============================================================================
# Copyright 2021 Huawei Technologies Co., Ltd
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""

ESTIMATOR_ENTRY = """
import os
import sys
import argparse

import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *
from npu_bridge.estimator.npu import npu_scope
from hccl.manage.api import get_rank_size, get_rank_id

import {model}
import {data}

FLAGS = tf.app.flags.FLAGS
tf.app.flags.DEFINE_string("data_dir", "/home/data", "dataset folder")
tf.app.flags.DEFINE_integer("iterations_per_loop", {iterations}, "steps per session run")
tf.app.flags.DEFINE_string("precision_mode", "allow_mix_precision", "precision")


def model_fn(features, labels, mode, params):
    logits = {model}.inference(features, is_training=mode == tf.estimator.ModeKeys.TRAIN)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    global_step = tf.train.get_or_create_global_step()
    optimizer = tf.train.MomentumOptimizer(learning_rate=0.1 * get_rank_size(), momentum=0.9)
    loss_scale_manager = ExponentialUpdateLossScaleManager(init_loss_scale=2 ** 32, incr_every_n_steps=1000,
                                                           decr_every_n_nan_or_inf=2, decr_ratio=0.5)
    optimizer = NPULossScaleOptimizer(NPUDistributedOptimizer(optimizer), loss_scale_manager)
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train_op = optimizer.minimize(loss, global_step=global_step)
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)


def main(_):
    dump_config = DumpConfig(enable_dump={dump}, dump_path="/var/log/npu/dump", dump_step="0|5|10",
                             dump_mode="all")
    run_config = NPURunConfig(
        model_dir=os.path.join(FLAGS.data_dir, "model"),
        save_checkpoints_steps=1000,
        iterations_per_loop=FLAGS.iterations_per_loop,
        precision_mode={precision!r},
        enable_data_pre_proc=True,
        hcom_parallel=True,
        keep_checkpoint_max=5,
        dump_config=dump_config,
        mix_compile_mode={mix},
    )
    estimator = NPUEstimator(model_fn=model_fn, config=run_config, params={{"rank": get_rank_id()}})
    estimator.train(input_fn=lambda: {data}.input_fn(FLAGS.data_dir, 32), max_steps=10000)


if __name__ == "__main__":
    tf.app.run()
"""

SESSION_ENTRY = """
import time

import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *

import {model}

tf.compat.v1.disable_eager_execution()
images = tf.compat.v1.placeholder(tf.float32, [32, 224, 224, 3])
labels = tf.compat.v1.placeholder(tf.int32, [32])
logits = {model}.inference(images, is_training=True)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
train_op = tf.compat.v1.train.AdamOptimizer(1e-3).minimize(loss)

config = tf.compat.v1.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["use_off_line"].b = True
custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes({precision!r})
custom_op.parameter_map["{loop_key}"].i = {iterations}
custom_op.parameter_map["mix_compile_mode"].b = {mix}
custom_op.parameter_map["enable_data_pre_proc"].b = True
config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
config.graph_options.rewrite_options.memory_optimization = RewriterConfig.OFF

with tf.compat.v1.Session(config=config) as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for step in range(100):
        start = time.time()
        _, loss_value = sess.run([train_op, loss], feed_dict={{images: np.zeros([32, 224, 224, 3]),
                                                              labels: np.zeros([32])}})
        print("step %d loss %.4f time %.3f" % (step, loss_value, time.time() - start))
"""

MODEL_HEADER = """
import tensorflow as tf
from npu_bridge.npu_init import *
from npu_bridge.estimator import npu_ops

slim = tf.contrib.slim
"""

MODEL_BLOCK = '''

def block_{index}(inputs, filters, is_training, scope="block_{index}"):
    """A residual block: two 3x3 convolutions with batch normalisation."""
    with tf.variable_scope(scope):
        shortcut = inputs
        net = tf.layers.conv2d(inputs, filters, 3, padding="same", use_bias=False,
                               kernel_initializer=tf.contrib.layers.xavier_initializer())
        net = tf.layers.batch_normalization(net, training=is_training, momentum=0.997, epsilon=1e-5)
        net = tf.nn.relu(net)
        net = slim.conv2d(net, filters, [3, 3], activation_fn=None, scope="conv_{index}")
        net = npu_ops.dropout(net, keep_prob=0.9) if is_training else net
        if shortcut.shape[-1] != filters:
            shortcut = tf.layers.conv2d(shortcut, filters, 1, padding="same")
        return tf.nn.relu(net + shortcut)
'''

MODEL_FOOTER = """

def inference(images, is_training):
    net = images
    for index, filters in enumerate([64, 128, 256, 512]):
        net = globals()["block_%d" % (index % 4)](net, filters, is_training)
    net = tf.reduce_mean(net, axis=[1, 2])
    return tf.layers.dense(net, 1000)
"""

DATA_UTILS = """
import os
import json
import random

import numpy as np
{extra_import}

IMAGE_MEAN = [123.68, 116.78, 103.94]


def load_annotations(path):
    with open(path) as handle:
        return json.load(handle)
"""

DATA_BLOCK = '''

def transform_{index}(image, size=224, training=True):
    """Resize, crop and normalise one image (numpy only, as the data pipelines of the ports do)."""
    height, width = image.shape[:2]
    scale = size / min(height, width)
    top = random.randint(0, max(0, int(height * scale) - size)) if training else 0
    left = random.randint(0, max(0, int(width * scale) - size)) if training else 0
    crop = image[top:top + size, left:left + size].astype(np.float32)
    for channel, mean in enumerate(IMAGE_MEAN):
        crop[..., channel] -= mean
    return crop / 255.0 if {index} % 2 else crop
'''

PYTHON2 = """
import os
import cPickle as pickle


def summarize(results):
    for name, value in results.items():
        print "%s: %.4f" % (name, value)
"""

SHELL = """#!/bin/bash
cur_path=`pwd`
export RANK_SIZE=1
export JOB_ID=10087
export ASCEND_DEVICE_ID=0
python3 ${cur_path}/../train.py --data_dir=${data_path} --iterations_per_loop=100 > ${cur_path}/output/train.log 2>&1
"""


def _python_file(rng: random.Random, kind: str) -> str:
    precision = rng.choice(
        ["allow_mix_precision", "allow_mix_precision", "force_fp32", "allow_fp32_to_fp16", "allow_mix_precison"]
    )  # ports carry the odd typo
    values = {
        "model": "resnet_model",
        "data": "data_utils",
        "iterations": rng.choice([1, 10, 100]),
        "dump": rng.choice([True, False]),
        "precision": precision,
        "mix": False,
        "loop_key": rng.choice(["iterations_per_loop"] * 9 + ["iteration_per_loop"]),
    }
    if kind == "estimator":
        body = ESTIMATOR_ENTRY.format(**values)
    elif kind == "session":
        body = SESSION_ENTRY.format(**values)
    elif kind == "model":
        body = MODEL_HEADER + "".join(MODEL_BLOCK.format(index=i) for i in range(rng.randint(1, 17))) + MODEL_FOOTER
    elif kind == "python2":
        body = PYTHON2
    else:
        extra = rng.choice(["import cv2", "from PIL import Image", "import scipy.io as sio", "import torch", ""])
        blocks = rng.randint(100, 200) if rng.random() < 0.01 else rng.randint(1, 19)  # a long tail, as in ModelZoo
        body = DATA_UTILS.format(extra_import=extra) + "".join(DATA_BLOCK.format(index=i) for i in range(blocks))
    return LICENSE + body


def make_tree(root: Path, files: int = FILES, seed: int = 0) -> tuple[int, int, int]:
    """Write the synthetic tree; returns (files, Python files, bytes of Python)."""
    rng = random.Random(seed)
    written = python = python_bytes = 0
    areas = ["cv/image_classification", "cv/detection", "cv/segmentation", "nlp", "recommendation", "audio"]
    model = 0
    while written < files:
        folder = root / "TensorFlow" / "built-in" / rng.choice(areas) / f"Model_ID{model:04d}_for_TensorFlow"
        model += 1
        for index in range(min(FILES_PER_MODEL, files - written)):
            if index < FILES_PER_MODEL * PYTHON_SHARE:
                kind = (
                    "estimator"
                    if index == 0
                    else "session"
                    if index == 1
                    else "python2"
                    if rng.random() < 0.005
                    else rng.choice(["model", "data", "data"])
                )
                name = {
                    "estimator": "train.py",
                    "session": "train_sess.py",
                    "model": "resnet_model.py",
                    "data": "data_utils.py",
                }.get(kind, "summarize.py")
                path = folder / ("" if index < 4 else f"src/part{index}") / name
                text = _python_file(rng, kind)
                python += 1
                python_bytes += len(text)
            else:
                suffix = rng.choice(["sh", "md", "txt", "json"])
                path = folder / ("test" if suffix == "sh" else "") / f"file{index}.{suffix}"
                text = (
                    SHELL
                    if suffix == "sh"
                    else json.dumps({"lr": 0.1, "epochs": 90})
                    if suffix == "json"
                    else f"# Model {model}\n\nTrain with `bash test/train_full_1p.sh`.\n"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            written += 1
    return written, python, python_bytes


def measure(tree: Path, output: Path) -> dict:
    start = time.perf_counter()
    with open(output, "w") as handle:
        result = subprocess.run(
            [sys.executable, "-m", "npu_bridge_compat", "scan", "--format", "json", str(tree)],
            stdout=handle,
            stderr=subprocess.PIPE,
            text=True,
        )
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"scan failed:\n{result.stderr[-3000:]}")
    return {"seconds": seconds, "totals": json.loads(output.read_text())["totals"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, help="scan this tree instead of a synthetic one")
    parser.add_argument("--files", type=int, default=FILES, help="files in the synthetic tree")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="scan_tree_") as scratch:
        if arguments.tree:
            tree = arguments.tree.resolve()
            counted = [os.path.join(d, f) for d, _, names in os.walk(tree) for f in names]
            python = [p for p in counted if p.endswith(".py")]
            files, python_files, python_bytes = len(counted), len(python), sum(os.path.getsize(p) for p in python)
        else:
            tree = Path(scratch) / "tree"
            start = time.perf_counter()
            files, python_files, python_bytes = make_tree(tree, arguments.files)
            print(
                f"wrote {files} files ({python_files} Python, {python_bytes / 1e6:.0f} MB) in "
                f"{time.perf_counter() - start:.0f} s"
            )
        result = measure(tree, Path(scratch) / "scan.json")
    totals = result["totals"]
    print(
        f"scan of {files} files ({python_files} Python files, {python_bytes / 1e6:.0f} MB of Python) on "
        f"{len(os.sched_getaffinity(0))} CPU cores: {result['seconds']:.1f} s "
        f"({python_files / result['seconds']:.0f} Python files/s)"
    )
    print(
        f"  {totals['ready']} ready, {totals['warning']} with warnings, {totals['blocked']} blocked "
        f"({', '.join(f'{k} {v}' for k, v in totals['blocked_by'].items())})"
    )
    verdict = "within" if result["seconds"] <= BUDGET_SECONDS else "OVER"
    print(f"{verdict} the {BUDGET_SECONDS} s budget")


if __name__ == "__main__":
    main()
