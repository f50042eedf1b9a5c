"""tf.estimator: present on TensorFlow 2.15 (the tensorflow-estimator package), gone from 2.16 on, where the
Estimator door's classes derive from stand-ins that raise TensorFlowVersionError when used. Checked on TensorFlow
2.15 and 2.21."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat.versions import ESTIMATOR_TENSORFLOW, _stand_in, tensorflow_version, version_tuple


@functools.lru_cache(maxsize=1)
def estimator_api() -> Any:
    """`tf.estimator`, or None where this TensorFlow has none (2.16 and later, or 2.15 without the package)."""
    import tensorflow as tf

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
    if version_tuple(version) > version_tuple(ESTIMATOR_TENSORFLOW):
        return (
            f"{what} needs tf.estimator, which TensorFlow removed in 2.16; this is TensorFlow {version}. Run "
            f"Estimator scripts with TensorFlow {ESTIMATOR_TENSORFLOW} and tensorflow-estimator (Python 3.11 or "
            'older: pip install "npu_bridge_compat[cpu]"), or move the model to the session door (NPUSession '
            "with util.set_iteration_per_loop) or the Keras door (NPUCallback), which run on every line."
        )
    return (
        f"{what} needs tf.estimator, which TensorFlow {version} takes from the tensorflow-estimator package: "
        f'pip install "tensorflow-estimator=={ESTIMATOR_TENSORFLOW}.*".'
    )


def estimator_model_fn(estimator) -> Any:
    """The model_fn an Estimator was built with (model_to_estimator keeps no public handle on it). Checked on
    TensorFlow 2.15."""
    return estimator._model_fn


def estimator_warm_start(estimator) -> Any:
    """The warm-start settings an Estimator was built with. Checked on TensorFlow 2.15."""
    return estimator._warm_start_settings


def run_estimator_on(estimator, master: str, session_config, writes_model_dir: bool) -> None:
    """Make a built Estimator run its sessions on `master` with `session_config`; without `writes_model_dir`, it
    writes no checkpoints, summaries or step logs (it still restores from its model_dir). RunConfig has no public
    way to change its master, and `replace` cannot turn checkpoints off. Checked on TensorFlow 2.15."""
    config = copy.copy(estimator._config)  # Estimator reads its sessions' target and saving intervals here
    config._master = master
    config._evaluation_master = master  # evaluate's sessions: RunConfig leaves it empty, i.e. a local session
    if not writes_model_dir:
        config._save_checkpoints_steps = config._save_checkpoints_secs = None
        config._save_summary_steps = 0
        config._log_step_count_steps = None
    estimator._config = config
    estimator._session_config = session_config(estimator._session_config)


_built_hooks: list[Callable[[Any], None]] = []


def call_when_estimators_are_built(hook: Callable[[Any], None]) -> None:
    """From now on `hook(estimator)` runs at the end of every tf.estimator.Estimator's construction (subclasses
    included). Estimator has no hook of its own for a config it is given, so its `__init__` is wrapped (through
    the changes registry). Checked on TensorFlow 2.15."""
    if hook not in _built_hooks:
        _built_hooks.append(hook)
    estimator = estimator_class("Estimator")
    if changes.is_replaced(estimator, "__init__"):
        return
    original = estimator.__init__

    @functools.wraps(original)
    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        for each in _built_hooks:
            each(self)

    changes.replace_attribute(
        estimator,
        "__init__",
        init,
        owner=Owner.ESTIMATOR_DOOR,
        reason="a plain tf.estimator.Estimator given an NPURunConfig enters its plan when built",
    )
