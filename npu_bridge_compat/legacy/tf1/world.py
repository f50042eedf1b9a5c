"""The TF 1.15 world: its table (table.py) read by the one engine (imports/world.py), and its view of the program's
imports (`run --tf1`).

A served module resolves each name on first access, from the table alone. Names with no counterpart resolve to
stand-ins that raise `NoCounterpartError` when used, so `import tensorflow.contrib...` never fails for them
(tensorflow.contrib is a closed tree: a name the table does not know is a stand-in too, naming the closest known
one); counterparts that behave differently warn once (`Tf1DifferenceWarning`). `TF1.status(name)` answers for every
`tensorflow.` name from the same lookup, without running any user code: a top-level name TensorFlow 2 lacks is
`tf.compat.v1`'s under `run --tf1` (`tf1_status`).

The program's view: every module whose file is the program's (imports/program.py: the script, its folder, vendored
libraries there) gets, from `import tensorflow as tf`, `tf.compat.v1` with `tf.contrib` on it and TensorFlow
1.15's version (`tf.__version__`, `tf.VERSION`, `tf.version.VERSION`, `tf.GIT_VERSION`: code that branches on the
version takes its TF1 branch); its `tensorflow.python.keras.*` imports get Keras 2's modules (tf.keras), and its
`keras.*` imports the TF 1.15 API of the same Keras. Installed libraries keep TensorFlow 2 and its version.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import types
from collections.abc import Callable
from typing import Any

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat.config import disable_v2_behaviour
from npu_bridge_compat.compat.keras import repair_tf1_layers_normalization
from npu_bridge_compat.compat.tf_slim import restore_names_tf_slim_uses
from npu_bridge_compat.compat.versions import tensorflow_version
from npu_bridge_compat.errors import NpuConfigError
from npu_bridge_compat.imports.program import bound_by_import, with_child
from npu_bridge_compat.imports.world import (
    DifferenceWarning,
    NameStatus,
    NoCounterpartError,
    Rules,
    Status,
    Unavailable,
    World,
    WorldModule,
    today_has,
)
from npu_bridge_compat.legacy.keras2 import keras2_module
from npu_bridge_compat.legacy.tf1.table import MODULES, PUBLIC_ROOTS, ROOTS, TF1_NAMESPACES
from npu_bridge_compat.legacy.tf26.world import TF26

__all__ = [
    "NameStatus",
    "NoCounterpartError",
    "PUBLIC_ROOTS",
    "TF1",
    "TF1_GIT_VERSION",
    "TF1_VERSION",
    "Tf1DifferenceWarning",
    "Tf1Module",
    "Unavailable",
    "served_module",
]

_PREFIX = "tensorflow."
# TF 1.15's private modules: real modules of TensorFlow 2 (or absent there) that its own code still imports
_PER_IMPORTER_ROOTS = tuple(root for root in ROOTS if root.startswith("python."))


def _per_importer(path: str) -> bool:
    """Whether a path below `tensorflow.` is one of TF 1.15's private modules the table serves to the program."""
    return any(path == root or path.startswith(root + ".") for root in _PER_IMPORTER_ROOTS)


def _attribute_path(obj: Any, parts: list[str]) -> Any:
    """`obj.<parts...>`, or None where one is missing."""
    for part in parts:
        obj = getattr(obj, part, None)
    return obj


TF1_VERSION = "1.15.5"  # the last release of TensorFlow 1.15, the adapter's TensorFlow
TF1_GIT_VERSION = "v1.15.5"
_NOT_TENSORFLOW = NameStatus(Status.UNKNOWN, "not a TensorFlow name")


class Tf1DifferenceWarning(DifferenceWarning):
    """A TF 1.15 name runs on a counterpart that behaves differently; said once per name."""


class Tf1Module(WorldModule):
    """A TF 1.15 module that TensorFlow 2 lacks (or that the program sees in place of today's): its names resolve
    from the table on first access."""


