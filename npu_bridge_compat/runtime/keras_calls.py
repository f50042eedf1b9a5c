"""A plan's run-time units applied to one Keras `fit` / `evaluate` / `predict` call, as a Keras callback.

Both doors that run Keras use it: the Keras door (NPUCallback, which reads the options) and the TF2 door (whose
`as_default()` adds it to every Keras call). For the call's length it applies the plan: N steps per train-function
call (the Keras door's iterations_per_loop; under the TF2 door the program's own steps_per_execution is the loop),
the FusedBatchNormV3 workaround for the functions traced in mixed compute, grappler's settings and graph-kernel
fusion for the functions the call runs (with what fused reported), keep_dtype_scope, tensor dumps and numeric
checks built into the traced steps, and a profiler trace. Everything it changes (steps per execution, grappler
options, environment, the model's step methods and functions) is restored when the call ends, or when it fails
(Keras calls no *_end hook then).

What a call traces and decides is kept per model, plan, Keras policy and mode (`kept_function`), whichever
callback carries the plan: later calls run the same traced function in the forms its trials chose, with nothing
traced or timed again, until the model's own function changes (`compile()` again). Nothing kept refers to the
model but weakly, so it is freed with the model.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from collections.abc import Hashable

import tensorflow as tf

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat import (
    keras_step_number,
    keras_steps_per_execution,
    remake_keras_function,
    steps_per_execution_in_fit,
)
from npu_bridge_compat.compat.batchnorm import batchnorm_workaround
from npu_bridge_compat.compat.eager import function_calls_configured, function_run_metadata
from npu_bridge_compat.compat.keras import callback_reads_no_logs
from npu_bridge_compat.errors import NpuCompatWarning, NpuOptionValueError, warn
from npu_bridge_compat.plan import HostPlan
from npu_bridge_compat.plan.features import (
    BatchNormWorkaround,
    GraphKernelFusion,
    NumericChecks,
    PrecisionChoice,
    ProfilerTrace,
    RewriteSetting,
    StepLoop,
    TensorDump,
)
from npu_bridge_compat.runtime.forms import CallForms
from npu_bridge_compat.runtime.fusion import record, summarize
from npu_bridge_compat.runtime.precision import note_keras_policy
from npu_bridge_compat.runtime.probes import StepProbes
from npu_bridge_compat.runtime.process import applied_environment, apply_process_settings
from npu_bridge_compat.runtime.profiling import profiler_trace
from npu_bridge_compat.runtime.units import traced_with_units

# The feature kinds a Keras call carries out; a door's plan is narrowed to them (runtime/doors.py: narrowed).
KERAS_CALL_FEATURES = (
    StepLoop,
    BatchNormWorkaround,
    ProfilerTrace,
    TensorDump,
    NumericChecks,
    RewriteSetting,
    GraphKernelFusion,
)
OWNER = Owner.KERAS_CALL


class PlanCallback(tf.keras.callbacks.Callback):
    """Applies `plan` (narrowed to KERAS_CALL_FEATURES) to each Keras call it is given to. `step_loop`: the plan's
    StepLoop (iterations_per_loop, an NPU option) sets the steps per train-function call; without it (the TF2
    door) the program's own steps_per_execution is the loop."""

    def __init__(self, plan: HostPlan, step_loop: bool = True) -> None:
        super().__init__()
        callback_reads_no_logs(self)
        self.npu_plan = plan
        self._step_loop = step_loop
        self._check_keras_policy()
        self._active: contextlib.ExitStack | None = None
        self._replaced: list[tuple[KeptFunction, list]] = []  # (the function, the changes made for it), innermost last

    @property
    def steps_per_execution(self) -> int | None:
        """The steps per train-function call the plan sets; None where the program's own are the loop."""
        return self.npu_plan.steps_per_run if self._step_loop else None

    def _check_keras_policy(self) -> None:
        """A program's own mixed-precision policy runs as it asks (with a word where this host has no fast path
        for it), but not together with the NPU options' grappler mixed precision."""
        policy = tf.keras.mixed_precision.global_policy().name
        note_keras_policy(policy, self.npu_plan.host)
        if self.npu_plan.mixed_precision is not None:
            if policy.startswith("mixed"):
                raise NpuOptionValueError(
                    f"the Keras mixed-precision policy is '{policy}' and the NPU options ask for grappler mixed "
                    "precision; TensorFlow allows one or the other. Keep the NPU precision_mode, or set the policy "
                    "to 'float32'."
                )

    # Keras calls the *_begin/_end pairs of fit, evaluate and predict; evaluate may run inside fit.
    def on_train_begin(self, logs=None) -> None:
        self._begin("train")

    def on_train_end(self, logs=None) -> None:
        self._end()

    def on_test_begin(self, logs=None) -> None:
        self._begin("test")

    def on_test_end(self, logs=None) -> None:
        self._end()
        self._raise_evaluation_failure()

    def on_predict_begin(self, logs=None) -> None:
        self._begin("predict")

    def on_predict_end(self, logs=None) -> None:
        self._end()

    def _begin(self, mode: str) -> None:
        if not tf.compat.v1.executing_eagerly_outside_functions():
            raise NpuOptionValueError(
                "NPU options apply to TensorFlow 2 Keras, whose steps run as traced functions; this Keras runs in "
                "graph mode (TF2 behaviour disabled, as under `run --tf1`). Give Keras' session the NPU options "
                "instead: set_keras_session_npu_config(config) before fit, as the adapter's Keras guide does."
            )
        kept = kept_function(self.model, self.npu_plan, mode)
        if not self._replaced:  # the outermost call (evaluate may run inside fit)
            self._check_keras_policy()
            self._active = contextlib.ExitStack()
            for unit in _call_units(self.npu_plan, self.model, mode, kept.probes, self._step_loop):
                self._active.enter_context(unit)
        if kept.probes is not None:
            kept.probes.start()
        self._replaced.append((kept, kept.install(self.model, self)))

    def _end(self) -> None:
        kept, made = self._replaced.pop()
        kept.call_ended()
        changes.undo(changes=made)  # the model's own function and step (its class's method) come back
        if not self._replaced and self._active is not None:
            self._active.close()
            self._active = None

    def _raise_evaluation_failure(self) -> None:
        """Evaluate's checks are read when it ends too (Keras 2 evaluates with its own function, not a guarded
        one)."""
        probes = kept_function(self.model, self.npu_plan, "test").probes
        if probes is None or probes.failure is None:
            return
        failure = probes.failure.numpy()
        if failure[0] >= 0:
            self._abandon()  # inside fit, Keras calls no further end hook
            probes.raise_if_failed(failure)

    def _abandon(self) -> None:
        """Undo everything after a failed call: Keras stops without calling the *_end hooks."""
        while self._replaced:
            self._end()


