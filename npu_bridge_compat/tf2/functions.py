"""A TF2 program's own `tf.function`s under `open().as_default()`: the traced form of the run-time units, as the
Keras door builds them into Keras' steps. Dumps (of the steps dump_step selects, counting the function's calls
from 0) and numeric checks are built into each function the program decorates after `as_default()` (the adapter
replaces tf.function there too); a non-finite value raises NonFiniteValueError when the call returns. Functions of
Keras and TensorFlow themselves are left alone: the Keras door already handles Keras' steps.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from npu_bridge_compat.errors import NpuCompatWarning, warn
from npu_bridge_compat.plan import HostPlan
from npu_bridge_compat.runtime.probes import StepProbes
from npu_bridge_compat.runtime.units import traced_with_units

_LIBRARIES = ("keras", "tf_keras", "tensorflow", "npu_bridge_compat")


def with_units(plan: HostPlan) -> Callable[[Callable], Callable]:
    """A maker of tf.function replacements that build the plan's units into the program's functions."""

    def make(original: Callable) -> Callable:
        @functools.wraps(original)
        def function(func=None, *args, **kwargs):
            if func is None:
                return lambda decorated: function(decorated, *args, **kwargs)
            probes = StepProbes.for_plan(plan, graph_name=getattr(func, "__name__", "function"))
            mixed = plan.mixed_precision is not None
            module = getattr(func, "__module__", None) or ""
            if (probes is None and not mixed) or module.split(".")[0] in _LIBRARIES:
                return original(func, *args, **kwargs)
            if probes is not None and kwargs.get("jit_compile"):
                warn(
                    f"tf.function({func.__name__}, jit_compile=True): XLA cannot compile the dumps and numeric "
                    "checks the NPU options ask for, so it runs without XLA (the adapter turns XLA off too).",
                    NpuCompatWarning,
                )
                kwargs["jit_compile"] = False

            @functools.wraps(func)
            def traced(*call_args, **call_kwargs):
                return traced_with_units(lambda: func(*call_args, **call_kwargs), probes, mixed)

            made = original(traced, *args, **kwargs)
            return made if probes is None or probes.failure is None else CheckedFunction(made, probes)

        return function

    return make


class CheckedFunction:
    """A tf.function whose calls raise NonFiniteValueError for a non-finite value its checks recorded."""

    def __init__(self, function, probes: StepProbes) -> None:
        self._function, self._probes = function, probes

    def __call__(self, *args, **kwargs):
        import tensorflow as tf

        result = self._function(*args, **kwargs)
        if tf.executing_eagerly():  # a call from another function is checked with that one's outputs
            self._probes.raise_if_failed(self._probes.failure.numpy())
        return result

    def __get__(self, instance, owner):
        """A decorated method, bound to its object."""
        return self if instance is None else CheckedFunction(self._function.__get__(instance, owner), self._probes)

    def __getattr__(self, name: str):
        return getattr(self._function, name)  # get_concrete_function, python_function, ...
