"""`run --tf1`: the user's whole program sees TensorFlow 1.15, installed libraries keep TensorFlow 2.

Every module whose file lies outside the Python installation and site-packages (the script, its folder, sibling
packages on PYTHONPATH, a launcher and what it runs with runpy) gets, from `import tensorflow as tf`,
`tensorflow.compat.v1` with `tf.contrib` on it; its `tensorflow.python.keras.*` imports get Keras 2.15's modules
(tf.keras), and its `keras.*` imports the TF 1.15 API of the same Keras. npu_bridge_compat's own modules are
library code, except the adapter's module tree, which re-exports `tf` to scripts as the adapter did.
"""

from __future__ import annotations

import builtins
import functools
import sys
import types
from typing import Any

from npu_bridge_compat import changes
from npu_bridge_compat.compat.config import disable_v2_behaviour
from npu_bridge_compat.legacy.keras2 import keras2_module
from npu_bridge_compat.legacy.program import bound_by_import, importer_is_program, is_program_file, with_child
from npu_bridge_compat.legacy.tf1 import OWNER, install_tf1_world
from npu_bridge_compat.legacy.tf1.table import ROOTS
from npu_bridge_compat.legacy.tf1.world import virtual_module
from npu_bridge_compat.legacy.tf26.world import TF26

# TF 1.15's private modules: real modules of TensorFlow 2 (or absent there) that its own code still imports
_PER_IMPORTER_ROOTS = tuple(root for root in ROOTS if root.startswith("python."))
sees_tf1 = is_program_file  # whether a module's file is the user's program (TF 1.15 view)


def _per_importer(path: str) -> bool:
    """Whether a path below `tensorflow.` is one of TF 1.15's private modules the table serves to the program."""
    return any(path == root or path.startswith(root + ".") for root in _PER_IMPORTER_ROOTS)


def _attribute_path(obj: Any, parts: list[str]) -> Any:
    """`obj.<parts...>`, or None where one is missing."""
    for part in parts:
        obj = getattr(obj, part, None)
    return obj


def install_tf1_imports() -> None:
    """Give the user's program TF 1.15's `tensorflow` (idempotent, through the changes registry); TF2 behaviour is
    disabled process-wide."""
    hooks = [change for change in changes.in_force() if change.target == "builtins.__import__"]
    if any(change.owner is OWNER for change in hooks):
        return
    # One program, one world: the TF 1.15 view takes over the import hook of a TF 2.6 world installed before it
    # (its own view of `tensorflow.python.keras` is the same live Keras 2).
    changes.undo(changes=hooks)
    import tensorflow as tf

    install_tf1_world()
    disable_v2_behaviour(
        owner=OWNER, reason="TF 1.15 programs build graphs and run sessions (tf.compat.v1.disable_v2_behavior)"
    )
    v1 = tf.compat.v1
    original_import = builtins.__import__

    def module_for(path: str) -> Any:
        if _per_importer(path):
            return virtual_module(path)
        module = sys.modules.get(f"tensorflow.{path}")  # imported by original_import, or an API attribute
        if module is None:
            module = api_module(path)
        # `from tensorflow.python import keras` gets the redirected one too
        redirected = {root: functools.partial(virtual_module, root) for root in _PER_IMPORTER_ROOTS}
        return with_child(module, path, redirected)

    def api_module(path: str) -> Any:
        """`tensorflow.<path>` as an API attribute: TensorFlow 2's, else TF 1.15's (`tensorflow.layers`)."""
        try:
            return functools.reduce(getattr, path.split("."), tf)
        except AttributeError:
            return functools.reduce(getattr, path.split("."), v1)

    def tf1_import(name, globals=None, locals=None, fromlist=(), level=0):
        if not level and (name == "keras" or name.startswith("keras.")):
            return keras_import(name, globals, locals, fromlist)
        if level or not (name == "tensorflow" or name.startswith("tensorflow.")):
            return original_import(name, globals, locals, fromlist, level)
        if not importer_is_program(globals):
            return original_import(name, globals, locals, fromlist, level)
        parts = name.split(".")[1:]
        if not _per_importer(".".join(parts)):
            try:
                original_import(name, globals, locals, fromlist, level)
            except ModuleNotFoundError:  # a module of TF 1.15's API alone, imported by its path (tensorflow.layers)
                if not isinstance(_attribute_path(v1, parts), types.ModuleType):
                    raise
        if fromlist:
            return module_for(".".join(parts)) if parts else v1
        # `import tensorflow.a.b` binds `tensorflow`: v1, whose `a.b` leads to the module just imported
        return bound_by_import(v1, parts, module_for)

    def keras_import(name, globals, locals, fromlist):
        """The program's `import keras...` gets the Keras of its `tf.keras`: Keras 2's TF 1.15 API, whose
        optimizers work in graph mode (Keras 2.15's own new optimizers need eager execution); the standalone
        Keras 2.2 table answers the package itself and what that API lacks."""
        if not importer_is_program(globals):
            return original_import(name, globals, locals, fromlist, 0)
        tf1_keras = v1.keras.__name__  # keras.api._v1.keras, or tf_keras.api._v1.keras from TensorFlow 2.16
        rest = name.partition(".")[2]
        try:
            module = original_import(f"{tf1_keras}.{rest}" if rest else tf1_keras, globals, locals, ["_"], 0)
        except ImportError:
            module = None
        if not rest or module is None or any(item != "*" and not hasattr(module, item) for item in fromlist or ()):
            module = keras2_module(name) or module
        if module is None:
            try:  # Keras 2's own module paths of the era (keras.layers.convolutional), from the TF 2.6 table
                module = TF26.served_module(name)
            except ImportError:  # Keras' own modules (keras.src...): as they are
                return original_import(name, globals, locals, fromlist, 0)
        return module if fromlist else keras2_module("keras")

    changes.replace_attribute(
        builtins,
        "__import__",
        tf1_import,
        owner=OWNER,
        reason="`import tensorflow` in the program's own modules (not in libraries) gives TF 1.15's API",
    )
