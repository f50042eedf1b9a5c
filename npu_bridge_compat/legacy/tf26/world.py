"""The TF 2.6 world: its table (table.py) read by the one engine (imports/world.py), with Keras' one move.

A TF 2.6 module path resolves, from the table and Keras' move (`keras.<path>` is `{keras}.src.<path>`), to a real
module of this line (served as itself) or to a module of its own whose names resolve on first access. TF 2.6's
stale Keras copy `tensorflow.python.keras.<path>` and `tensorflow.keras.<path>` are read as `keras.<path>`; the
program's own imports of `tensorflow.python.keras` get the live Keras 2 even where TensorFlow still ships its stale
copy (one Keras per process: see install_tf26_world). Names with no counterpart resolve to stand-ins that raise
`NoCounterpartError` when used; counterparts that behave differently warn once (`Tf26DifferenceWarning`).
`TF26.status(name)` answers from the same lookup without running user code (`tf26_status`).
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable
from typing import Any

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat import tf_keras_is_keras_3
from npu_bridge_compat.compat.tf_slim import restore_names_tf_slim_uses
from npu_bridge_compat.errors import warn
from npu_bridge_compat.imports.program import NOT_SERVED, bound_by_import, with_child
from npu_bridge_compat.imports.world import (
    CURRENT,
    ENGINE_DEFAULT,
    DifferenceWarning,
    Module,
    NameStatus,
    NoCounterpartError,
    Rules,
    World,
    WorldModule,
    fills_names,
    importable,
    keras_is_aliased,
    keras_root,
)
from npu_bridge_compat.legacy.tf26.table import FILLED, KERAS, LEGACY_OPTIMIZERS, MODULES

__all__ = [
    "NameStatus",
    "NoCounterpartError",
    "TF26",
    "Tf26DifferenceWarning",
    "fills_names",
    "keras_is_aliased",
    "keras_root",
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


def _redirect(path: str) -> str | None:
    for mirror in KERAS_MIRRORS:
        if path.startswith(mirror + "."):
            return "keras" + path[len(mirror) :]
    return None


def _fallback(path: str) -> Module | None:
    if path == "keras":
        return Module(sources=(KERAS,)) if keras_is_aliased() else None
    if path.startswith("keras."):  # Keras' one move
        rest = path[len("keras.") :]
        for candidate in (f"{KERAS}.{rest}", f"{KERAS}.src.{rest}"):
            if importable(candidate.replace(KERAS, keras_root())):
                return Module(sources=(candidate,))
    return None


def _replaces_todays(world: World, fullname: str) -> bool:
    if tf_keras_module(fullname) is not None:  # the tf.keras module itself, not a second copy of its file
        return True
    return keras_is_aliased() and (fullname == "keras" or fullname.startswith("keras."))


def _module_for_import(world: World, fullname: str) -> Any:
    return tf_keras_module(fullname) or ENGINE_DEFAULT


# --- installing ---


def _can_install(world: World) -> bool:
    """Not where the user chose Keras 3 (TF_USE_LEGACY_KERAS=0): Keras 2.6's names cannot map onto it."""
    import tensorflow  # noqa: F401 - the line's Keras is known once TensorFlow is loaded

    restore_names_tf_slim_uses(owner=world.owner)
    if tf_keras_is_keras_3():
        warn(
            "tf.keras is Keras 3 here, so TF 2.6 / Keras 2.6 names (keras.utils.control_flow_util, "
            "tf.keras.optimizers as OptimizerV2, ...) are not mapped; TF_USE_LEGACY_KERAS=1 with tf_keras maps "
            "them.",
            Tf26DifferenceWarning,
        )
        return False
    return True


def _apis() -> dict[str, types.ModuleType]:
    import tensorflow as tf

    return {  # tf.keras is a lazy loader from TensorFlow 2.16
        "tf.keras": importlib.import_module(tf.keras.__name__),
        "tf.compat.v2.keras": importlib.import_module(tf.compat.v2.keras.__name__),
    }


def _filled_modules(world: World, key: str) -> list[types.ModuleType]:
    """The module `key`; a `keras.<path>` key names Keras 2's module and the tf.keras APIs' modules of that
    path; `keras` itself is the Keras 2 package (Keras 2.6's modules below it, keras.engine, by Keras' move)."""
    if key == "keras":
        return [importlib.import_module(keras_root())]
    if not key.startswith("keras."):
        return [importlib.import_module(key)]
    rest = key[len("keras.") :]
    modules = [_keras_module(rest)]
    for api in _apis().values():
        module: Any = api
        for part in rest.split("."):
            module = getattr(module, part, None)
        if isinstance(module, types.ModuleType):
            modules.append(module)
    return modules


