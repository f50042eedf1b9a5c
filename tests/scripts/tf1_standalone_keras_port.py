"""A TF 1.15-era program that imports the standalone `keras` package and trains in graph mode (run --tf1)."""

import keras
import numpy as np
import tensorflow as tf
from keras import optimizers
from keras.layers import Dense

model = keras.Sequential([Dense(1, input_shape=(2,))])
model.compile(optimizer=optimizers.Adam(0.01), loss="mse")
model.fit(np.ones([8, 2]), np.ones([8, 1]), epochs=1, verbose=0)
print(tf.executing_eagerly(), type(model.optimizer).__module__)
