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
import os
import site
import sys
import sysconfig
from typing import Any

from npu_bridge_compat import changes
from npu_bridge_compat.compat.config import disable_v2_behaviour
from npu_bridge_compat.legacy.tf1 import OWNER, install_tf1_world
from npu_bridge_compat.legacy.tf1.table import ROOTS
from npu_bridge_compat.legacy.tf1.world import virtual_module

_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # npu_bridge_compat/
_ADAPTER_TREES = tuple(os.path.join(_PACKAGE, "legacy", tree) + os.sep for tree in ("npu_bridge", "hccl"))
# TF 1.15's private modules: real modules of TensorFlow 2.15 (or absent there) that its own code still imports
_PER_IMPORTER_ROOTS = tuple(root for root in ROOTS if root.startswith("python."))


@functools.cache
def _library_roots() -> tuple[str, ...]:
    """The Python installation, site-packages and npu_bridge_compat itself: code that keeps TensorFlow 2."""
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots.update(site.getsitepackages())
    roots.add(site.getusersitepackages())
    roots.add(_PACKAGE)
    return tuple(os.path.abspath(root) + os.sep for root in roots)


@functools.cache
def sees_tf1(filename: str) -> bool:
    """Whether the module in `filename` is the user's program (TF 1.15 view) rather than an installed library."""
    path = os.path.abspath(filename)
    return path.startswith(_ADAPTER_TREES) or not path.startswith(_library_roots())


class _Overlay:
    """The object `import tensorflow.a.b` binds to `tensorflow`: answers `a` itself, the rest from `base`."""

    def __init__(self, base: Any, name: str, value: Any) -> None:
        self._base, self._name, self._value = base, name, value

    def __getattr__(self, attribute: str) -> Any:
        return self._value if attribute == self._name else getattr(self._base, attribute)

    def __repr__(self) -> str:
        return repr(self._base)


def install_tf1_imports() -> None:
    """Give the user's program TF 1.15's `tensorflow` (idempotent, through the changes registry); TF2 behaviour is
    disabled process-wide."""
    if changes.is_replaced(builtins, "__import__"):
        return
    import tensorflow as tf

    install_tf1_world()
    disable_v2_behaviour(
        owner=OWNER, reason="TF 1.15 programs build graphs and run sessions (tf.compat.v1.disable_v2_behavior)"
    )
    v1 = tf.compat.v1
    original_import = builtins.__import__

    def module_for(path: str) -> Any:
        if path.startswith(_PER_IMPORTER_ROOTS):
            return virtual_module(path)
        module = sys.modules.get(f"tensorflow.{path}")  # imported by original_import, or an API attribute
        if module is None:
            module = functools.reduce(getattr, path.split("."), tf)
        for root in _PER_IMPORTER_ROOTS:  # `from tensorflow.python import keras` gets the redirected one too
            parent, _, child = root.rpartition(".")
            if parent == path:
                module = _Overlay(module, child, virtual_module(root))
        return module

    def tf1_import(name, globals=None, locals=None, fromlist=(), level=0):
        if not level and (name == "keras" or name.startswith("keras.")):
            return keras_import(name, globals, locals, fromlist)
        if level or not (name == "tensorflow" or name.startswith("tensorflow.")):
            return original_import(name, globals, locals, fromlist, level)
        filename = (globals or {}).get("__file__")
        if not filename or not sees_tf1(filename):
            return original_import(name, globals, locals, fromlist, level)
        parts = name.split(".")[1:]
        if not ".".join(parts).startswith(_PER_IMPORTER_ROOTS):
            original_import(name, globals, locals, fromlist, level)
        if fromlist:
            return module_for(".".join(parts)) if parts else v1
        # `import tensorflow.a.b` binds `tensorflow`: v1, whose `a.b` leads to the module just imported
        chain = [v1] + [module_for(".".join(parts[:depth])) for depth in range(1, len(parts) + 1)]
        bound = chain[-1]
        for depth in range(len(parts) - 1, -1, -1):
            bound = _Overlay(chain[depth], parts[depth], bound)
        return bound

    def keras_import(name, globals, locals, fromlist):
        """The program's `import keras...` gets the Keras of its `tf.keras`: Keras 2's TF 1.15 API, whose
        optimizers work in graph mode (Keras 2.15's own new optimizers need eager execution)."""
        filename = (globals or {}).get("__file__")
        if not filename or not sees_tf1(filename):
            return original_import(name, globals, locals, fromlist, 0)
        tf1_keras = v1.keras.__name__  # keras.api._v1.keras, or tf_keras.api._v1.keras from TensorFlow 2.16
        rest = name.partition(".")[2]
        try:
            module = original_import(f"{tf1_keras}.{rest}" if rest else tf1_keras, globals, locals, ["_"], 0)
        except ImportError:  # Keras' own modules (keras.src...): as they are
            return original_import(name, globals, locals, fromlist, 0)
        return module if fromlist else sys.modules[tf1_keras]

    changes.replace_attribute(
        builtins,
        "__import__",
        tf1_import,
        owner=OWNER,
        reason="`import tensorflow` in the program's own modules (not in libraries) gives TF 1.15's API",
    )