class WithOwnNames(types.ModuleType):
    """A module as the program sees it: `base`'s names, but for the ones given here."""

    def __init__(self, base: types.ModuleType, **own: Any) -> None:
        super().__init__(base.__name__, base.__doc__)
        self._base = base
        vars(self).update(own)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self._base)) | {name for name in vars(self) if not name.startswith("_")})

    def __repr__(self) -> str:
        return f"<module {self.__name__!r} (as TensorFlow 1.15 had it; npu_bridge_compat)>"


def tf1_api(v1: types.ModuleType) -> WithOwnNames:
    """`tensorflow` as the program sees it under `run --tf1`: tf.compat.v1 with TensorFlow 1.15's version."""
    version = WithOwnNames(v1.version, VERSION=TF1_VERSION, GIT_VERSION=TF1_GIT_VERSION)
    return WithOwnNames(v1, __version__=TF1_VERSION, VERSION=TF1_VERSION, GIT_VERSION=TF1_GIT_VERSION, version=version)


def _can_install(world: World) -> bool:
    real = importlib.util.find_spec("tensorflow.contrib")
    if real is not None:
        raise NpuConfigError(
            f"this TensorFlow has its own tensorflow.contrib ({real.origin}); npu_bridge_compat will not shadow it."
        )
    return True


def _install_more(world: World) -> None:
    import tensorflow as tf

    changes.replace_attribute(
        tf.compat.v1,
        "contrib",
        served_module("contrib"),
        owner=world.owner,
        reason="tf.contrib in TF 1.15 programs",
        label="tensorflow.compat.v1",
    )
    repair_tf1_layers_normalization()
    restore_names_tf_slim_uses(owner=world.owner)


def _serve_more(world: World) -> None:
    """TF2 behaviour is disabled process-wide: TF 1.15 programs build graphs and run sessions."""
    disable_v2_behaviour(
        owner=world.owner, reason="TF 1.15 programs build graphs and run sessions (tf.compat.v1.disable_v2_behavior)"
    )


@functools.cache
def program_api() -> WithOwnNames:
    """`tensorflow` as the program sees it, `tf.examples` included (`tf.contrib` is on tf.compat.v1 itself)."""
    import tensorflow as tf

    api = tf1_api(tf.compat.v1)
    api.examples = served_module("examples")
    return api


def _module_for(path: str) -> Any:
    """The module `tensorflow.<path>` as the program sees it."""
    if _per_importer(path):
        return served_module(path)
    if path == "version":
        return program_api().version
    # TF 1.15's API module of a public path (`from tensorflow.nn import rnn_cell` reads tf.compat.v1.nn); the
    # module the original import loaded for tensorflow.compat.* and tensorflow.python.* (the same then and now)
    parts = path.split(".")
    api = None if parts[0] in ("compat", "python") else _attribute_path(program_api(), parts)
    module = api if isinstance(api, types.ModuleType) else sys.modules.get(f"tensorflow.{path}")
    if module is None:
        module = functools.reduce(getattr, path.split("."), program_api())
    # `from tensorflow.python import keras` gets the redirected one too
    redirected = {root: functools.partial(served_module, root) for root in _PER_IMPORTER_ROOTS}
    return with_child(module, path, redirected)


def _program_import(
    world: World, name: str, globals: dict | None, locals: Any, fromlist: Any, original: Callable[..., Any]
) -> Any:
    if name.partition(".")[0] == "keras":
        return _keras_import(name, globals, locals, fromlist, original)
    parts = name.split(".")[1:]
    if not _per_importer(".".join(parts)):
        try:
            original(name, globals, locals, fromlist, 0)
        except ModuleNotFoundError:  # a module of TF 1.15's API alone, imported by its path (tensorflow.layers)
            if not isinstance(_attribute_path(program_api(), parts), types.ModuleType):
                raise
    if fromlist:
        return _module_for(".".join(parts)) if parts else program_api()
    # `import tensorflow.a.b` binds `tensorflow`: the API, whose `a.b` leads to the module just imported
    return bound_by_import(program_api(), parts, _module_for)


