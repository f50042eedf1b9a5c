"""tf.estimator: TensorFlow 2.15's (the tensorflow-estimator package), and from TensorFlow 2.16 on the same package
served by estimator_library. Where it cannot be had (the package not installed), the Estimator door's classes
derive from stand-ins that raise TensorFlowVersionError when used. Checked on TensorFlow 2.15 and 2.21."""

from __future__ import annotations

import copy
import inspect
import sys
from collections.abc import Callable
from typing import Any

from npu_bridge_compat.compat import estimator_library
from npu_bridge_compat.compat.versions import ESTIMATOR_TENSORFLOW, _stand_in, tensorflow_version, version_tuple
from npu_bridge_compat.errors import TensorFlowVersionError


def estimator_api() -> Any:
    """`tf.estimator`, or None where it cannot be had (the tensorflow-estimator package is not installed). From
    TensorFlow 2.16 on, asking for it serves the package (estimator_library, through the changes registry)."""
    import tensorflow as tf

    if estimator_library.library_is_served():
        if not estimator_library.package_is_usable():
            return None
        return estimator_library.load_estimator_api()
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
    installed = estimator_library.package_version()
    found = f"tensorflow-estimator {installed} is installed" if installed else "it is not installed"
    if version_tuple(version) > version_tuple(ESTIMATOR_TENSORFLOW):  # served by estimator_library
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

    if not estimator_library.library_is_served():
        return tf.keras.estimator.model_to_estimator(keras_model=keras_model, **arguments)
    if keras_model is not None and is_keras_3(keras_model):
        raise TensorFlowVersionError(
            f"model_to_estimator needs a Keras 2 model, and this one is Keras 3 (tf.keras on TensorFlow "
            f"{tensorflow_version()}), which cannot build into an Estimator's graph: build it with tf_keras "
            "(import tf_keras as keras), or run the script with python -m npu_bridge_compat run, which makes "
            "tf.keras Keras 2."
        )
    estimator_library.load_estimator_api()  # the package that tf_keras's model_to_estimator imports
    import tf_keras

    return tf_keras.estimator.model_to_estimator(keras_model=keras_model, **arguments)


def estimator_model_fn(estimator) -> Any:
    """The model_fn an Estimator was built with (model_to_estimator keeps no public handle on it). Checked on
    TensorFlow 2.15 and 2.21 (tensorflow-estimator 2.15)."""
    return estimator._model_fn


def estimator_warm_start(estimator) -> Any:
    """The warm-start settings an Estimator was built with. Checked on TensorFlow 2.15 and 2.21 (tensorflow-estimator
    2.15)."""
    return estimator._warm_start_settings


def run_estimator_on(estimator, master: str, session_config, writes_model_dir: bool) -> None:
    """Make a built Estimator run its sessions on `master` with `session_config`; without `writes_model_dir`, it
    writes no checkpoints, summaries or step logs (it still restores from its model_dir). RunConfig has no public
    way to change its master, and `replace` cannot turn checkpoints off. Checked on TensorFlow 2.15 and 2.21
    (tensorflow-estimator 2.15)."""
    config = copy.copy(estimator._config)  # Estimator reads its sessions' target and saving intervals here
    config._master = master
    config._evaluation_master = master  # evaluate's sessions: RunConfig leaves it empty, i.e. a local session
    if not writes_model_dir:
        config._save_checkpoints_steps = config._save_checkpoints_secs = None
        config._save_summary_steps = 0
        config._log_step_count_steps = None
    estimator._config = config
    estimator._session_config = session_config(estimator._session_config)


def told_when_an_estimator_is_built(told: Callable[[Any], None]) -> property:
    """A `device_fn` property for a RunConfig subclass that calls `told(config)` whenever an Estimator (any subclass
    too) is built with the config, without any change to the Estimator class: Estimator.__init__ reads
    `config.device_fn` once, and the only other readers, RunConfig's own checks (construction, `replace`), are told
    apart by the frame that reads it. Checked on TensorFlow 2.15 and 2.21 (tensorflow-estimator 2.15)."""
    inherited = getattr(estimator_class("RunConfig"), "device_fn", None)  # None: a stand-in, never constructed
    builder = getattr(estimator_class("Estimator"), "__init__", None)
    builder_code = getattr(inspect.unwrap(builder), "__code__", None)  # under the export decorator's deprecation

    def device_fn(self):
        if sys._getframe(1).f_code is builder_code:
            told(self)
        return inherited.fget(self)

    return property(device_fn, doc=getattr(inherited, "__doc__", None))
