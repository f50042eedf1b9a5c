"""NPUEstimator and NPUEstimatorSpec: the adapter's Estimator, with its training semantics, on a host.

With `iterations_per_loop=N` a TRAIN session run executes N steps with the input pulled inside the loop, so
`global_step` advances by N per run; `train(max_steps=M)` shortens the last loop to end exactly at M. Hooks,
summaries, logging and checkpoints fire at run boundaries, as on the NPU. EVAL and PREDICT run one step per run.
With mixed compute, `model_fn` is built under the FusedBatchNormV3 workaround in every mode.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import json
from typing import Any

import tensorflow as tf
from tensorflow.python.ops.ref_variable import RefVariable
from tensorflow.python.training import training_util
from tensorflow_estimator.python.estimator import estimator as estimator_lib
from tensorflow_estimator.python.estimator import util as estimator_util
from tensorflow_estimator.python.estimator.mode_keys import ModeKeys

from npu_bridge_compat.distributed.doors import rank_estimator
from npu_bridge_compat.errors import NpuCompatWarning, NpuOptionValueError, warn
from npu_bridge_compat.estimator.config import NPURunConfig
from npu_bridge_compat.host.batchnorm import batchnorm_workaround, install_horizon_gate
from npu_bridge_compat.host.apply import PROCESS_FEATURES, warn_unapplied
from npu_bridge_compat.host.dump import TensorDumpHook
from npu_bridge_compat.host.features import (
    BatchNormWorkaround,
    HostRegions,
    NumericChecks,
    ProfilerTrace,
    StepLoop,
    TensorDump,
)
from npu_bridge_compat.host.loop import training_loop
from npu_bridge_compat.host.numeric import numeric_check
from npu_bridge_compat.host.placement_graph import host_region_ops, keep_on_host
from npu_bridge_compat.host.profiling import ProfilerHook
from npu_bridge_compat.host.step_probes import StepProbes
from npu_bridge_compat.host.subgraph import (
    ancestors_among,
    fetched_operations,
    kept_dtype_operations,
    keeping_dtype,
    live_operations,
    warn_kept_in_loop,
)

install_horizon_gate()  # a script's own forward_compatibility_horizon(2019, 5, 1) works with this door too


class NPUEstimatorSpec(tf.estimator.EstimatorSpec):
    """`EstimatorSpec` with the adapter's `host_call=(fn, tensors)`: `fn(*tensors)` (or `fn(**tensors)`) runs on
    the host every step."""

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None, export_outputs=None,
                training_chief_hooks=None, training_hooks=None, scaffold=None, evaluation_hooks=None,
                prediction_hooks=None, host_call=None):
        _check_host_call(host_call)
        spec = super().__new__(cls, mode, predictions=predictions, loss=loss, train_op=train_op,
                               eval_metric_ops=eval_metric_ops, export_outputs=export_outputs,
                               training_chief_hooks=training_chief_hooks, training_hooks=training_hooks,
                               scaffold=scaffold, evaluation_hooks=evaluation_hooks,
                               prediction_hooks=prediction_hooks)
        spec._host_call = host_call
        return spec

    @property
    def host_call(self):
        return self._host_call

    def _replace(self, **kwargs):
        host_call = kwargs.pop("host_call", self._host_call)
        return NPUEstimatorSpec(**{**self._asdict(), **kwargs}, host_call=host_call)


def _check_host_call(host_call) -> None:
    if host_call is None:
        return
    if not isinstance(host_call, (tuple, list)) or len(host_call) != 2:
        raise NpuOptionValueError(f"host_call must be a tuple (fn, tensors), got {host_call!r}")
    fn, tensors = host_call
    if not callable(fn):
        raise NpuOptionValueError(f"host_call[0] must be callable, got {type(fn).__name__}")
    if not isinstance(tensors, (list, tuple, dict)):
        raise NpuOptionValueError(f"host_call[1] must be a list or dict of tensors, got {type(tensors).__name__}")
    parameters = inspect.signature(fn).parameters.values()
    if isinstance(tensors, (list, tuple)) and not any(p.kind is p.VAR_POSITIONAL for p in parameters):
        positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if len(positional) != len(tensors):
            raise NpuOptionValueError(f"host_call function takes {len(positional)} arguments but "
                                      f"{len(tensors)} tensors were given")


def _run_host_call(spec) -> list:
    """The ops of the spec's host_call, built now so they run with the step."""
    host_call = getattr(spec, "host_call", None)
    if host_call is None:
        return []
    fn, tensors = host_call
    result = fn(**tensors) if isinstance(tensors, dict) else fn(*tensors)
    return [op for op in tf.nest.flatten(result) if op is not None]


