"""NPUEstimator and NPUEstimatorSpec: the adapter's Estimator, with its training semantics, on a host.

`model_fn` is built in the ordinary graph, as on the NPU. With `iterations_per_loop=N` a TRAIN session run
executes N copies of that step (the shared N-step loop, runtime/loop.py), each pulling its own batch, so
`global_step` advances by N per run; `train(max_steps=M)` shortens the last loop to end exactly at M. Hooks,
summaries, logging and checkpoints fire at run boundaries, as on the NPU, and every tensor they fetch holds its
last iteration's value. EVAL and PREDICT run one step per run. With mixed compute, `model_fn` is built under the
FusedBatchNormV3 workaround in every mode. Dumps, numeric checks, keep-dtype, host regions and profiling are the
shared run-time units (runtime/units.py).
"""

from __future__ import annotations

import contextlib
import inspect
import json
from typing import Any

import tensorflow as tf

from npu_bridge_compat.compat.batchnorm import batchnorm_workaround
from npu_bridge_compat.compat.estimator_training import with_training_hooks
from npu_bridge_compat.distributed.rank_doors import rank_estimator, rank_training_done
from npu_bridge_compat.errors import NpuCompatWarning, NpuOptionValueError, warn
from npu_bridge_compat.estimator.config import NPURunConfig, building_npu_estimator
from npu_bridge_compat.estimator_library import estimator_class
from npu_bridge_compat.plan.features import BatchNormWorkaround
from npu_bridge_compat.runtime.doors import RUN_UNITS, SESSION_SETTINGS, Door, enter_plan
from npu_bridge_compat.runtime.loop import loop_train_op
from npu_bridge_compat.runtime.units import LoopServingUnit, units_for

ESTIMATOR_DOOR = Door("NPUEstimator", (*RUN_UNITS, *SESSION_SETTINGS), measures_precision=True)
GRAPH_NAME = "train"  # the dumps' graph directory, as Ascend names the training graph

ModeKeys = estimator_class("ModeKeys")


class NPUEstimatorSpec(estimator_class("EstimatorSpec")):
    """`EstimatorSpec` with the adapter's `host_call=(fn, tensors)`: `fn(*tensors)` (or `fn(**tensors)`) runs on
    the host every step."""

    def __new__(
        cls,
        mode,
        predictions=None,
        loss=None,
        train_op=None,
        eval_metric_ops=None,
        export_outputs=None,
        training_chief_hooks=None,
        training_hooks=None,
        scaffold=None,
        evaluation_hooks=None,
        prediction_hooks=None,
        host_call=None,
    ):
        _check_host_call(host_call)
        spec = super().__new__(
            cls,
            mode,
            predictions=predictions,
            loss=loss,
            train_op=train_op,
            eval_metric_ops=eval_metric_ops,
            export_outputs=export_outputs,
            training_chief_hooks=training_chief_hooks,
            training_hooks=training_hooks,
            scaffold=scaffold,
            evaluation_hooks=evaluation_hooks,
            prediction_hooks=prediction_hooks,
        )
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
            raise NpuOptionValueError(
                f"host_call function takes {len(positional)} arguments but {len(tensors)} tensors were given"
            )


def _run_host_call(spec) -> list:
    """The ops of the spec's host_call, built now so they run with the step."""
    host_call = getattr(spec, "host_call", None)
    if host_call is None:
        return []
    fn, tensors = host_call
    result = fn(**tensors) if isinstance(tensors, dict) else fn(*tensors)
    return [op for op in tf.nest.flatten(result) if op is not None]


