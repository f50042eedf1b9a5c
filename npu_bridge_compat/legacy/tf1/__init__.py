"""The TF 1.15 world around the adapter: what ported scripts use besides `npu_bridge` and TensorFlow 2.15 lacks.

- `tensorflow.contrib` (and `tensorflow.examples.tutorials.mnist`): served modules whose names resolve, from one
  table (table.py), to maintained counterparts (tf_slim, tf.compat.v1.estimator.tpu, tf.data.experimental,
  tf.compat.v1.nn.rnn_cell, ...) or to the few written here (contrib/, mnist.py). Names with no counterpart raise
  `NoCounterpartError` when used, never at import.
- `install_tf1_imports()`: `run --tf1`'s view, TF 1.15's `tensorflow` for the user's whole program (world.py).
- `TF1.status(name)`: what a dotted `tensorflow.` name becomes under `run --tf1`, from the same table.

Importing this package imports nothing of TensorFlow; `install_tf1_world()` makes the trees importable.
"""

from __future__ import annotations

from npu_bridge_compat.changes import Owner
from npu_bridge_compat.legacy.tf1.world import (  # noqa: F401 - the public names of the TF 1.15 world
    PUBLIC_ROOTS,
    TF1,
    TF1_VERSION,
    NameStatus,
    NoCounterpartError,
    Tf1DifferenceWarning,
    served_module,
)

OWNER = Owner.TF1_WORLD


def install_tf1_world() -> None:
    """Make `tensorflow.contrib...` and `tensorflow.examples...` importable, and `tf.compat.v1.contrib` the
    contrib module (idempotent, through the changes registry)."""
    TF1.install()


def install_tf1_imports() -> None:
    """Give the user's program TF 1.15's `tensorflow` (idempotent, through the changes registry); TF2 behaviour is
    disabled process-wide."""
    TF1.serve()
