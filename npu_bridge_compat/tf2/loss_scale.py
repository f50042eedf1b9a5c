"""`npu_device.train.optimizer.NpuLossScaleOptimizer`: Keras' dynamic loss scaling, with the overflow decision
agreed across the ranks.

As in the adapter (tf_adapter_2.x/.../npu_loss_scale_optimizer.py): a Keras LossScaleOptimizer whose check for
non-finite gradients is summed over the ranks, so one rank's overflow skips the step (only `iterations` grows) and
lowers the scale on every rank; `last_step_finite` says whether the last step was applied. On a host the check is
Keras' own (IEEE Inf/NaN in the gradients); the ranks' flags are combined with one allreduce, and a rank whose own
gradients are finite is given non-finite ones when another rank's are not, so that Keras' own update skips the
step and lowers the scale identically everywhere.
"""

from __future__ import annotations

import functools

import tensorflow as tf

from npu_bridge_compat.compat.keras import loss_scale_optimizer_class, tf_keras_is_keras_3
from npu_bridge_compat.distributed import collectives, ranks
from npu_bridge_compat.errors import NpuOptionValueError


class _AgreedOverflow:
    """The overrides shared by the Keras 2 and Keras 3 bases."""

    def _init_last_step_finite(self) -> None:
        self._last_step_finite = tf.Variable(False, trainable=False, name="npu_last_step_finite")

    @property
    def last_step_finite(self) -> tf.Variable:
        return self._last_step_finite

    def _agreed(self, grads: list) -> list:
        present = [g.values if isinstance(g, tf.IndexedSlices) else g for g in grads if g is not None]
        finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in present]) if present else tf.constant(True)
        if ranks.rank_size() > 1:
            finite = collectives.all_ranks_true(finite)
        self._last_step_finite.assign(finite)
        return [_poisoned(g, finite) for g in grads]

    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        if tf_keras_is_keras_3():  # Keras 3's apply_gradients calls apply
            return super().apply_gradients(grads_and_vars, *args, **kwargs)
        pairs = list(grads_and_vars)
        grads = self._agreed([g for g, _ in pairs])
        return super().apply_gradients(list(zip(grads, [v for _, v in pairs])), *args, **kwargs)

    def apply(self, grads, trainable_variables=None):
        applied = super().apply(self._agreed(list(grads)), trainable_variables)
        # Keras 3 leaves `iterations` alone on a skipped step; the adapter (and Keras 2) count it.
        skipped = tf.logical_not(self._last_step_finite)
        self.iterations.assign_add(tf.cast(skipped, self.iterations.dtype))
        return applied


def _poisoned(gradient, finite):
    """`gradient` where every rank's gradients are finite, NaN elsewhere."""
    if gradient is None:
        return None
    if isinstance(gradient, tf.IndexedSlices):
        return tf.IndexedSlices(_poisoned(gradient.values, finite), gradient.indices, gradient.dense_shape)
    return tf.where(finite, gradient, tf.fill(tf.shape(gradient), tf.constant(float("nan"), gradient.dtype)))


@functools.cache
def _concrete(base: type) -> type:
    return type("NpuLossScaleOptimizer", (_AgreedOverflow, base), {"__module__": __name__})


def NpuLossScaleOptimizer(  # noqa: N802 - the adapter's class name
    inner_optimizer, dynamic: bool = True, initial_scale: float | None = None, dynamic_growth_steps: int | None = None
):
    """Keras' LossScaleOptimizer for `inner_optimizer`, with the overflow decision agreed across the ranks."""
    base = loss_scale_optimizer_class(inner_optimizer)
    tuned = {
        name: value
        for name, value in (("initial_scale", initial_scale), ("dynamic_growth_steps", dynamic_growth_steps))
        if value is not None
    }
    if tf_keras_is_keras_3():
        if not dynamic:
            raise NpuOptionValueError(
                "NpuLossScaleOptimizer(dynamic=False): Keras 3's LossScaleOptimizer scales dynamically only; use "
                "dynamic=True, or Keras 2 (TF_USE_LEGACY_KERAS=1 with tf_keras) for a fixed scale."
            )
        optimizer = _concrete(base)(inner_optimizer, **tuned)
    else:
        optimizer = _concrete(base)(inner_optimizer, dynamic=dynamic, **tuned)
    optimizer._init_last_step_finite()
    return optimizer