class NPUEstimator(tf.estimator.Estimator):
    """The adapter's NPUEstimator on host TensorFlow (no JOB_ID needed; several ranks as in
    npu_bridge_compat.distributed)."""

    def __init__(self, model_fn, model_dir=None, config=None, params=None, job_start_file="",
                 warm_start_from=None):
        config = NPURunConfig() if config is None else config
        if not isinstance(config, NPURunConfig):
            raise NpuOptionValueError("`config` must be provided with type `NPUConfigs` (NPURunConfig), got "
                                      f"{type(config).__name__}")
        if model_dir is not None and config.model_dir is not None and model_dir != config.model_dir:
            raise NpuOptionValueError(
                "model_dir are set both in NPUEstimator and NPURunConfig, but with different values: "
                f"{model_dir!r} and {config.model_dir!r}")
        if job_start_file:
            _read_job_start_file(job_start_file)
        config = copy.copy(config)  # our own copy: the flag below must not leak into the caller's config
        config.warn_single_step_estimator = False
        self._steps_per_run = config.steps_per_run
        self._build_with_batchnorm_workaround = config.npu_plan.feature(BatchNormWorkaround) is not None
        self._last_step: int | None = None
        self._check_run_boundaries(config)
        warn_unapplied(config.npu_plan, "NPUEstimator",
                       (StepLoop, BatchNormWorkaround, HostRegions, ProfilerTrace, TensorDump, NumericChecks,
                        *PROCESS_FEATURES))
        self._plan_hooks = _plan_hooks(config.npu_plan, looped=self._steps_per_run > 1)
        config, self._rank_hooks = rank_estimator(config)  # several ranks: as the adapter's NPUEstimator
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config, params=params,
                         warm_start_from=warm_start_from)

    def _assert_members_are_not_overridden(self) -> None:
        """NPUEstimator overrides training on purpose, as the adapter's does (Estimator forbids it otherwise)."""

    def _check_run_boundaries(self, config: NPURunConfig) -> None:
        """Hooks fire once per run, i.e. every N steps: intervals that are not multiples of N drift."""
        n = self._steps_per_run
        for name in ("save_checkpoints_steps", "log_step_count_steps"):
            value = getattr(config, name)
            if n > 1 and value and value % n:
                warn(f"{name}={value} is not a multiple of iterations_per_loop={n}: it takes effect at the first "
                     f"run boundary after each interval, as on Ascend.", NpuCompatWarning)

    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        if self._steps_per_run > 1 and (steps is not None) != (max_steps is not None):
            start = estimator_lib._load_global_step_from_checkpoint_dir(self._model_dir)
            self._last_step = max_steps if max_steps is not None else start + steps
            total = self._last_step - start
            if total > 0 and total % self._steps_per_run:
                warn(f"training for {total} steps, which is not a multiple of iterations_per_loop="
                     f"{self._steps_per_run}: the last loop is shortened so training ends exactly at step "
                     f"{self._last_step} (the NPU would overshoot).", NpuCompatWarning)
        else:
            self._last_step = None
        hooks = list(hooks or []) + [hook() for hook in self._plan_hooks] + self._rank_hooks
        return super().train(input_fn, hooks=hooks, steps=steps, max_steps=max_steps,
                             saving_listeners=saving_listeners)

    def _convert_train_steps_to_hooks(self, steps, max_steps):
        if self._steps_per_run == 1 or self._last_step is None:
            return super()._convert_train_steps_to_hooks(steps, max_steps)
        return [_StopAtLastStepHook(self._last_step)]

    def _call_model_fn(self, features, labels, mode, config):
        scope = batchnorm_workaround() if self._build_with_batchnorm_workaround else contextlib.nullcontext()
        with scope:
            spec = super()._call_model_fn(features, labels, mode, config)
        if mode == ModeKeys.TRAIN and self._steps_per_run == 1:
            host_ops = _run_host_call(spec)
            if host_ops:
                spec = spec._replace(train_op=tf.group(spec.train_op, *host_ops))
        return spec

    def _train_model_default(self, input_fn, hooks, saving_listeners):
        if self._steps_per_run == 1:
            return super()._train_model_default(input_fn, hooks, saving_listeners)
        with tf.Graph().as_default() as graph, graph.device(self._device_fn):
            tf.compat.v1.random.set_random_seed(self._config.tf_random_seed)
            global_step = self._create_and_assert_global_step(graph)
            training_util._get_or_create_global_step_read(graph)  # the read hooks fetch, as Estimator makes it
            iterations = tf.constant(self._steps_per_run, tf.int64)
            if self._last_step is not None:
                iterations = tf.maximum(tf.minimum(iterations, self._last_step - global_step.read_value()), 0)
            iterator, input_hook = self._loop_input(input_fn)
            probes = StepProbes.for_plan(self.config.npu_plan)  # dumps and checks built into every step

            def step():
                body = tf.compat.v1.get_default_graph()  # the loop body's graph (control flow v2) or the graph (v1)
                context = body._get_control_flow_context()  # None, or the v1 loop's
                first_new_op = len(body.get_operations())
                features, labels = estimator_util.parse_iterator_result(iterator.get_next())
                try:
                    spec = self._call_model_fn(features, labels, ModeKeys.TRAIN, self.config)
                except TypeError as error:
                    self._refuse_reference_variables(error)
                    raise
                if getattr(spec, "host_call", None) is not None:
                    raise NpuOptionValueError(
                        f"host_call is not supported with iterations_per_loop={self._steps_per_run} on a host: its "
                        "tensors exist only inside the loop. Use iterations_per_loop=1 while it is needed.")
                # The step's own level (a value inside a v1 cond cannot be used outside it), with values every run.
                ran = [op for op in live_operations(ancestors_among(fetched_operations([spec.train_op, spec.loss]),
                                                                    body.get_operations()[first_new_op:]))
                       if op._control_flow_context is context]
                if self.config.npu_plan.uses_mixed_precision:
                    warn_kept_in_loop(keeping_dtype(ran), f"the iterations_per_loop={self._steps_per_run} loop")
                if probes is None:
                    return spec.train_op, spec.loss, spec
                probe_ops = probes.attach(ran)  # steps counted from 0 in each train() call
                return tf.group(spec.train_op, *probe_ops), spec.loss, spec

            checked = probes is not None and probes.failure is not None
            keep_going = (lambda: probes.failure[0] < 0) if checked else None
            loop = training_loop(step, iterations, keep_going)
            inner = loop.step_output  # its tensors live inside the loop; only what a TRAIN run needs is kept
            spec = tf.estimator.EstimatorSpec(
                ModeKeys.TRAIN, loss=loop.loss, train_op=loop.train_op, scaffold=inner.scaffold,
                training_chief_hooks=inner.training_chief_hooks, training_hooks=inner.training_hooks)
            worker_hooks = [input_hook]
            if keep_going is not None:
                with tf.control_dependencies([loop.train_op]):
                    worker_hooks.append(_LoopFailureHook(probes, probes.failure.read_value()))
            return self._train_with_estimator_spec(spec, worker_hooks, hooks, global_step, saving_listeners)

    def _refuse_reference_variables(self, error: TypeError) -> None:
        """The loop body is a TensorFlow 2 function, which TF1 reference variables cannot enter; say so plainly."""
        references = [v.name for v in tf.compat.v1.global_variables() if isinstance(v, RefVariable)]
        if references:
            raise NpuOptionValueError(
                f"iterations_per_loop={self._steps_per_run} builds the training step inside a TensorFlow 2 while "
                f"loop, which TF1 reference variables ({', '.join(references[:3])}) cannot enter ({error}). Create "
                "resource variables (use_resource=True, TensorFlow 2's default), run a TF1 script with "
                "`python -m npu_bridge_compat run --tf1`, or set iterations_per_loop=1.") from None

    def _loop_input(self, input_fn):
        """An iterator the loop body pulls batches from, and the hook that initialises it (the NPU needs a
        Dataset for its loop sink too)."""
        result = self._call_input_fn(input_fn, ModeKeys.TRAIN)
        if not isinstance(result, tf.data.Dataset):
            raise NpuOptionValueError(
                f"iterations_per_loop={self._steps_per_run} needs an input_fn that returns a tf.data.Dataset, so "
                "that every iteration pulls its own batch; got tensors (a one-shot iterator's get_next(), say). "
                "Return the dataset, or set iterations_per_loop=1.")
        iterator = tf.compat.v1.data.make_initializable_iterator(result)
        return iterator, estimator_util._DatasetInitializerHook(iterator)


