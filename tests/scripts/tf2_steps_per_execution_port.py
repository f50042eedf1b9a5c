"""A TF2 port as ModelZoo's BERT run_classifier.py writes it: npu_device options set, the device opened, the loop
size set, and the model compiled with steps_per_execution (its `steps_per_loop`). Trains 2 epochs of 12 steps
with steps_per_execution=4 (and one with "auto" where the line's Keras has it) and prints one JSON line: the
train-function calls per epoch, the steps the optimizer took and the losses."""

import json

import npu_device
import numpy as np
import tensorflow as tf

STEPS, LOOP = 12, 4

npu_device.global_options().precision_mode = "allow_mix_precision"
npu_device.open().as_default()
npu_device.set_npu_loop_size(LOOP)


class CallsPerEpoch(tf.keras.callbacks.Callback):
    """Keras calls on_train_batch_end once per train-function call."""

    def on_train_begin(self, logs=None):
        self.calls = []

    def on_epoch_begin(self, epoch, logs=None):
        self.calls.append(0)

    def on_train_batch_end(self, batch, logs=None):
        self.calls[-1] += 1


def compiled(steps_per_execution):
    model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(1)])
    model.compile(tf.keras.optimizers.SGD(0.05), "mse", steps_per_execution=steps_per_execution)
    return model


features = np.random.RandomState(0).randn(16 * STEPS, 6).astype(np.float32)
data = tf.data.Dataset.from_tensor_slices((features, features[:, :1] * 0.5)).batch(16).repeat()
model, calls = compiled(LOOP), CallsPerEpoch()
history = model.fit(data, steps_per_epoch=STEPS, epochs=2, callbacks=[calls], verbose=0)
report = {
    "calls_per_epoch": calls.calls,
    "optimizer_steps": int(model.optimizer.iterations.numpy()),
    "losses": history.history["loss"],
}
if hasattr(model, "autotune_steps_per_execution"):  # Keras 2.13 and later tune the loop with "auto"
    auto = compiled("auto")
    report["auto_loss"] = auto.fit(data, steps_per_epoch=STEPS, epochs=1, verbose=0).history["loss"][-1]
print(json.dumps(report))