def _install_more(world: World) -> None:
    apis = _apis()
    keras_package = importlib.import_module(keras_root())
    for label, api in apis.items():
        changes.replace_attribute(
            api,
            "__version__",
            keras_package.__version__,
            owner=world.owner,
            label=label,
            reason="TF 2.6's tf.keras had a __version__: the version of the Keras 2 behind it",
        )
    legacy = apis["tf.keras"].optimizers.legacy
    every = (apis["tf.keras"].optimizers, apis["tf.compat.v2.keras"].optimizers, _keras_module("optimizers"))
    for optimizers in {id(m): m for m in every}.values():
        for name in LEGACY_OPTIMIZERS:
            changes.replace_attribute(
                optimizers,
                name,
                getattr(legacy, name),
                owner=world.owner,
                label=optimizers.__name__,
                reason="TF 2.6's Keras optimizers were the OptimizerV2 classes (today's optimizers.legacy), "
                "which ported optimizers subclass",
            )


# --- the program's view: one Keras per process ---


def _program_import(
    world: World, name: str, globals: dict | None, locals: Any, fromlist: Any, original: Callable[..., Any]
) -> Any:
    """The program's `tensorflow.python.keras...` (and `from tensorflow.python import keras`) get the live
    Keras 2 modules of this world, not the stale copy TensorFlow's own modules imported (see the package's
    docstring); the stale modules are in `sys.modules` already, so no finder is asked for them."""
    if not name.startswith("tensorflow.python"):
        return NOT_SERVED
    parts = name.split(".")
    if parts[: len(_STALE)] != _STALE:
        module = original(name, globals, locals, fromlist, 0)
        if name == "tensorflow.python" and fromlist and "keras" in fromlist:
            return _module_for("python")  # `from tensorflow.python import keras`
        return module
    if fromlist:
        return world.served_module(name)
    import tensorflow as tf

    return bound_by_import(tf, parts[1:], _module_for)  # `import tensorflow.python.keras.x` binds `tensorflow`


_STALE = STALE_KERAS.split(".")


def tf26_status(world: World, dotted: str) -> NameStatus:
    """What a TF 2.6 dotted name (`keras.utils.control_flow_util.smart_cond`, `tensorflow.keras.__version__`)
    becomes in the TF 2.6 world here (its `status` rule): its table's answer, but that names today's Keras 2 has
    as they are are `current` where `keras` is served as tf_keras."""
    parts = dotted.split(".")
    if keras_is_aliased() and parts[0] == "keras":  # `keras` is tf_keras here: its own names are current
        today = world.table_status(".".join((keras_root(), *parts[1:])))
        if today is CURRENT:
            return today
    return world.table_status(dotted)


TF26 = World(
    name="tf26",
    owner=Owner.TF26_WORLD,
    era="TF 2.6",
    modules=MODULES,
    warning=Tf26DifferenceWarning,
    filled=FILLED,
    roots=ROOTS,
    program_roots=(STALE_KERAS,),
    label=" (TF 2.6)",
    first_child_only=True,  # TF 2.6's module is the first source's child; later sources' are other modules
    serves="TF 2.6 / Keras 2.6 module paths resolve to their counterparts on this line",
    rules=Rules(
        module_class=Tf26Module,
        program_tops=("tensorflow",),
        program_import=_program_import,
        redirect=_redirect,
        fallback=_fallback,
        replaces_todays=_replaces_todays,
        module_for_import=_module_for_import,
        can_install=_can_install,
        filled_modules=_filled_modules,
        install_more=_install_more,
        status=tf26_status,
    ),
    category="TF 2.6 name",
)


def _keras_module(path: str) -> types.ModuleType:
    return importlib.import_module(f"{keras_root()}.{path}")


def _module_for(path: str) -> types.ModuleType:
    """The module `tensorflow.<path>` as the program sees it in this world."""
    full = f"tensorflow.{path}"
    if TF26.in_tree(full, TF26.program_roots):
        return TF26.served_module(full)
    module = sys.modules.get(full) or importlib.import_module(full)
    return with_child(module, full, {STALE_KERAS: lambda: TF26.served_module(STALE_KERAS)})


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
