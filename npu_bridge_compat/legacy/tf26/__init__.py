"""The TF 2.6 world around `npu_device`: what ported TF2 programs import from TensorFlow 2.6 and Keras 2.6 that
later lines moved or removed, from one table (table.py).

The TF2 adapter ran on TensorFlow 2.6, whose Keras kept its modules at `keras.<path>` (`keras.utils.
control_flow_util`, `keras.layers.core.Dropout`, `keras.optimizer_v2`), whose TensorFlow still carried a copy of
Keras at `tensorflow.python.keras`, and whose `tf.keras.optimizers` were the OptimizerV2 classes. In this world
each such name resolves to its counterpart on this line (Keras 2.15, or tf_keras from TensorFlow 2.16, where
`import keras` gives tf_keras too); a counterpart that behaves differently warns once; a name with no
counterpart imports and raises `NoCounterpartError` naming it and why when used.

One Keras per process: TensorFlow 2.15 and later still ship a stale, frozen copy of Keras at
`tensorflow.python.keras` (TensorFlow's own modules import it while TensorFlow loads, so it is in `sys.modules`
before any program runs). A program that subclasses its `Layer` and applies `tf.keras` layers would mix two Keras
implementations, each with its own graph bookkeeping and session. So the program's own imports of
`tensorflow.python.keras...` (per importer, as `run --tf1` gives the program `tf.compat.v1`) get the live Keras 2
instead: one `Layer`, one `Model`, one backend session; TensorFlow's own modules keep their stale copy.

`run` installs it for every script it runs without `--tf1`; `install_tf26_world()` does it from Python (the
world's one `install`, world.py, and its view of the program's imports).
Importing this package changes nothing.
"""

from __future__ import annotations

from npu_bridge_compat.changes import Owner
from npu_bridge_compat.legacy.tf26.world import (  # noqa: F401 - the public names of the TF 2.6 world
    TF26,
    NameStatus,
    NoCounterpartError,
    Tf26DifferenceWarning,
    fills_names,
    keras_is_aliased,
    keras_root,
)

OWNER = Owner.TF26_WORLD


def install_tf26_world() -> None:
    """Make TF 2.6's and Keras 2.6's names resolve for the rest of the process (idempotent; undone with
    `changes.undo(owner=OWNER)`). Call it before the program imports Keras (`run` does): from TensorFlow 2.16
    `import keras` is served as tf_keras only while Keras 3 is not loaded yet."""
    TF26.serve()
