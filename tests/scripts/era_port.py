"""A port written for NumPy < 1.24 and Python 3.7, as ModelZoo's are (unmodified by the tests; run with
`run SCRIPT DIR`): NumPy's removed aliases and NumPy 2.0's removed spellings, collections' ABC aliases, `imp`,
`distutils`, `time.clock`, `inspect.getargspec`, and absl-py < 2.0's str `enum_values` (as TensorFlow's official
models' flags pass one); it trains a small Keras model on data typed with them. Prints
one JSON line for the test."""

import collections
import imp
import inspect
import json
import os
import sys
import time
from distutils.version import LooseVersion

import numpy as np
import tensorflow as tf
from absl import flags

directory = sys.argv[1]
start = time.clock()
with open(os.path.join(directory, "settings.py"), "w") as file:
    file.write("LEARNING_RATE = 0.1\nSTEPS = 40\n")
settings = imp.load_source("settings", os.path.join(directory, "settings.py"))


def batches(features, labels, size=32):
    assert isinstance(features, collections.Iterable) and isinstance(labels, collections.Sequence)
    for begin in range(0, len(labels), size):
        yield features[begin : begin + size], np.array(labels[begin : begin + size], dtype=np.float)


rng = np.random.RandomState(0)
features = rng.rand(128, 4).astype(np.float)
labels = [float(row.sum() > 2) for row in features]
model = tf.keras.Sequential([tf.keras.layers.Dense(1, activation="sigmoid", input_shape=(4,))])
model.compile(tf.keras.optimizers.SGD(settings.LEARNING_RATE * 5), "binary_crossentropy")
losses = []
for _ in range(settings.STEPS // 4):
    for x, y in batches(features, labels):
        losses.append(float(model.train_on_batch(x.astype(np.float32), y[:, None])))
counts = np.zeros(3, dtype=np.int)
counts[1] += 2
flags.DEFINE_enum(name="fp16_implementation", default="keras", enum_values=("keras', 'graph_rewrite"), help="How.")
flags.FLAGS(["era_port.py", "--fp16_implementation=graph_rewrite"])
try:
    np.find_common_type([np.float32], [])
    no_counterpart = None
except AttributeError as error:  # NoCounterpartError is an AttributeError
    no_counterpart = str(error)
print(
    json.dumps(
        {
            "types": [np.float is float, np.int is int, np.object is object, np.bool is bool or np.bool is np.bool_],
            "numpy_2_names": [
                float(np.product([2, 3])),
                bool(np.isnan(np.NaN)),
                np.Inf == np.inf,
                np.bool8 == np.bool_,
            ],
            "asscalar": np.asscalar(np.array([7])),
            "argspec": list(inspect.getargspec(batches).args),
            "elapsed": time.clock() - start >= 0,
            "loose_version": LooseVersion("1.15.0") < LooseVersion("2.6.0"),
            "settings": [settings.LEARNING_RATE, sys.modules["settings"] is settings],
            "counts": counts.tolist(),
            "fp16_implementation": flags.FLAGS.fp16_implementation,
            "losses": [losses[0], losses[-1]],
            "no_counterpart": no_counterpart,
        }
    )
)
