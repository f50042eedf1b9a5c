"""The adapter's Keras helpers that join two doors: graph-mode Keras on an NPUSession, a Keras model as an
NPUEstimator. They live here, beside the other adapter names, so that the doors stay side by side."""

from __future__ import annotations

import tensorflow as tf

from npu_bridge_compat.compat import (
    estimator_class,
    estimator_model_fn,
    estimator_warm_start,
    keras_model_to_estimator,
)
from npu_bridge_compat.errors import NpuOptionValueError
from npu_bridge_compat.estimator import NPUEstimator, NPURunConfig
from npu_bridge_compat.session import NPUSession


def set_keras_session_npu_config(config=None) -> NPUSession:
    """Graph-mode Keras (eager disabled): a session for the NPU config, made Keras' session; returns it."""
    session = NPUSession(config=config)
    tf.compat.v1.keras.backend.set_session(session)
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
