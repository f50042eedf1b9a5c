"""tf.estimator on TensorFlow 2.16 and later: the real tensorflow-estimator 2.15 package, served as a world of the one
import engine (imports/world.py), and `tf.estimator` as the Estimator door and the program get it on any line.

TensorFlow 2.16 dropped tf.estimator and some modules the package imports (compat/estimator_library.py says which,
and holds what reaches TensorFlow's internals). Two steps, each through the changes registry
(Owner.ESTIMATOR_LIBRARY), each idempotent:
- `serve_estimator_imports()` (`run`, `run --tf1`: the world `ESTIMATOR_LIBRARY` is in legacy/runs.py's list): the
  world's module paths and the `tf.estimator` attributes, which load nothing until a program uses them; a program's
  first Estimator import or `tf.estimator.<name>` takes step two;
- `load_estimator_api(...)` (the Estimator door, through `estimator_api`): the `tf_export` names, then the package.
`estimator_api`, `estimator_class` and `keras_model_to_estimator` are what the doors ask for: TensorFlow's own
tf.estimator up to 2.15, the served package from 2.16 on, stand-ins that raise TensorFlowVersionError naming what to
install where it cannot be had. Checked on TensorFlow 2.15 and 2.21.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import types
from typing import Any

from npu_bridge_compat import changes
from npu_bridge_compat.compat.estimator_library import (
    ALIASES,
    API_MODULES,
    API_PARENTS,
    DISTRIBUTE_COORDINATOR,
    OWNER,
    PACKAGE,
    PACKAGE_MODULE,
    PACKAGE_VERSION,
    SERVED,
    TPU_ONLY,
    library_is_served,
    meet_keras_2,
    package_is_usable,
    package_version,
    register_estimator_api,
    served_module,
    tensorflow_constructors,
)
from npu_bridge_compat.compat.versions import ESTIMATOR_TENSORFLOW, _stand_in, tensorflow_version, version_tuple
from npu_bridge_compat.errors import TensorFlowVersionError
from npu_bridge_compat.imports.world import ENGINE_DEFAULT, Module, Rules, World, WorldFinder

# The world's table: TensorFlow 2.15's module paths that later lines lack, each an alias of the package's module it
# forwarded to (their child modules derived from it), and the modules the package imports that TensorFlow lacks.
MODULES = {
    **{path: Module(sources=(target,)) for path, target in ALIASES.items()},
    DISTRIBUTE_COORDINATOR: Module(note="the Estimator's steps without the distribute coordinator"),
    **{path: Module(note=f"a stand-in: {feature} raise when used") for path, feature in TPU_ONLY.items()},
}


def _module_spec(
    world: World, fullname: str, todays: importlib.machinery.ModuleSpec | None, finder: WorldFinder
) -> Any:
    """The package's own import first gives TensorFlow the names it exports under; `import tensorflow.compat.v1`
    (tf_keras does) loads another copy of the API module, which becomes tf.compat.v1, so today's loader of the API
    parents is wrapped to give that copy its tf.estimator too; the modules TensorFlow lacks are made here."""
    if fullname == PACKAGE_MODULE:
        register_estimator_api()  # the path finder then loads the package as usual
        return None
    if fullname in API_PARENTS:
        if todays is not None and todays.loader is not None:
            todays.loader = _WithEstimatorApi(todays.loader, API_PARENTS[fullname])
        return todays
    if fullname in SERVED:
        return importlib.machinery.ModuleSpec(fullname, finder)  # a module, not a package
    return ENGINE_DEFAULT


def _module_for_import(world: World, fullname: str) -> Any:
    return served_module(fullname) if fullname in SERVED else ENGINE_DEFAULT


ESTIMATOR_LIBRARY = World(
    name="estimator_library",
    owner=OWNER,
    era="TensorFlow 2.15's Estimator",
    modules=MODULES,
    roots=tuple(MODULES),
    serves="tensorflow-estimator 2.15 and TensorFlow 2.15's Estimator module paths import on this TensorFlow",
    rules=Rules(
        own_trees=tuple(MODULES),
        finder_paths=(PACKAGE_MODULE, *API_PARENTS),
        replaces_todays=lambda world, fullname: fullname in MODULES,
        module_spec=_module_spec,
        module_for_import=_module_for_import,
        can_install=lambda world: library_is_served() and package_is_usable(),
        install_more=lambda world: _give_api_parents(),
    ),
)


class _LazyEstimatorApi(types.ModuleType):
    """`tf.estimator` (or its v1 API) before the package is loaded: its first name loads it (as TensorFlow 2.15's
    own lazy loader did)."""

    def __init__(self, api: str) -> None:
        super().__init__(API_MODULES[api], f"tf.estimator ({api} API), served by npu_bridge_compat")
        self._api = api

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(load_estimator_api(self._api), name)
        setattr(self, name, value)  # read once: the package stays loaded (undoing forgets only TensorFlow's paths)
        return value

    def __dir__(self) -> list[str]:
        return dir(load_estimator_api(self._api))

    def __repr__(self) -> str:
        return f"<module {self.__name__!r} (tf.estimator, served by npu_bridge_compat)>"


_LAZY_APIS = {api: _LazyEstimatorApi(api) for api in API_MODULES}


class _WithEstimatorApi(importlib.abc.Loader):
    """Loads a TensorFlow API module as its own loader does, then gives it its `estimator`."""

    def __init__(self, loader: importlib.abc.Loader, api: str) -> None:
        self._loader, self._api = loader, api

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        _give_estimator_api(module, module.__name__, self._api)


def _give_api_parents() -> None:
    """tf, tf.compat.v1 and tf.compat.v2 get their tf.estimator where they lack it: when the world is installed,
    and again when the API is asked for, as a copy of an API module loaded after the world's install (`import
    tensorflow.compat.v1`) holds its tf.estimator only while the change made at its loading is in force."""
    import tensorflow as tf

    for label, module, api in (
        ("tensorflow", tf, "v2"),
        ("tensorflow.compat.v1", tf.compat.v1, "v1"),
        ("tensorflow.compat.v2", tf.compat.v2, "v2"),
    ):
        if not hasattr(module, "estimator"):
            _give_estimator_api(module, label, api)


def _give_estimator_api(module: types.ModuleType, label: str, api: str) -> None:
    changes.replace_attribute(
        module,
        "estimator",
        _LAZY_APIS[api],
        owner=OWNER,
        label=label,
        reason="tf.estimator (tensorflow-estimator 2.15)",
    )


def serve_estimator_imports() -> bool:
    """Make tf.estimator, tf.compat.v1.estimator, tensorflow_estimator and `tensorflow.python.estimator...`
    resolve on this TensorFlow, loading nothing until a program uses them. False (and nothing changed) where
    TensorFlow has its own tf.estimator or tensorflow-estimator 2.15 is not installed."""
    return ESTIMATOR_LIBRARY.install()


# --- tf.estimator as the doors get it ---------------------------------------------------------------------------


def estimator_api() -> Any:
    """`tf.estimator`, or None where it cannot be had (the tensorflow-estimator package is not installed). From
    TensorFlow 2.16 on, asking for it serves the package (through the changes registry)."""
    import tensorflow as tf

    if library_is_served():
        if not package_is_usable():
            return None
        return load_estimator_api()
    try:
        return tf.estimator
    except (AttributeError, ImportError):
        return None


def estimator_class(name: str) -> type:
    """The class `tf.estimator.<name>`; where tf.estimator is gone, a stand-in that a class can derive from and
    whose construction raises TensorFlowVersionError naming the TensorFlow the Estimator door needs."""
    api = estimator_api()
    return getattr(api, name) if api is not None else _stand_in(name, estimator_missing)


def estimator_missing(what: str) -> str:
    """Why `what` cannot run here, and what to do."""
    version = tensorflow_version()
    installed = package_version()
    found = f"tensorflow-estimator {installed} is installed" if installed else "it is not installed"
    if version_tuple(version) > version_tuple(ESTIMATOR_TENSORFLOW):  # served here
        return (
            f"{what} needs tf.estimator, which TensorFlow {version} lacks (removed in 2.16): npu_bridge_compat "
            f"serves tensorflow-estimator {ESTIMATOR_TENSORFLOW} on it, and {found}. "
            f'pip install "tensorflow-estimator=={ESTIMATOR_TENSORFLOW}.0" (the cpu and gpu extras include it).'
        )
    return (
        f"{what} needs tf.estimator, which TensorFlow {version} takes from the tensorflow-estimator package: "
        f'pip install "tensorflow-estimator=={ESTIMATOR_TENSORFLOW}.*".'
    )


def keras_model_to_estimator(keras_model=None, **arguments) -> Any:
    """Keras 2's `model_to_estimator`: tf.keras's on TensorFlow 2.15, tf_keras's from 2.16 on (whatever tf.keras is
    there), whose model_fn builds the model in the Estimator's graph; a Keras 3 model, which has no graph mode, is a
    TensorFlowVersionError saying what to build it with. Checked on TensorFlow 2.15 and 2.21."""
    import tensorflow as tf

    from npu_bridge_compat.compat.keras import is_keras_3

    if not library_is_served():
        return tf.keras.estimator.model_to_estimator(keras_model=keras_model, **arguments)
    if keras_model is not None and is_keras_3(keras_model):
        raise TensorFlowVersionError(
            f"model_to_estimator needs a Keras 2 model, and this one is Keras 3 (tf.keras on TensorFlow "
            f"{tensorflow_version()}), which cannot build into an Estimator's graph: build it with tf_keras "
            "(import tf_keras as keras), or run the script with python -m npu_bridge_compat run, which makes "
            "tf.keras Keras 2."
        )
    load_estimator_api()  # the package that tf_keras's model_to_estimator imports
    import tf_keras

    return tf_keras.estimator.model_to_estimator(keras_model=keras_model, **arguments)


# --- step two: the package ------------------------------------------------------------------------------------


def load_estimator_api(api: str = "v2") -> types.ModuleType:
    """tf.estimator (`api="v1"`: tf.compat.v1.estimator) from the package, serving what it needs on this
    TensorFlow; raises TensorFlowVersionError naming what to install where it cannot be served."""
    if not package_is_usable():
        version = package_version()
        found = f"tensorflow-estimator {version} is installed" if version else "tensorflow-estimator is not installed"
        raise TensorFlowVersionError(
            f"tf.estimator on TensorFlow {tensorflow_version()} is tensorflow-estimator {PACKAGE_VERSION} served by "
            f'npu_bridge_compat, and {found}: pip install "{PACKAGE}=={PACKAGE_VERSION}.0".'
        )
    serve_estimator_imports()
    _give_api_parents()
    register_estimator_api()
    constructors = tensorflow_constructors()
    module = importlib.import_module(API_MODULES[api])
    changes.record_library_rewrites(
        constructors,
        owner=OWNER,
        reason="tensorflow-estimator's estimator_export marks the TensorFlow classes it exports (session-run hooks, "
        "export outputs, ...) deprecated by wrapping their constructors, as loading it on TensorFlow 2.15 does",
    )
    meet_keras_2()
    return module
