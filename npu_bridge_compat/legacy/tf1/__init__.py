"""The TF 1.15 world around the adapter: what ported scripts use besides `npu_bridge` and TensorFlow 2.15 lacks.

- `tensorflow.contrib` (and `tensorflow.examples.tutorials.mnist`): virtual modules whose names resolve, from one
  table (table.py), to maintained counterparts (tf_slim, tf.compat.v1.estimator.tpu, tf.data.experimental,
  tf.compat.v1.nn.rnn_cell, ...) or to the few written here (contrib/, mnist.py). Names with no counterpart raise
  `NoCounterpartError` when used, never at import.
- `install_tf1_imports()` (imports.py): `run --tf1`'s view, TF 1.15's `tensorflow` for the user's whole program.
- `tf1_name_status(name)`: what a dotted TF 1.15 name becomes here, from the same table.

Importing this package imports nothing of TensorFlow; `install_tf1_world()` makes the trees importable.
"""

from __future__ import annotations

import importlib.util
import sys

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat.keras import repair_tf1_layers_normalization
from npu_bridge_compat.compat.tf_slim import restore_names_tf_slim_uses
from npu_bridge_compat.errors import NpuConfigError
from npu_bridge_compat.legacy.tf1.world import (  # noqa: F401 - the public names of the TF 1.15 world
    PUBLIC_ROOTS,
    NameStatus,
    NoCounterpartError,
    Tf1DifferenceWarning,
    Tf1Finder,
    tf1_name_status,
    virtual_module,
)

OWNER = Owner.TF1_WORLD
_finder = Tf1Finder()


def install_tf1_world() -> None:
    """Make `tensorflow.contrib...` and `tensorflow.examples...` importable, and `tf.compat.v1.contrib` the
    contrib module (idempotent, through the changes registry)."""
    if _finder in sys.meta_path:
        return
    real = importlib.util.find_spec("tensorflow.contrib")
    if real is not None:
        raise NpuConfigError(
            f"this TensorFlow has its own tensorflow.contrib ({real.origin}); npu_bridge_compat will not shadow it."
        )
    changes.add_import_finder(
        _finder,
        owner=OWNER,
        reason="tensorflow.contrib and tensorflow.examples, from the TF 1.15 name table",
        packages=tuple(f"tensorflow.{root}" for root in PUBLIC_ROOTS),
        forget=_finder.forget_created,
    )
    import tensorflow as tf

    changes.replace_attribute(
        tf.compat.v1,
        "contrib",
        virtual_module("contrib"),
        owner=OWNER,
        reason="tf.contrib in TF 1.15 programs",
        label="tensorflow.compat.v1",
    )
    repair_tf1_layers_normalization()
    restore_names_tf_slim_uses(owner=OWNER)
