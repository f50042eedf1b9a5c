"""npu_bridge.profiler.Profiler on a host: a TensorFlow profiler session around the block, written where
TensorBoard's profile plugin reads it (`<output_path>/plugins/profile/<run>/*.xplane.pb`).

The level chooses how much the host tracer records (L0: TensorFlow ops and steps, L1: more detail, L2: everything
it can); aic_metrics names AI Core hardware counters, which a host does not have: the value is checked and noted.
As on Ascend, profilers do not nest and do not combine with profiling_mode / profiling_options.
"""

from __future__ import annotations

import os

import tensorflow as tf

from npu_bridge_compat.errors import NpuCompatWarning, NpuOptionValueError, closest_name, warn
from npu_bridge_compat.options.grammars import AIC_METRICS

LEVELS = {"L0": 1, "L1": 2, "L2": 3}  # the TensorFlow host tracer's levels


def _check(option: str, value, allowed) -> None:
    if not isinstance(value, str):
        raise NpuOptionValueError(f"Option {option} should be str, but get type: {type(value)}")
    if allowed is not None and value not in allowed:
        closest = closest_name(value, allowed)
        hint = f" (did you mean '{closest}'?)" if closest else ""
        raise NpuOptionValueError(f"Option {option} must be one of {', '.join(allowed)}, got '{value}'{hint}")


class Profiler:
    """`with Profiler(level="L1", output_path="prof"):` traces what runs inside the block."""

    def __init__(self, *, level: str = "L0", aic_metrics: str = "", output_path: str = "") -> None:
        _check("level", level, tuple(LEVELS))
        _check("aic_metrics", aic_metrics, ("", *AIC_METRICS))
        _check("output_path", output_path, None)
        self._level = level
        self._aic_metrics = aic_metrics
        self._output_path = output_path

    def __enter__(self) -> Profiler:
        self.start()
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        self.stop()

    @property
    def output_path(self) -> str:
        """Where the trace goes: output_path, or the working directory when it is empty (as on Ascend)."""
        return os.path.abspath(self._output_path or os.getcwd())

    def start(self) -> None:
        if self._aic_metrics:
            warn(
                f"Profiler aic_metrics='{self._aic_metrics}' counts AI Core events, which a host does not have; "
                "the trace holds TensorFlow's host (and GPU) events",
                NpuCompatWarning,
            )
        os.makedirs(self.output_path, exist_ok=True)
        options = tf.profiler.experimental.ProfilerOptions(
            host_tracer_level=LEVELS[self._level], python_tracer_level=0, device_tracer_level=1
        )
        try:
            tf.profiler.experimental.start(self.output_path, options=options)
        except tf.errors.AlreadyExistsError:
            raise RuntimeError(
                "a profiler is already running: Profiler blocks do not nest and do not combine with "
                "profiling_mode / profiling_options, on a host as on Ascend"
            ) from None

    def stop(self) -> None:
        try:
            tf.profiler.experimental.stop()
        except tf.errors.UnavailableError:
            raise RuntimeError("Profiler.stop() without a running Profiler: call start() first") from None
