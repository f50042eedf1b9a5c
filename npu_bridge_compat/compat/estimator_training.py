"""The Estimator's private training steps, which NPUEstimator overrides as the adapter's does. The class is made for
the Estimator the door gets (npu_bridge_compat/estimator_library.py's `estimator_class`), when the door asks: that
imports TensorFlow, which compat/ must not do at import (`run` chooses the Keras line before TensorFlow loads).
Checked on TensorFlow 2.15 and 2.21 (tensorflow-estimator 2.15)."""

from __future__ import annotations

import contextlib
import functools


@functools.cache
def with_training_hooks(estimator: type) -> type:
    """`estimator` (tf.estimator.Estimator, as estimator_library.estimator_class gives it) whose training steps call
    methods a subclass overrides (EstimatorWithTrainingHooks)."""

    class EstimatorWithTrainingHooks(estimator):
        """`tf.estimator.Estimator` whose training steps call methods a subclass overrides, in place of the
        Estimator's private ones (which the adapter's NPUEstimator overrides too): the hooks that stop training, the
        input_fn's result, the scope model_fn is built in and the spec it returns, and the spec training runs.
        Checked on TensorFlow 2.15 and 2.21 (tensorflow-estimator 2.15)."""

        def _assert_members_are_not_overridden(self) -> None:
            """Overriding training is this class's purpose (Estimator forbids it otherwise)."""

        def stop_hooks(self, steps, max_steps) -> list:
            """The hooks that end `train(steps=..., max_steps=...)`."""
            return super()._convert_train_steps_to_hooks(steps, max_steps)

        def checked_input(self, result, mode):
            """What input_fn returned in `mode`, checked or replaced."""
            return result

        def model_fn_scope(self, mode):
            """The context model_fn is built in."""
            return contextlib.nullcontext()

        def adjusted_spec(self, spec, mode):
            """The EstimatorSpec model_fn returned in `mode`, adjusted."""
            return spec

        def training_spec(self, spec, global_step_tensor):
            """The EstimatorSpec training runs (its train_op may be replaced)."""
            return spec

        def _convert_train_steps_to_hooks(self, steps, max_steps):
            return self.stop_hooks(steps, max_steps)

        def _call_input_fn(self, input_fn, mode, input_context=None):
            return self.checked_input(super()._call_input_fn(input_fn, mode, input_context), mode)

        def _call_model_fn(self, features, labels, mode, config):
            with self.model_fn_scope(mode):
                spec = super()._call_model_fn(features, labels, mode, config)
            return self.adjusted_spec(spec, mode)

        def _train_with_estimator_spec(self, estimator_spec, worker_hooks, hooks, global_step_tensor, saving_listeners):
            return super()._train_with_estimator_spec(
                self.training_spec(estimator_spec, global_step_tensor),
                worker_hooks,
                hooks,
                global_step_tensor,
                saving_listeners,
            )

    EstimatorWithTrainingHooks.__qualname__ = EstimatorWithTrainingHooks.__name__
    return EstimatorWithTrainingHooks
