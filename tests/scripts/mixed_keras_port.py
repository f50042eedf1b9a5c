"""A TF2 port mixing TF 2.6's `tensorflow.python.keras` (its library's layers, fixtures/mixed_keras/ctr) with
`tf.keras` layers, as DeepCTR's ports do; run with `run SCRIPT graph|eager` (and `run --tf1 SCRIPT graph`). In
graph mode it trains through a compat.v1 session (Keras' own) and Keras fit; eagerly through fit and a
GradientTape. Prints one JSON line for the test."""

import json
import sys

import numpy as np
import tensorflow as tf
import tensorflow.python.keras as ts
from ctr.layers import DNN, PredictionLayer
from tensorflow.python.keras import backend as K
from tensorflow.python.keras.layers import Layer

mode = sys.argv[1]
if mode == "graph" and tf.executing_eagerly():
    tf.compat.v1.disable_eager_execution()

rng = np.random.RandomState(0)
x = rng.rand(256, 6).astype(np.float32)
y = (x[:, :3].sum(axis=1) > x[:, 3:].sum(axis=1)).astype(np.float32)[:, None]

inputs = tf.keras.layers.Input((6,))
hidden = DNN(16, name="dnn")(inputs)
logit = ts.layers.Dense(1, use_bias=False)(hidden)
model = tf.keras.models.Model(inputs, PredictionLayer()(logit))
report = {
    "one_layer_class": Layer is tf.keras.layers.Layer,
    "isinstance": all(isinstance(layer, tf.keras.layers.Layer) for layer in model.layers),
    "one_model_class": ts.models.Model is tf.keras.Model,
}
loss = tf.keras.losses.binary_crossentropy
if mode == "graph":
    labels = tf.compat.v1.placeholder(tf.float32, (None, 1))
    mean_loss = tf.reduce_mean(loss(labels, model.output))
    train = tf.compat.v1.train.GradientDescentOptimizer(0.5).minimize(mean_loss, var_list=model.trainable_weights)
    session = K.get_session()  # the one backend session: it initialised the model's variables
    report["one_session"] = session is tf.compat.v1.keras.backend.get_session()
    v1_losses = [session.run([train, mean_loss], {model.input: x, labels: y})[1] for _ in range(60)]
else:
    optimizer = tf.keras.optimizers.SGD(0.5)
    v1_losses = []
    for _ in range(60):
        with tf.GradientTape() as tape:
            step_loss = tf.reduce_mean(loss(y, model(x, training=True)))
        optimizer.apply_gradients(zip(tape.gradient(step_loss, model.trainable_weights), model.trainable_weights))
        v1_losses.append(float(step_loss))
model.compile("adam", "binary_crossentropy")
history = model.fit(x, y, batch_size=32, epochs=8, verbose=0)
report["first_losses"] = [float(v1_losses[0]), float(v1_losses[-1])]
report["fit_losses"] = [float(history.history["loss"][0]), float(history.history["loss"][-1])]
report["accuracy"] = float(((model.predict(x, verbose=0) > 0.5) == (y > 0.5)).mean())
report["eager"] = tf.executing_eagerly()
print(json.dumps(report))
