"""The adapter's Keras helpers that join two doors: graph-mode Keras on an NPUSession, a Keras model as an
NPUEstimator. They live here, beside the other adapter names, so that the doors stay side by side."""

from __future__ import annotations

import tensorflow as tf

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat import estimator_model_fn, estimator_warm_start
from npu_bridge_compat.compat.sessions import keras_global_session
from npu_bridge_compat.errors import NpuOptionValueError
from npu_bridge_compat.estimator import NPUEstimator, NPURunConfig
from npu_bridge_compat.estimator_library import estimator_class, keras_model_to_estimator
from npu_bridge_compat.session import NPUSession

KERAS_SESSION = "Keras' global session"


def set_keras_session_npu_config(config=None) -> NPUSession:
    """Graph-mode Keras (eager disabled): a session for the NPU config, made Keras' session (through the changes
    registry: undoing gives Keras back the session it had before the first one set here); returns it."""
    session = NPUSession(config=config)
    changes.undo(changes=[change for change in changes.in_force(Owner.NPU_INIT) if change.target == KERAS_SESSION])
    changes.change_setting(
        KERAS_SESSION,
        session,
        read=keras_global_session,
        write=tf.compat.v1.keras.backend.set_session,
        owner=Owner.NPU_INIT,
        reason="set_keras_session_npu_config: graph-mode Keras runs in a session of the NPU config",
    )
    return session


def npu_clear_session(config=None) -> NPUSession:
    """Clear Keras' graph and session, then set a new session for the NPU config."""
    tf.compat.v1.keras.backend.clear_session()
    return set_keras_session_npu_config(config)


def model_to_npu_estimator(
    keras_model=None,
    keras_model_path=None,
    custom_objects=None,
    model_dir=None,
    checkpoint_format="saver",
    config=None,
    job_start_file="",
) -> NPUEstimator:
    """A Keras model as an NPUEstimator with its NPURunConfig (so iterations_per_loop runs N steps per run)."""
    if (keras_model is None) == (keras_model_path is None):
        raise NpuOptionValueError("give exactly one of keras_model and keras_model_path")
    config = config or NPURunConfig(model_dir=model_dir)
    model_dir = model_dir or config.model_dir
    estimator = keras_model_to_estimator(
        keras_model=keras_model,
        keras_model_path=keras_model_path,
        custom_objects=custom_objects,
        model_dir=model_dir,
        checkpoint_format=checkpoint_format,
        config=estimator_class("RunConfig")(model_dir=model_dir),
    )
    return NPUEstimator(
        estimator_model_fn(estimator),
        model_dir=estimator.model_dir,
        config=config,
        job_start_file=job_start_file,
        warm_start_from=estimator_warm_start(estimator),
    )
