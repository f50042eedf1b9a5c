"""Profiling: the TensorFlow profiler traces the training steps into profiling_options' `output`, in the
layout TensorBoard's profile plugin reads (`<output>/plugins/profile/<run>/*.xplane.pb`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import tensorflow as tf

from npu_bridge_compat.errors import NpuCompatWarning, warn


@contextlib.contextmanager
def profiler_trace(output: str) -> Iterator[None]:
    """Trace what runs inside the block; a profiler already running elsewhere is reported, not fought."""
    os.makedirs(output, exist_ok=True)
    try:
        tf.profiler.experimental.start(output)
    except tf.errors.AlreadyExistsError:
        warn(f"another TensorFlow profiler is already running; no trace is written to {output}", NpuCompatWarning)
        yield
        return
    try:
        yield
    finally:
        tf.profiler.experimental.stop()


class ProfilerHook(tf.compat.v1.train.SessionRunHook):
    """Traces an Estimator's training, from session creation to its end."""

    def __init__(self, output: str) -> None:
        self._output = output
        self._trace: contextlib.ExitStack | None = None

    def after_create_session(self, session, coord) -> None:
        self._trace = contextlib.ExitStack()
        self._trace.enter_context(profiler_trace(self._output))

    def end(self, session) -> None:
        if self._trace is not None:
            self._trace.close()
            self._trace = None