# --- what is kept per model -------------------------------------------------------------------------------------

# Per model (by id, while it lives: an entry goes with its model), per plan, Keras policy and mode: the function
# traced with the plan's units, its probes and its trials, so that later fit / evaluate / predict calls of that
# model under the same plan run it again, decided, whichever callback carries the plan.
KEPT_FUNCTIONS = changes.ProcessState("the functions kept per Keras model and plan", Owner.KERAS_CALL, dict)
_kept_lock = threading.Lock()


def kept_function(model, plan: HostPlan, mode: str) -> KeptFunction:
    """The function kept for `model`'s `mode` calls under `plan` and the current Keras policy (made now if there
    is none). It is held only while the model lives: nothing kept refers to the model but weakly."""
    key = (_plan_key(plan), tf.keras.mixed_precision.global_policy().name, mode)
    with _kept_lock:
        kept_per_model = changes.state(KEPT_FUNCTIONS)
        per_model = kept_per_model.get(id(model))
        if per_model is None:
            per_model = kept_per_model[id(model)] = {}
            weakref.finalize(model, _forget_model, id(model)).atexit = False
        kept = per_model.get(key)
        if kept is None:
            kept = per_model[key] = KeptFunction(plan, mode)
        return kept


def kept_functions(model) -> tuple[KeptFunction, ...]:
    """What is kept for `model` (nothing once it is freed)."""
    with _kept_lock:
        return tuple(changes.state(KEPT_FUNCTIONS).get(id(model), {}).values())


def _forget_model(model_id: int) -> None:
    changes.state(KEPT_FUNCTIONS).pop(model_id, None)


def _plan_key(plan: HostPlan) -> Hashable:
    """What a kept function depends on in a plan: its features (equal plans from two callbacks share it)."""
    try:
        hash(plan.features)
    except TypeError:
        return id(plan)
    return plan.features


