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
