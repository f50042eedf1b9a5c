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

`run` installs it for every script it runs without `--tf1`; `install_tf26_world()` does it from Python.
Importing this package changes nothing.
"""

from __future__ import annotations

import builtins
import importlib
import inspect
import sys
import types

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat import tf_keras_is_keras_3
from npu_bridge_compat.compat.tf_slim import restore_names_tf_slim_uses
from npu_bridge_compat.errors import warn
from npu_bridge_compat.legacy.tf26.table import FILLED, LEGACY_OPTIMIZERS
from npu_bridge_compat.legacy.tf26.world import (  # noqa: F401 - the public names of the TF 2.6 world
    TF26,
    NameStatus,
    NoCounterpartError,
    Tf26DifferenceWarning,
    Tf26Finder,
    fills_names,
    keras_is_aliased,
    keras_root,
    one_keras_import,
    tf26_name_status,
)

OWNER = Owner.TF26_WORLD
_finder = Tf26Finder()


def install_tf26_world() -> None:
    """Make TF 2.6's and Keras 2.6's names resolve for the rest of the process (idempotent; undone with
    `changes.undo(owner=OWNER)`). Call it before the program imports Keras (`run` does): from TensorFlow 2.16
    `import keras` is served as tf_keras only while Keras 3 is not loaded yet."""
    if tf26_world_installed():
        return
    import tensorflow as tf

    restore_names_tf_slim_uses(owner=OWNER)
    if tf_keras_is_keras_3():  # the user chose Keras 3 (TF_USE_LEGACY_KERAS=0): Keras 2.6's names cannot map onto it
        warn(
            "tf.keras is Keras 3 here, so TF 2.6 / Keras 2.6 names (keras.utils.control_flow_util, "
            "tf.keras.optimizers as OptimizerV2, ...) are not mapped; TF_USE_LEGACY_KERAS=1 with tf_keras maps them.",
            Tf26DifferenceWarning,
        )
        return
    changes.add_import_finder(
        _finder,
        owner=OWNER,
        reason="TF 2.6 / Keras 2.6 module paths resolve to their counterparts on this line",
        forget=_finder.forget_created,
    )
    _give_the_program_one_keras()
    keras_api = importlib.import_module(tf.keras.__name__)  # tf.keras is a lazy loader from TensorFlow 2.16
    keras_package = importlib.import_module(keras_root())
    apis = {"tf.keras": keras_api, "tf.compat.v2.keras": importlib.import_module(tf.compat.v2.keras.__name__)}
    for label, api in apis.items():
        changes.replace_attribute(
            api,
            "__version__",
            keras_package.__version__,
            owner=OWNER,
            label=label,
            reason="TF 2.6's tf.keras had a __version__: the version of the Keras 2 behind it",
        )
    _fill_missing_names(apis)
    legacy = keras_api.optimizers.legacy
    for optimizers in {
        id(m): m for m in (keras_api.optimizers, apis["tf.compat.v2.keras"].optimizers, _keras_module("optimizers"))
    }.values():
        for name in LEGACY_OPTIMIZERS:
            changes.replace_attribute(
                optimizers,
                name,
                getattr(legacy, name),
                owner=OWNER,
                label=optimizers.__name__,
                reason="TF 2.6's Keras optimizers were the OptimizerV2 classes (today's optimizers.legacy), which "
                "ported optimizers subclass",
            )


def _keras_module(path: str) -> types.ModuleType:
    return importlib.import_module(f"{keras_root()}.{path}")


def _fill_missing_names(apis: dict[str, types.ModuleType]) -> None:
    """Give today's modules that lack TF 2.6 names (FILLED) a PEP 562 `__getattr__` that resolves them."""
    for key in FILLED:
        targets: list[types.ModuleType] = []
        if key == "keras":  # the Keras 2 package itself: Keras 2.6's modules below it (keras.engine) by Keras' move
            targets.append(importlib.import_module(keras_root()))
        elif key.startswith("keras."):
            rest = key[len("keras.") :]
            targets.append(_keras_module(rest))
            for api in apis.values():
                module = api
                for part in rest.split("."):
                    module = getattr(module, part, None)
                if isinstance(module, types.ModuleType):
                    targets.append(module)
        else:
            targets.append(importlib.import_module(key))
        for module in {id(m): m for m in targets}.values():
            if fills_names(module) or inspect.getattr_static(type(module), "__getattr__", None) is not None:
                continue  # filled already, or a module class that resolves names of its own (a lazy loader)
            previous = inspect.getattr_static(module, "__getattr__", None)  # the module resolves names of its own
            changes.replace_attribute(
                module,
                "__getattr__",
                TF26.filled_getattr(key, module, previous),
                owner=OWNER,
                label=module.__name__,
                reason=f"TF 2.6's {key} had names this line keeps elsewhere",
            )


def _give_the_program_one_keras() -> None:
    """The program's own `import tensorflow.python.keras...` get the live Keras 2 modules of this world, not the
    stale copy TensorFlow's own modules imported (see the module's docstring). Per importer, through
    `builtins.__import__`: the stale modules are in `sys.modules` already, so no finder is asked for them."""
    changes.replace_attribute(
        builtins,
        "__import__",
        one_keras_import(builtins.__import__),
        owner=OWNER,
        reason="the program's imports of TF 2.6's tf.keras path get the live Keras 2 (one Keras per process), not "
        "the stale copy TensorFlow ships",
    )


def tf26_world_installed() -> bool:
    return _finder in sys.meta_path