def _plan_hooks(plan, looped: bool) -> list:
    """Factories of the training hooks that carry out the plan's host regions, profiling, dumps, numeric checks
    and keep-dtype marks. With a loop (`looped`), dumps and checks are built into the loop body instead."""
    hooks = []
    regions = plan.feature(HostRegions)
    if regions is not None:
        hooks.append(lambda: _HostRegionsHook(regions, plan.host))
    trace = plan.feature(ProfilerTrace)
    if trace is not None:
        hooks.append(lambda: ProfilerHook(trace.output))
    if looped:
        return hooks
    dump = plan.feature(TensorDump)
    if dump is not None:
        hooks.append(lambda: TensorDumpHook(dump))
    if plan.feature(NumericChecks) is not None:
        hooks.append(lambda: _NumericChecksHook(plan.options.dump_path or None))
    if plan.uses_mixed_precision:
        hooks.append(_KeepDtypeHook)
    return hooks


class _LoopFailureHook(tf.compat.v1.train.SessionRunHook):
    """Reads, after each loop, the first non-finite output its steps recorded, and stops training there."""

    def __init__(self, probes: StepProbes, failure_after_loop) -> None:
        self._probes, self._failure = probes, failure_after_loop

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._failure)

    def after_run(self, run_context, run_values) -> None:
        self._probes.raise_if_failed(run_values.results)