class NPUEstimator(with_training_hooks(estimator_class("Estimator"))):
    """The adapter's NPUEstimator on host TensorFlow (no JOB_ID needed; several ranks
    as in npu_bridge_compat.distributed)."""

    def __init__(self, model_fn, model_dir=None, config=None, params=None, job_start_file="", warm_start_from=None):
        config = NPURunConfig() if config is None else config
        if not isinstance(config, NPURunConfig):
            raise NpuOptionValueError(
                f"`config` must be provided with type `NPUConfigs` (NPURunConfig), got {type(config).__name__}"
            )
        if model_dir is not None and config.model_dir is not None and model_dir != config.model_dir:
            raise NpuOptionValueError(
                "model_dir are set both in NPUEstimator and NPURunConfig, but with different values: "
                f"{model_dir!r} and {config.model_dir!r}"
            )
        if job_start_file:
            _read_job_start_file(job_start_file)
        self._steps_per_run = config.steps_per_run
        self._build_with_batchnorm_workaround = config.npu_plan.feature(BatchNormWorkaround) is not None
        self._last_step: int | None = None
        self._check_run_boundaries(config)
        enter_plan(config.npu_plan, ESTIMATOR_DOOR)
        with building_npu_estimator():
            super().__init__(
                model_fn=model_fn, model_dir=model_dir, config=config, params=params, warm_start_from=warm_start_from
            )
        self._rank_hooks = rank_estimator(self)  # several ranks: as the adapter's NPUEstimator

    def _check_run_boundaries(self, config: NPURunConfig) -> None:
        """Hooks fire once per run, i.e. every N steps: intervals that are not multiples of N drift."""
        n = self._steps_per_run
        for name in ("save_checkpoints_steps", "log_step_count_steps"):
            value = getattr(config, name)
            if n > 1 and value and value % n:
                warn(
                    f"{name}={value} is not a multiple of iterations_per_loop={n}: it takes effect at the first "
                    f"run boundary after each interval, as on Ascend.",
                    NpuCompatWarning,
                )

    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        if self._steps_per_run > 1 and (steps is not None) != (max_steps is not None):
            start = _checkpointed_global_step(self.model_dir)
            self._last_step = max_steps if max_steps is not None else start + steps
            total = self._last_step - start
            if total > 0 and total % self._steps_per_run:
                warn(
                    f"training for {total} steps, which is not a multiple of iterations_per_loop="
                    f"{self._steps_per_run}: the last loop is shortened so training ends exactly at step "
                    f"{self._last_step} (the NPU would overshoot).",
                    NpuCompatWarning,
                )
        else:
            self._last_step = None
        plan = self.config.npu_plan
        hooks = list(hooks or []) + units_for(plan, GRAPH_NAME) + self._rank_hooks
        if self._steps_per_run > 1:
            hooks.append(LoopServingUnit(plan, GRAPH_NAME))
        trained = super().train(
            input_fn, hooks=hooks, steps=steps, max_steps=max_steps, saving_listeners=saving_listeners
        )
        rank_training_done(self)
        return trained

    def stop_hooks(self, steps, max_steps) -> list:
        if self._steps_per_run == 1 or self._last_step is None:
            return super().stop_hooks(steps, max_steps)
        return [_StopAtLastStepHook(self._last_step)]

    def checked_input(self, result, mode):
        if mode == ModeKeys.TRAIN and self._steps_per_run > 1 and not isinstance(result, tf.data.Dataset):
            raise NpuOptionValueError(
                f"iterations_per_loop={self._steps_per_run} needs an input_fn that returns a tf.data.Dataset, so "
                "that every iteration pulls its own batch (the NPU's loop sink needs one too); got tensors (a "
                "one-shot iterator's get_next(), say). Return the dataset, or set iterations_per_loop=1."
            )
        return result

    def model_fn_scope(self, mode):
        return batchnorm_workaround() if self._build_with_batchnorm_workaround else contextlib.nullcontext()

    def adjusted_spec(self, spec, mode):
        if mode == ModeKeys.TRAIN and getattr(spec, "host_call", None) is not None:
            if self._steps_per_run > 1:
                raise NpuOptionValueError(
                    f"host_call is not supported with iterations_per_loop={self._steps_per_run} on a host: the NPU "
                    "runs it outside its loop of steps. Use iterations_per_loop=1 while it is needed."
                )
            host_ops = _run_host_call(spec)
            if host_ops:
                spec = spec._replace(train_op=tf.group(spec.train_op, *host_ops))
        return spec

    def training_spec(self, estimator_spec, global_step_tensor):
        if self._steps_per_run > 1:  # the step model_fn built, N times per run
            iterations = tf.constant(self._steps_per_run, tf.int64)
            if self._last_step is not None:
                done = tf.cast(global_step_tensor, tf.int64)
                iterations = tf.maximum(tf.minimum(iterations, self._last_step - done), 0)
            looped = loop_train_op(estimator_spec.train_op, iterations, most_steps=self._steps_per_run)
            estimator_spec = estimator_spec._replace(train_op=looped.loop_op)
        return estimator_spec


class _StopAtLastStepHook(tf.compat.v1.train.SessionRunHook):
    """Stops once global_step reaches the last step. Estimator's StopAtStepHook assumes one step per run and
    would ask for one more (empty) run after a loop that ended exactly there. The step is fetched with each loop
    (the loop server reads it after the loop), so stopping costs no run of its own."""

    def __init__(self, last_step: int) -> None:
        self._last_step = last_step

    def begin(self) -> None:
        self._global_step = tf.compat.v1.train.get_global_step()

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values) -> None:
        if run_values.results >= self._last_step:
            run_context.request_stop()


def _checkpointed_global_step(model_dir: str) -> int:
    """The global step of the newest checkpoint in `model_dir` (0 without one), where training resumes."""
    checkpoint = tf.train.latest_checkpoint(model_dir)
    if checkpoint is None:
        return 0
    return int(tf.train.load_variable(checkpoint, tf.compat.v1.GraphKeys.GLOBAL_STEP))


def _read_job_start_file(path: str) -> dict[str, Any]:
    """Read the adapter's job description; on a host only its validity matters (one process, no rank table)."""
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except (OSError, json.JSONDecodeError) as error:
        raise NpuOptionValueError(f"job_start_file {path} cannot be read as JSON: {error}") from None
