"""The adapter's Estimator hooks, in terms of TensorFlow's."""

from __future__ import annotations

import tensorflow as tf

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner

v1 = tf.compat.v1


class NPUCheckpointSaverHook(v1.train.CheckpointSaverHook):
    """A CheckpointSaverHook (the adapter's also logs global_step each run)."""


class NPUOutputTensorHook(v1.train.SessionRunHook):
    """Fetches `tensors` every run and hands the last `output_every_n_steps` runs' values to `output_fn`."""

    def __init__(self, tensors, dependencies=None, output_fn=None, output_every_n_steps: int = 0) -> None:
        self._tensors = tensors
        self._output_fn = output_fn
        self._every = output_every_n_steps
        self._collected: list = []

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(self._tensors)

    def after_run(self, run_context, run_values) -> None:
        self._collected.append(run_values.results)
        if self._every and len(self._collected) >= self._every:
            self._flush()

    def end(self, session) -> None:
        if self._collected:
            self._flush()

    def _flush(self) -> None:
        if self._output_fn is not None:
            self._output_fn(self._collected)
        self._collected = []


class SetIterationsVarHook(v1.train.SessionRunHook):
    """Loads the loop variables on Ascend after the session starts; NPUEstimator runs its loop itself."""

    def __init__(self, iterations_per_loop: int | None = None) -> None:
        self.iterations_per_loop = iterations_per_loop


class TellMeStepOrLossHook(v1.train.SessionRunHook):
    """Exports STEP_NOW / TOTAL_STEP / LOSS_NOW / TARGET_LOSS to the environment for accelerated training."""

    def __init__(self, step=None, total_step=None, loss=None, final_loss=None) -> None:
        self._fetches = {name: value for name, value in (("step", step), ("loss", loss)) if value is not None}
        if total_step is not None:
            _export("TOTAL_STEP", total_step)
        if final_loss is not None:
            _export("TARGET_LOSS", final_loss)

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(self._fetches)

    def after_run(self, run_context, run_values) -> None:
        for name, variable in (("step", "STEP_NOW"), ("loss", "LOSS_NOW")):
            if name in run_values.results:
                _export(variable, run_values.results[name])


def _export(variable: str, value) -> None:
    changes.undo(owner=Owner.ADAPTER_HOOKS, target=f"${variable}")  # the value exported before: one per owner
    changes.set_environment(
        variable, str(value), owner=Owner.ADAPTER_HOOKS, reason="the adapter's hook exports training progress"
    )
