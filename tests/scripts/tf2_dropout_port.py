"""A ported TF2 Keras script with the dropout patch most ModelZoo TensorFlow2 ports carry (npu_convert_dropout.py):
Keras' Dropout.call replaced by one calling the port's own npu_ops.dropout, which draws its mask with
gen_npu_ops.drop_out_gen_mask and the seeds of TensorFlow's get_seed (None and None: no graph seed is set). The
stand-ins (tf2_dropout/) are written here after that pattern; the ports patch `keras.layers.core.Dropout`, the
same class as `tf.keras.layers.Dropout`. Prints one JSON line.
"""

import json
import sys

sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), "tf2_dropout"))

import npu_convert_dropout  # noqa: E402, F401 - patches Dropout.call, as the ports import it
import npu_device  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

npu_device.open().as_default()
features = np.random.RandomState(0).randn(256, 16).astype(np.float32)
labels = (features[:, :1] > 0).astype(np.float32)

dropout = tf.keras.layers.Dropout(0.5)
model = tf.keras.Sequential([tf.keras.layers.Dense(32, activation="relu"), dropout, tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss=tf.keras.losses.BinaryCrossentropy(from_logits=True))
history = model.fit(features, labels, batch_size=32, epochs=3, verbose=0)


@tf.function
def dropped(x):
    return dropout(x, training=True)


ones = tf.ones([4, 64])
masks = [(dropped(ones).numpy() != 0).tolist() for _ in range(3)]
values = sorted({float(v) for v in np.unique(dropped(ones).numpy())})
print(
    json.dumps(
        {
            "losses": history.history["loss"],
            "distinct_masks": len({json.dumps(m) for m in masks}),
            "values": values,
            "inference_is_identity": bool(np.array_equal(dropout(ones, training=False).numpy(), ones.numpy())),
            "keep_fraction": float(np.mean(masks)),
        }
    ),
    flush=True,
)