class _KeepDtypeHook(tf.compat.v1.train.SessionRunHook):
    """Ops of the training step under keep_dtype_scope become run targets, which grappler's mixed-precision pass
    leaves in float32."""

    def begin(self) -> None:
        graph = tf.compat.v1.get_default_graph()
        self._kept = kept_dtype_operations(graph, fetched_operations(
            graph.get_collection(tf.compat.v1.GraphKeys.TRAIN_OP)))

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._kept) if self._kept else None


class _NumericChecksHook(tf.compat.v1.train.SessionRunHook):
    """Checks every floating-point tensor of the training step (built before the graph is finalised)."""

    def __init__(self, dump_path: str | None) -> None:
        self._dump_path = dump_path

    def begin(self) -> None:
        graph = tf.compat.v1.get_default_graph()
        train_ops = fetched_operations(graph.get_collection(tf.compat.v1.GraphKeys.TRAIN_OP))
        self._check = numeric_check(graph, train_ops, self._dump_path)

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._check.flags) if self._check is not None else None

    def after_run(self, run_context, run_values) -> None:
        if self._check is not None:
            self._check.raise_if_non_finite(run_values.results)


class _HostRegionsHook(tf.compat.v1.train.SessionRunHook):
    """Keeps the in_out_pair regions on the host once the training graph is built (before it is finalised)."""

    def __init__(self, regions, host) -> None:
        self._regions, self._host = regions, host

    def begin(self) -> None:
        graph = tf.compat.v1.get_default_graph()
        keep_on_host(host_region_ops(graph, self._regions), self._host)


class _StopAtLastStepHook(tf.compat.v1.train.SessionRunHook):
    """Stops once global_step reaches the last step. Estimator's StopAtStepHook assumes one step per run and
    would ask for one more (empty) run after a loop that ended exactly there."""

    def __init__(self, last_step: int) -> None:
        self._last_step = last_step

    def begin(self) -> None:
        self._global_step = tf.compat.v1.train.get_global_step()

    def after_run(self, run_context, run_values) -> None:
        if run_context.session.run(self._global_step) >= self._last_step:
            run_context.request_stop()


def _read_job_start_file(path: str) -> dict[str, Any]:
    """Read the adapter's job description; on a host only its validity matters (one process, no rank table)."""
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except (OSError, json.JSONDecodeError) as error:
        raise NpuOptionValueError(f"job_start_file {path} cannot be read as JSON: {error}") from None
