"""`npu_device.train.optimizer.NpuLossScaleOptimizer`: Keras' loss scaling, with the overflow decision agreed across
the ranks.

As in the adapter (tf_adapter_2.x/python/npu_device/train/optimizer/npu_loss_scale_optimizer.py), a class derived
from `tf.keras.mixed_precision.LossScaleOptimizer`, taking (inner_optimizer, dynamic=True, initial_scale=None,
dynamic_growth_steps=None): its check for non-finite gradients is combined over the ranks, so one rank's overflow
skips the step on every rank (only `iterations` grows) and, with a dynamic scale, lowers the scale on every rank;
`last_step_finite` says whether the last step was applied. A fixed scale (dynamic=False) skips such a step too and
keeps its scale, as the adapter's does. On a host the check is Keras' own (IEEE Inf/NaN in the gradients); the
ranks' flags are combined with one allreduce, and a rank whose own gradients are finite is given non-finite ones
when another rank's are not, so that Keras' own dynamic update skips the step and lowers the scale identically
everywhere.

Keras 2's public LossScaleOptimizer chooses, when called, a class by the inner optimizer's generation (the legacy
OptimizerV2 classes, or the optimizers TensorFlow 2.11 made the default); `NpuLossScaleOptimizer(opt)` does the
same, so one class wraps both, their subclasses (BERT's AdamWeightDecay), and Keras 3's optimizers; `isinstance`
holds for what it builds. The class is built when first asked for, for the Keras that `tf.keras` is then.
"""

from __future__ import annotations

import functools

import tensorflow as tf

from npu_bridge_compat.compat.keras import (
    keras_2_loss_scale_optimizer_classes,
    loss_scale_optimizer_class,
    tf_keras_is_keras_3,
)
from npu_bridge_compat.distributed import collectives, ranks

# Keras 3 has no fixed loss scale: a fixed scale is its dynamic one that never grows (it counts steps in int32) and
# whose overflowing steps are skipped before Keras would lower it.
_NEVER_GROWS = 2**31 - 1
_KERAS_3_DEFAULTS = {"initial_scale": 2.0**15, "dynamic_growth_steps": 2000}


def _finite(grads: list) -> tf.Tensor:
    present = [g.values if isinstance(g, tf.IndexedSlices) else g for g in grads if g is not None]
    if not present:
        return tf.constant(True)
    return tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in present])


def _poisoned(gradient, finite):
    """`gradient` where every rank's gradients are finite, NaN elsewhere."""
    if gradient is None:
        return None
    if isinstance(gradient, tf.IndexedSlices):
        return tf.IndexedSlices(_poisoned(gradient.values, finite), gradient.indices, gradient.dense_shape)
    return tf.where(finite, gradient, tf.fill(tf.shape(gradient), tf.constant(float("nan"), gradient.dtype)))


class _AgreedOverflow:
    """What both Keras generations' classes add: `last_step_finite` and the ranks' agreed overflow check."""

    def _init_last_step_finite(self) -> None:
        self._last_step_finite = tf.Variable(False, trainable=False, name="npu_last_step_finite")

    @property
    def last_step_finite(self) -> tf.Variable:
        """Whether the last step's gradients were finite on every rank (and so were applied)."""
        return self._last_step_finite

    def _agreed_finite(self, grads: list) -> tf.Tensor:
        finite = _finite(grads)
        if ranks.rank_size() > 1:
            finite = collectives.all_ranks_true(finite)
        self._last_step_finite.assign(finite)
        return finite

    def _skip_step(self) -> None:
        self.iterations.assign_add(1)  # a skipped step counts, as in Keras 2 and the adapter


