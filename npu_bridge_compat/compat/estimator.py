"""The Estimator's internals the doors reach: what a built Estimator was built with, and where its sessions run.
tf.estimator itself (TensorFlow's, or the package served from TensorFlow 2.16 on) is npu_bridge_compat/
estimator_library.py's. Checked on TensorFlow 2.15 and 2.21 (tensorflow-estimator 2.15)."""

from __future__ import annotations

import copy
import inspect
import sys
from collections.abc import Callable
from typing import Any


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


def told_when_an_estimator_is_built(told: Callable[[Any], None], run_config: type, estimator: type) -> property:
    """A `device_fn` property for a RunConfig subclass that calls `told(config)` whenever an Estimator (any subclass
    too) is built with the config, without any change to the Estimator class: Estimator.__init__ reads
    `config.device_fn` once, and the only other readers, RunConfig's own checks (construction, `replace`), are told
    apart by the frame that reads it. `run_config` and `estimator`: tf.estimator's RunConfig and Estimator. Checked
    on TensorFlow 2.15 and 2.21 (tensorflow-estimator 2.15)."""
    inherited = getattr(run_config, "device_fn", None)  # None: a stand-in, never constructed
    builder = getattr(estimator, "__init__", None)
    builder_code = getattr(inspect.unwrap(builder), "__code__", None)  # under the export decorator's deprecation

    def device_fn(self):
        if sys._getframe(1).f_code is builder_code:
            told(self)
        return inherited.fget(self)

    return property(device_fn, doc=getattr(inherited, "__doc__", None))
