"""A TF 1.15 script importing TF 1.15's private module paths, as real scripts do: ops.Tensor, tf.data's private
thread pools, contrib's `_Linear`, tensorflow.python.keras.preprocessing; a private name that has no counterpart
imports and raises NoCounterpartError when used. Prints one line per check."""

import tensorflow as tf
import tensorflow.python.framework.ops as ops2
from tensorflow.python.framework import ops

print(ops.Tensor is tf.Tensor, ops2.Tensor is tf.Tensor, ops.get_default_graph is not None)
from tensorflow.python.data.experimental.ops import threadpool

ds = threadpool.override_threadpool(tf.data.Dataset.range(3), threadpool.PrivateThreadPool(2, display_name="x"))
print(ds.options().threading.private_threadpool_size)
from tensorflow.contrib.rnn.python.ops.rnn_cell import _Linear

x = tf.ones([2, 3])
with tf.variable_scope("cell"):
    lin = _Linear([x, x], 4, True)
print(sorted(v.op.name for v in tf.global_variables()), lin([x, x]).shape)
import tensorflow.python.keras.preprocessing.sequence as seq
from tensorflow.python.keras.preprocessing.image import ImageDataGenerator

print(seq.pad_sequences([[1]], maxlen=2).tolist(), ImageDataGenerator.__name__)
from tensorflow.contrib.rnn.python.ops.rnn_cell import _NoSuchHelper

try:
    _NoSuchHelper()
except Exception as error:
    print(type(error).__name__)