def _keras_2_classes() -> tuple[type, dict[type, type]]:
    """The public class (a Keras 2 LossScaleOptimizer that dispatches when called) and its concrete classes, one per
    Keras loss-scale class it may wrap."""
    public_base = tf.keras.mixed_precision.LossScaleOptimizer

    class _Dispatching(type(public_base)):
        def __call__(cls, inner_optimizer, *args, **kwargs):
            chosen = concrete[loss_scale_optimizer_class(inner_optimizer)] if cls is NpuLossScaleOptimizer else cls
            return type(public_base).__call__(chosen, inner_optimizer, *args, **kwargs)

    class NpuLossScaleOptimizer(_AgreedOverflow, public_base, metaclass=_Dispatching):
        """Keras' LossScaleOptimizer for `inner_optimizer`, with the overflow decision agreed across the ranks."""

        def __init__(self, inner_optimizer, dynamic=True, initial_scale=None, dynamic_growth_steps=None):
            super().__init__(inner_optimizer, dynamic, initial_scale, dynamic_growth_steps)
            self._init_last_step_finite()

        def apply_gradients(self, grads_and_vars, *args, **kwargs):
            pairs = list(grads_and_vars)
            grads, variables = [g for g, _ in pairs], [v for _, v in pairs]
            finite = self._agreed_finite(grads)
            if self.dynamic:  # Keras skips the step and lowers the scale when it sees the agreed non-finite values
                poisoned = [_poisoned(g, finite) for g in grads]
                return super().apply_gradients(list(zip(poisoned, variables)), *args, **kwargs)

            def apply() -> None:
                super(NpuLossScaleOptimizer, self).apply_gradients(pairs, *args, **kwargs)

            tf.cond(finite, apply, self._skip_step)
            return None

    NpuLossScaleOptimizer.__module__ = __name__
    concrete = {
        base: _Dispatching("NpuLossScaleOptimizer", (NpuLossScaleOptimizer, base), {"__module__": __name__})
        for base in keras_2_loss_scale_optimizer_classes()
    }
    return NpuLossScaleOptimizer, concrete


def _keras_3_class() -> type:
    base = tf.keras.mixed_precision.LossScaleOptimizer

    class NpuLossScaleOptimizer(_AgreedOverflow, base):
        """Keras' LossScaleOptimizer for `inner_optimizer`, with the overflow decision agreed across the ranks."""

        def __init__(self, inner_optimizer, dynamic=True, initial_scale=None, dynamic_growth_steps=None, **kwargs):
            initial_scale = _KERAS_3_DEFAULTS["initial_scale"] if initial_scale is None else initial_scale
            if not dynamic:
                dynamic_growth_steps = _NEVER_GROWS
            elif dynamic_growth_steps is None:
                dynamic_growth_steps = _KERAS_3_DEFAULTS["dynamic_growth_steps"]
            super().__init__(inner_optimizer, initial_scale=initial_scale, dynamic_growth_steps=dynamic_growth_steps)
            self._dynamic = bool(dynamic)
            self._init_last_step_finite()

        @property
        def dynamic(self) -> bool:
            """Whether the scale changes with the gradients (Keras 2's and the adapter's attribute)."""
            return self._dynamic

        @property
        def loss_scale(self):
            """The current loss scale (Keras 2's and the adapter's name for Keras 3's dynamic_scale)."""
            return self.dynamic_scale

        def apply(self, grads, trainable_variables=None):
            grads = list(grads)
            if not self.built:  # before any branch below: variables cannot be created inside one
                with tf.name_scope(self.name):  # as Keras builds it (the inner optimizer's scope is not a root)
                    self.build(trainable_variables)
            finite = self._agreed_finite(grads)
            if self._dynamic:
                super().apply([_poisoned(g, finite) for g in grads], trainable_variables)
                # Keras 3 leaves `iterations` alone on a skipped step; the adapter (and Keras 2) count it.
                self.iterations.assign_add(tf.cast(tf.logical_not(finite), self.iterations.dtype))
                return

            def apply() -> None:
                super(NpuLossScaleOptimizer, self).apply(grads, trainable_variables)

            tf.cond(finite, apply, self._skip_step)

    NpuLossScaleOptimizer.__module__ = __name__
    return NpuLossScaleOptimizer


@functools.cache
def npu_loss_scale_optimizer_class() -> type:
    """`NpuLossScaleOptimizer` for the Keras that `tf.keras` is in this process."""
    if tf_keras_is_keras_3():
        return _keras_3_class()
    return _keras_2_classes()[0]


def __getattr__(name: str):
    if name == "NpuLossScaleOptimizer":
        return npu_loss_scale_optimizer_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