class KeptFunction:
    """One model's `mode` function under one plan: traced anew (on first use) with the plan's units wherever the
    model's own function is not the one it was made beside (the first call, `compile()` again); its trials and
    fusion report belong to that tracing, and start again only with it."""

    def __init__(self, plan: HostPlan, mode: str) -> None:
        self.plan, self.mode = plan, mode
        self.probes = _step_probes(plan).get(mode)
        self._callback: weakref.ref | None = None  # the callback of the call in progress
        self._own: weakref.ref | None = None  # the model's own function this one was made beside
        self._guarded: _GuardedFunction | None = None

    @property
    def callback(self) -> PlanCallback | None:
        """The callback of the call in progress, if any."""
        return self._callback() if self._callback is not None else None

    def call_ended(self) -> None:
        self._callback = None

    @property
    def trials(self) -> int:
        """How many trials (fusion, mixed precision) this function started, over all its tracings."""
        return self._trials_before + (self._guarded.trials if self._guarded is not None else 0)

    _trials_before = 0

    def install(self, model, callback: PlanCallback) -> list:
        """Put the step traced with the run-time units (traced_with_units) and the function in the model for one
        call; the changes made, for undoing when the call ends. Keras 2's evaluate calls the function it made
        before on_test_begin instead: that one is traced (on first use) with the wrapped step."""
        self._callback = weakref.ref(callback)
        step_attribute, function_attribute = f"{self.mode}_step", f"{self.mode}_function"
        label = f"<Keras model {model.name}>"
        made = [
            changes.replace_attribute(
                model,
                step_attribute,
                _ProbedStep(getattr(model, step_attribute), model, self.mode, self.probes, self.plan),
                owner=OWNER,
                reason="the step traced with the plan's dumps, numeric checks and keep-dtype",
                label=label,
                untracked=True,
            )
        ]
        own = getattr(model, function_attribute, None)
        remake = self._guarded is None or self._own is None or self._own() is not own
        if remake:
            if self._guarded is not None:
                self._trials_before += self._guarded.trials
            self._guarded = _GuardedFunction(self, f"Keras {self.mode} function")
            self._own = _weak_or_none(own)
        replace = functools.partial(
            changes.replace_attribute,
            model,
            function_attribute,
            owner=OWNER,
            reason="the function traced under the plan's settings, guarded by its numeric checks",
            label=label,
            untracked=True,
        )
        made.append(replace(self._guarded))
        if remake:
            # Keras puts the function it makes in the model itself: undoing the change puts the model's own back,
            # and the guarded one goes in again for the call.
            self._guarded.function = remake_keras_function(model, self.mode)
            changes.undo(changes=[made.pop()])
            made.append(replace(self._guarded))
        return made


def _weak_or_none(function) -> weakref.ref | None:
    if function is None:
        return None
    try:
        return weakref.ref(function)
    except TypeError:
        return None


def _call_units(plan: HostPlan, model, mode: str, probes: StepProbes | None, step_loop: bool) -> list:
    """What a fit / evaluate / predict call runs under, one context per planned effect, all undone when it ends:
    the environment and process switches, grappler's settings and graph-kernel fusion for the functions it calls,
    the FusedBatchNormV3 workaround for the functions it traces, no XLA where probes are built in, and for training
    the N-step loop (where the plan sets it) and the profiler trace."""
    units = [applied_environment(plan), _process_settings(plan), _function_config(plan)]
    if plan.feature(BatchNormWorkaround):
        units.append(batchnorm_workaround())
    if probes and getattr(model, "jit_compile", False):
        units.append(_without_xla(model))
    if mode == "train":
        if step_loop:
            units.append(_steps_per_execution(model, plan.steps_per_run))
        trace = plan.feature(ProfilerTrace)
        if trace is not None:
            units.append(profiler_trace(trace.output))
    return units


@contextlib.contextmanager
def _process_settings(plan: HostPlan):
    """Process-wide switches, as on the other doors (they stay: TensorFlow offers no way back)."""
    apply_process_settings(plan)
    yield


def _step_probes(plan: HostPlan) -> dict[str, StepProbes]:
    """Per mode, the dumps (training only) and numeric checks to build into the traced steps."""
    probes = {mode: StepProbes.for_plan(plan, dumps=mode == "train") for mode in ("train", "test", "predict")}
    return {mode: chosen for mode, chosen in probes.items() if chosen is not None}


