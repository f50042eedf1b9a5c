"""The standalone Keras 2.2 / 2.3 world: what TF 1.15 programs import from the Keras package that ran beside
TensorFlow 1.15 and this line's Keras 2 lays out differently (`keras.engine.topology`, `keras.backend.
tensorflow_backend`, `keras.utils.np_utils`, `keras.__version__`, ...), from one table (table.py) read by the one
engine (imports/world.py). Names resolve to the TF 1.15 API of the line's Keras 2 (Keras 2.15 on TensorFlow 2.15,
tf_keras from 2.16); Keras 1's `Merge` / `merge`, which no Keras 2 has, resolve to stand-ins that raise
`NoCounterpartError` naming the merge layers that replace them.

`run --tf1` installs it (legacy/runs.py): its finder serves the Keras 2.2 module paths the line's Keras lacks, and
the program's own `import keras...` (the TF 1.15 world's view) gets its modules where the TF 1.15 API of the line's
Keras lacks the module or a name. Importing this package changes nothing.
"""

from __future__ import annotations

import importlib
import types

from npu_bridge_compat.changes import Owner
from npu_bridge_compat.imports.world import DifferenceWarning, NameStatus, Rules, Status, World, keras_root, today_has
from npu_bridge_compat.legacy.keras2.table import MODULES

__all__ = ["KERAS2", "Keras2DifferenceWarning", "keras2_module"]


class Keras2DifferenceWarning(DifferenceWarning):
    """A Keras 2.2 name runs on a counterpart that behaves differently; said once per name."""


def _keras_version() -> str:
    return importlib.import_module(keras_root()).__version__


def _status(world: World, dotted: str) -> NameStatus:
    """A name this line's Keras has as it is is current (`run --tf1` gives the program that Keras' TF 1.15 API
    first); any other, the table's."""
    if world.in_tree(dotted, world.roots) and today_has(dotted):
        return NameStatus(Status.CURRENT, "this line's Keras has it under the same name")
    return world.table_status(dotted)


KERAS2 = World(
    name="keras2",
    owner=Owner.KERAS2_WORLD,
    era="standalone Keras 2.2 / 2.3",
    modules=MODULES,
    warning=Keras2DifferenceWarning,
    roots=("keras",),
    program_roots=("keras",),  # under `run --tf1` the program's `import keras...` gets the table's modules
    label=" (standalone Keras)",
    serves="standalone Keras 2.2 / 2.3 module paths (keras.engine.topology, ...), from the Keras 2.2 name table",
    rules=Rules(where=lambda path: f"Keras {_keras_version()} (tf.compat.v1.keras)", status=_status),
    category="Keras 2.2 name",
)


def keras2_module(path: str) -> types.ModuleType | None:
    """The module a program's `import <path>` gets from the Keras 2.2 table, or None where it serves none."""
    try:
        return KERAS2.served_module(path)
    except ImportError:
        return None
