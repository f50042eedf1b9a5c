"""A TF2 program's own `tf.function`s under `open().as_default()`: the traced form of the run-time units, as the
Keras door builds them into Keras' steps. Dumps and numeric checks are built into each function the program
decorates after `as_default()` (the adapter replaces tf.function there too): a dump of the steps dump_step
selects (counting the function's calls from 0) goes under one `<dump_path>/<time>` folder per process, a folder
per function; a non-finite value raises NonFiniteValueError when the call returns. Functions of Keras and
TensorFlow themselves are left alone: the Keras door already handles Keras' steps.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat.eager import calls_through, checked_after_calls, wrapping
from npu_bridge_compat.errors import NpuCompatWarning, warn
from npu_bridge_compat.plan import HostPlan
from npu_bridge_compat.plan.features import GraphKernelFusion, MixedPrecision, PrecisionChoice, TensorDump
from npu_bridge_compat.runtime.dump import new_run_directory
from npu_bridge_compat.runtime.forms import CallForms
from npu_bridge_compat.runtime.precision import note_program_policy
from npu_bridge_compat.runtime.probes import StepProbes
from npu_bridge_compat.runtime.units import traced_with_units

OWNER = Owner.TF2_DOOR
_LIBRARIES = ("keras", "tf_keras", "tensorflow", "npu_bridge_compat")
CHECKED_FUNCTIONS = changes.ProcessState("the numeric checks of every function made so far", OWNER, list)


def _raise_first_failure(probes: StepProbes) -> None:
    """After a call: a failure the functions it called recorded names the op itself, where the caller's own check
    names only the call of that function; so they are read first."""
    for each in [other for other in changes.state(CHECKED_FUNCTIONS) if other is not probes] + [probes]:
        each.raise_if_failed(each.failure.numpy())


def with_units(plan: HostPlan) -> Callable[[Callable], Callable]:
    """A maker of tf.function replacements that build the plan's units into the program's functions."""

    dump = plan.feature(TensorDump)
    # the program's functions dump into one `<dump_path>/<time>` folder per process, a folder per function
    shared_run = functools.cache(lambda: new_run_directory(dump.path)) if dump is not None else None

    def make(original: Callable) -> Callable:
        @functools.wraps(original)
        def function(func=None, *args, **kwargs):
            if func is None:
                return lambda decorated: function(decorated, *args, **kwargs)
            module = getattr(func, "__module__", None) or ""
            if module.split(".")[0] in _LIBRARIES:
                return original(func, *args, **kwargs)
            note_program_policy(plan.host)  # its functions run under the program's own Keras policy, if any
            made = _functions_with_units(original, func, args, kwargs)
            fusion = plan.feature(GraphKernelFusion)
            if fusion is None or not fusion.measured or kwargs.get("jit_compile"):
                fusion = None
            mixed = plan.mixed_precision
            if mixed is None or mixed.choice is not PrecisionChoice.MEASURED:
                mixed = None
            if fusion is None and mixed is None:
                return made
            return _decided_by_runs(made, getattr(func, "__qualname__", "function"), fusion, mixed)

        def _functions_with_units(original, func, args, kwargs):
            probes = StepProbes.for_plan(
                plan, graph_name=getattr(func, "__qualname__", "function").replace("<locals>.", ""), run=shared_run
            )
            mixed = plan.mixed_precision is not None
            if probes is None and not mixed:
                return original(func, *args, **kwargs)
            if probes is not None and kwargs.get("jit_compile"):
                warn(
                    f"tf.function({func.__name__}, jit_compile=True): XLA cannot compile the dumps and numeric "
                    "checks the NPU options ask for, so it runs without XLA (the adapter turns XLA off too).",
                    NpuCompatWarning,
                )
                kwargs["jit_compile"] = False

            def traced(*call_args, **call_kwargs):
                # the function as tf.function's AutoGraph converted it (it swaps the target of `wrapping`)
                target = traced.__wrapped__
                return traced_with_units(lambda: target(*call_args, **call_kwargs), probes, mixed)

            made = original(wrapping(func, traced), *args, **kwargs)
            if probes is None or probes.failure is None:
                return made
            changes.state(CHECKED_FUNCTIONS).append(probes)
            return checked_after_calls(made, lambda: _raise_first_failure(probes), owner=OWNER)

        return function

    return make


def _decided_by_runs(made, name: str, fusion: GraphKernelFusion | None, mixed: MixedPrecision | None):
    """`made`, whose calls from eager code run in the forms its first calls' times decide, per input shapes
    (runtime/forms.py)."""
    forms = CallForms(f"tf.function {name.replace('<locals>.', '')}", fusion, mixed)
    return calls_through(made, forms.call, owner=OWNER)