class _ProbedStep:
    """The model's train/test/predict step as traced under the callback: under mixed precision the step's
    keep_dtype_scope ops become outputs of the traced function (grappler's pass never converts those), and the
    probes add their dumps and checks to the step. It holds the model weakly: a kept function refers to it."""

    def __init__(self, step, model, mode: str, probes: StepProbes | None, plan: HostPlan) -> None:
        self._model = weakref.ref(model)
        self._step = weakref.WeakMethod(step) if getattr(step, "__self__", None) is model else lambda: step
        self._mode, self._probes, self._plan = mode, probes, plan

    def __call__(self, data):
        step_number = keras_step_number(self._model(), self._mode) if self._probes else None
        step = self._step()
        return traced_with_units(lambda: step(data), self._probes, self._plan.mixed_precision is not None, step_number)


class _GuardedFunction:
    """The traced function Keras calls: after a call it raises NonFiniteValueError for a non-finite output the
    steps recorded, and when a call fails it undoes the callback's settings first. Under mixed precision
    (MEASURED) and graph-kernel fusion its calls run in the forms the first calls' times decide
    (runtime/forms.py), and the first fused call reports what fused."""

    def __init__(self, kept: KeptFunction, name: str) -> None:
        self.function = None  # the Keras function traced with the units, set once made
        self._kept, self._probes, self._name = kept, kept.probes, name
        mixed = kept.plan.mixed_precision
        self._forms = CallForms(
            name,
            kept.plan.feature(GraphKernelFusion),
            mixed if mixed is not None and mixed.choice is PrecisionChoice.MEASURED else None,
            first_fused_call=self._call_reporting_fusion,
        )

    @property
    def trials(self) -> int:
        """How many trials its calls started."""
        return self._forms.trials

    def __call__(self, *args, **kwargs):
        try:
            result = self._forms.call(self.function, args, kwargs)
            if self._probes is not None and self._probes.failure is not None:
                self._probes.raise_if_failed(self._probes.failure.numpy())
        except (StopIteration, tf.errors.OutOfRangeError):
            raise  # the end of the data: Keras ends the epoch and goes on
        except BaseException:
            callback = self._kept.callback
            if callback is not None:
                callback._abandon()
            raise
        return result

    def _call_reporting_fusion(self, function, args: tuple, kwargs: dict):
        """The first fused call, with the clusters XLA formed in the functions it ran reported (runtime/fusion.py)."""
        collected: list = []
        with function_run_metadata(collected):
            result = function(*args, **kwargs)
        graphs = [graph for metadata in collected for graph in metadata.function_graphs]
        summary = summarize(
            self._name,
            [partition for graph in graphs for partition in graph.partition_graphs],
            [(node.name, node.op) for graph in graphs for node in _nodes_with_functions(graph.pre_optimization_graph)],
        )
        if summary.clusters:
            record(summary)
        return result

    def __getattr__(self, name: str):
        return getattr(self.function, name)  # Keras and tools inspect the tf.function (concrete functions, ...)


def _nodes_with_functions(graph_def) -> list:
    """The nodes of a GraphDef and of the functions in its library (a loop's body runs lowered into the graph)."""
    return list(graph_def.node) + [node for function in graph_def.library.function for node in function.node_def]


def _steps_per_execution(model, steps: int):
    """The model runs `steps` steps per train-function call, as compile(steps_per_execution=steps) would."""
    chosen = keras_steps_per_execution(model)
    if chosen == steps:
        return contextlib.nullcontext()
    if chosen != 1:
        raise NpuOptionValueError(
            f"the model was compiled with steps_per_execution={chosen} but the NPU options set "
            f"iterations_per_loop={steps}; keep one of them (or make them equal)."
        )
    return steps_per_execution_in_fit(model, steps)


@contextlib.contextmanager
def _without_xla(model):
    """The model's functions made meanwhile run without XLA: dumps and the inputs of failing ops are written by
    host callbacks (numpy_function), which XLA cannot compile. Keras 3 compiles with XLA by default on GPUs."""
    warn(
        "the model is compiled with jit_compile=True; XLA cannot compile the dumps and numeric checks the NPU "
        "options ask for, so the functions of this call run without XLA.",
        NpuCompatWarning,
    )
    change = changes.replace_attribute(
        model,
        "jit_compile",
        False,
        owner=OWNER,
        reason="dumps and numeric checks are host callbacks XLA cannot compile",
    )
    try:
        yield
    finally:
        changes.undo(changes=[change])


def _function_config(plan: HostPlan):
    """The plan's grappler rewrite settings and graph-kernel fusion for the functions this thread calls meanwhile
    (Keras runs its steps in the thread that called fit)."""
    return function_calls_configured(plan.configure_function_calls)