def _keras_import(name, globals, locals, fromlist, original) -> Any:
    """The program's `import keras...` gets the Keras of its `tf.keras`: Keras 2's TF 1.15 API, whose
    optimizers work in graph mode (Keras 2.15's own new optimizers need eager execution); the standalone
    Keras 2.2 table answers the package itself and what that API lacks."""
    tf1_keras = program_api().keras.__name__  # keras.api._v1.keras, or tf_keras.api._v1.keras from TensorFlow 2.16
    rest = name.partition(".")[2]
    try:
        module = original(f"{tf1_keras}.{rest}" if rest else tf1_keras, globals, locals, ["_"], 0)
    except ImportError:
        module = None
    if not rest or module is None or any(item != "*" and not hasattr(module, item) for item in fromlist or ()):
        module = keras2_module(name) or module
    if module is None:
        try:  # Keras 2's own module paths of the era (keras.layers.convolutional), from the TF 2.6 table
            module = TF26.served_module(name)
        except ImportError:  # Keras' own modules (keras.src...): as they are
            return original(name, globals, locals, fromlist, 0)
    return module if fromlist else keras2_module("keras")


def tf1_status(world: World, dotted: str) -> NameStatus:
    """What a `tensorflow.` name becomes under `run --tf1` (the TF 1.15 world's `status` rule): a name of the trees
    TensorFlow 2 dropped (tensorflow.contrib, tensorflow.python.keras, tensorflow.examples) from the table; a name
    this TensorFlow has as it is, current; a name of TF 1.15's private modules it lacks, from the table where the
    table knows it; any other name `tf.compat.v1`'s (`tf.Session` is tf.compat.v1.Session), or missing where that
    has none either."""
    if not world.in_tree(dotted, ("tensorflow",)):
        return _NOT_TENSORFLOW
    if world.in_tree(dotted, TF1_NAMESPACES):
        return world.table_status(dotted)
    if today_has(dotted):
        return NameStatus(Status.CURRENT, "this TensorFlow has it under the same name")
    if world.in_tree(dotted, world.roots) and (found := world.table_status(dotted)).status is not Status.UNKNOWN:
        return found
    rest = dotted.partition(".")[2]
    if today_has(f"tensorflow.compat.v1.{rest}"):
        return NameStatus(
            Status.WORKS,
            f"tf.{rest} is tf.compat.v1.{rest} under `run --tf1` (TensorFlow {tensorflow_version()} has no tf.{rest})",
        )
    parts = dotted.split(".")
    found = next(cut for cut in range(len(parts) - 1, 0, -1) if today_has(".".join(parts[:cut])))
    return NameStatus(
        Status.MISSING,
        f"no {parts[found]} in {'.'.join(parts[:found])} (TensorFlow {tensorflow_version()}), nor under `run --tf1` "
        "(tf.compat.v1)",
    )


TF1 = World(
    name="tf1",
    owner=Owner.TF1_WORLD,
    era="TF 1.15",
    modules={_PREFIX + path: row for path, row in MODULES.items()},
    warning=Tf1DifferenceWarning,
    roots=tuple(_PREFIX + root for root in ROOTS),
    finder_roots=tuple(_PREFIX + root for root in PUBLIC_ROOTS),
    program_roots=tuple(_PREFIX + root for root in ROOTS if root.startswith("python.")),
    stand_in_unknown=True,
    aliases=False,  # a closed tree: each module answers for its names, a stand-in for any it does not know
    serves="tensorflow.contrib and tensorflow.examples, from the TF 1.15 name table",
    rules=Rules(
        module_class=Tf1Module,
        program_tops=("tensorflow", "keras"),
        program_import=_program_import,
        replaces_todays=lambda world, fullname: True,  # can_install refuses a TensorFlow with a tensorflow.contrib
        can_install=_can_install,
        install_more=_install_more,
        serve_more=_serve_more,
        status=tf1_status,
    ),
    answers_for=("tensorflow",),
    category="TF 1.15 name",
    unknown_reported_as=Status.UNKNOWN,
)


def served_module(path: str) -> Tf1Module:
    """The one module object of a module path below `tensorflow.` (`contrib.layers`; the same for attribute access,
    imports and the import hook); ModuleNotFoundError when the path is not a module of the tree."""
    return TF1.served_module(_PREFIX + path)
