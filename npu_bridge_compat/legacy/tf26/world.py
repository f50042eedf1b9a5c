"""The TF 2.6 world: its table (table.py) read by the one engine (legacy/world.py), with Keras' one move.

A TF 2.6 module path resolves, from the table and Keras' move (`keras.<path>` is `{keras}.src.<path>`), to a real
module of this line (served as itself) or to a module of its own whose names resolve on first access. TF 2.6's
stale Keras copy `tensorflow.python.keras.<path>` and `tensorflow.keras.<path>` are read as `keras.<path>`; the
program's own imports of `tensorflow.python.keras` get the live Keras 2 even where TensorFlow still ships its stale
copy (one Keras per process: see install_tf26_world). Names with no counterpart resolve to stand-ins that raise
`NoCounterpartError` when used; counterparts that behave differently warn once (`Tf26DifferenceWarning`).
`tf26_name_status` answers from the same lookup without running user code.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable
from typing import Any

from npu_bridge_compat.legacy.program import bound_by_import, importer_is_program, with_child
from npu_bridge_compat.legacy.tf26.table import FILLED, KERAS, MODULES
from npu_bridge_compat.legacy.world import (
    CURRENT,
    DifferenceWarning,
    Module,
    NameStatus,
    NoCounterpartError,
    World,
    WorldFinder,
    WorldModule,
    fills_names,
    importable,
    keras_is_aliased,
    keras_root,
)

__all__ = [
    "NameStatus",
    "NoCounterpartError",
    "TF26",
    "Tf26DifferenceWarning",
    "Tf26Finder",
    "fills_names",
    "keras_is_aliased",
    "keras_root",
    "one_keras_import",
    "tf26_name_status",
]

# The module trees whose TF 2.6 paths this world answers for.
ROOTS = ("keras", "tf_keras", "tensorflow.keras", "tensorflow.python", "tensorflow.tools", "tensorflow.estimator")
# Read as `keras.<path>`: TF 2.6's stale Keras copy, tf.keras, and tf_keras, the name `from keras.utils import
# np_utils` asks for where `keras` is tf_keras.
KERAS_MIRRORS = ("tensorflow.python.keras", "tensorflow.keras", "tf_keras")
# Served to the program's own imports even where TensorFlow ships a module of that name: its stale Keras copy.
STALE_KERAS = "tensorflow.python.keras"


class Tf26DifferenceWarning(DifferenceWarning):
    """A TF 2.6 name runs on a counterpart that behaves differently; said once per name."""


class Tf26Module(WorldModule):
    """A TF 2.6 module that this line lacks under its name; its names resolve from the table on first access."""


class _Tf26World(World):
    module_class = Tf26Module

    def redirect(self, path: str) -> str | None:
        for mirror in KERAS_MIRRORS:
            if path.startswith(mirror + "."):
                return "keras" + path[len(mirror) :]
        return None

    def fallback(self, path: str) -> Module | None:
        if path == "keras":
            return Module(sources=(KERAS,)) if keras_is_aliased() else None
        if path.startswith("keras."):  # Keras' one move
            rest = path[len("keras.") :]
            for candidate in (f"{KERAS}.{rest}", f"{KERAS}.src.{rest}"):
                if importable(candidate.replace(KERAS, keras_root())):
                    return Module(sources=(candidate,))
        return None

    def replaces_todays(self, fullname: str) -> bool:
        if tf_keras_module(fullname) is not None:  # the tf.keras module itself, not a second copy of its file
            return True
        return keras_is_aliased() and (fullname == "keras" or fullname.startswith("keras."))

    def module_for_import(self, fullname: str) -> types.ModuleType:
        return tf_keras_module(fullname) or self.served_module(fullname)


TF26 = _Tf26World(
    era="TF 2.6",
    modules=MODULES,
    warning=Tf26DifferenceWarning,
    filled=FILLED,
    roots=ROOTS,
    program_roots=(STALE_KERAS,),
    label=" (TF 2.6)",
    first_child_only=True,  # TF 2.6's module is the first source's child; later sources' are other modules
)


class Tf26Finder(WorldFinder):
    """Serves the TF 2.6 module paths this line lacks (and, from TensorFlow 2.16, `keras` as tf_keras)."""

    def __init__(self) -> None:
        super().__init__(TF26)


def tf_keras_module(fullname: str) -> types.ModuleType | None:
    """`tensorflow.keras.<path>` as the module `tf.keras.<path>` is (with the names this world fills in), or None."""
    if not (fullname + ".").startswith("tensorflow.keras.") or "tensorflow" not in sys.modules:
        return None
    module: Any = sys.modules["tensorflow"].keras
    if fullname == "tensorflow.keras":
        return importlib.import_module(module.__name__)  # the module behind a lazy loader (TensorFlow 2.16 on)
    for part in fullname.split(".")[2:]:
        module = getattr(module, part, None)
    return module if isinstance(module, types.ModuleType) else None


def one_keras_import(original_import: Callable[..., Any]) -> Callable[..., Any]:
    """A `builtins.__import__` that gives the program's own modules (legacy/program.py) the served modules for
    `tensorflow.python.keras...` (and `from tensorflow.python import keras`); any other import is
    `original_import`'s."""
    import tensorflow as tf

    stale = STALE_KERAS.split(".")

    def module_for(path: str) -> types.ModuleType:
        full = f"tensorflow.{path}"
        if TF26.in_tree(full, TF26.program_roots):
            return TF26.served_module(full)
        module = sys.modules.get(full) or importlib.import_module(full)
        return with_child(module, full, {STALE_KERAS: lambda: TF26.served_module(STALE_KERAS)})

    def program_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level or not name.startswith("tensorflow.python") or not importer_is_program(globals):
            return original_import(name, globals, locals, fromlist, level)
        parts = name.split(".")
        if parts[: len(stale)] != stale:
            module = original_import(name, globals, locals, fromlist, level)
            if name == "tensorflow.python" and fromlist and "keras" in fromlist:
                return module_for("python")  # `from tensorflow.python import keras`
            return module
        if fromlist:
            return TF26.served_module(name)
        return bound_by_import(tf, parts[1:], module_for)  # `import tensorflow.python.keras.x` binds `tensorflow`

    return program_import


def tf26_name_status(dotted: str) -> NameStatus:
    """What a TF 2.6 dotted name (`keras.utils.control_flow_util.smart_cond`, `tensorflow.keras.__version__`)
    becomes in the TF 2.6 world here: works | differs | missing | unknown | current, with a one-sentence detail.
    Names today's TensorFlow or Keras 2 have as they are are `current`. Imports TensorFlow and Keras, never user
    code, and changes nothing."""
    parts = dotted.split(".")
    if keras_is_aliased() and parts[0] == "keras":  # `keras` is tf_keras here: its own names are current
        today = TF26.name_status(".".join((keras_root(), *parts[1:])))
        if today is CURRENT:
            return today
    return TF26.name_status(dotted)
