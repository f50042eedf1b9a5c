"""Loss scaling with the Ascend semantics: NPULossScaleOptimizer, NPUOptimizer and the two managers.

The loss is multiplied by the scale before differentiation and the gradients divided by it afterwards. When a
gradient is not finite, the update and the `global_step` increment are skipped for that step (Ascend reads the
NPU's float status; a host checks the gradients with `tf.math.is_finite`). The dynamic manager grows the scale by
`incr_ratio` after `incr_every_n_steps` good steps in a row and shrinks it by `decr_ratio` (never below 1) after
`decr_every_n_nan_or_inf` bad ones.
"""

from __future__ import annotations

import tensorflow as tf

from npu_bridge_compat.distributed import NPUDistributedOptimizer, all_ranks_true
from npu_bridge_compat.errors import NpuOptionValueError

v1 = tf.compat.v1


class FixedLossScaleManager:
    """A constant loss scale; with `enable_overflow_check` steps with non-finite gradients are skipped."""

    def __init__(self, loss_scale, enable_overflow_check: bool = True) -> None:
        if loss_scale < 1:
            raise NpuOptionValueError(f"loss scale must be at least 1. (got {loss_scale})")
        self._loss_scale = float(loss_scale)
        self._enable_overflow_check = enable_overflow_check

    def get_loss_scale(self):
        return tf.constant(self._loss_scale, tf.float32)  # made in the graph that asks

    def get_enable_overflow_check(self) -> bool:
        return self._enable_overflow_check

    def update_loss_scale(self, finite_grads):
        return tf.no_op()

    def state_variables(self) -> list:
        """The variables holding the manager's state: none, the scale is a constant."""
        return []


class ExponentialUpdateLossScaleManager:
    """A loss scale that grows after a run of good steps and shrinks after a run of bad ones."""

    def __init__(
        self,
        init_loss_scale,
        incr_every_n_steps: int,
        decr_every_n_nan_or_inf: int = 2,
        incr_ratio: float = 2,
        decr_ratio: float = 0.8,
    ) -> None:
        checks = [
            (init_loss_scale >= 1, f"init_loss_scale must be at least 1 (got {init_loss_scale})"),
            (incr_every_n_steps > 0, f"incr_every_n_steps must be positive (got {incr_every_n_steps})"),
            (decr_every_n_nan_or_inf > 0, f"decr_every_n_nan_or_inf must be positive (got {decr_every_n_nan_or_inf})"),
            (incr_ratio > 1, f"incr_ratio must be greater than 1 (got {incr_ratio})"),
            (0 < decr_ratio < 1, f"decr_ratio must be in (0, 1) (got {decr_ratio})"),
        ]
        for ok, message in checks:
            if not ok:
                raise NpuOptionValueError(message)
        self._incr_every_n_steps = incr_every_n_steps
        self._decr_every_n_nan_or_inf = decr_every_n_nan_or_inf
        self._incr_ratio = float(incr_ratio)
        self._decr_ratio = float(decr_ratio)
        # TF 1.15's names (tf.contrib.mixed_precision, which the adapter's manager subclasses): scripts fetch
        # 'loss_scale:0' to log the scale, and checkpoints hold `loss_scale`, `good_steps`, `bad_steps`.
        self._loss_scale = _state("loss_scale", float(init_loss_scale), tf.float32)
        self._good_steps = _state("good_steps", 0, tf.int32)
        self._bad_steps = _state("bad_steps", 0, tf.int32)

    def get_loss_scale(self):
        return self._loss_scale.read_value()

    def state_variables(self) -> list:
        """The variables holding the manager's state: the scale and its runs of good and bad steps."""
        return [self._loss_scale, self._good_steps, self._bad_steps]

    def get_enable_overflow_check(self) -> bool:
        return True

    def update_loss_scale(self, finite_grads):
        def good_step():
            grow = self._good_steps + 1 >= self._incr_every_n_steps
            grown = self._loss_scale * self._incr_ratio
            new_scale = tf.where(grow & tf.math.is_finite(grown), grown, self._loss_scale)
            return tf.group(
                self._loss_scale.assign(new_scale),
                self._good_steps.assign(tf.where(grow, 0, self._good_steps + 1)),
                self._bad_steps.assign(0),
            )

        def bad_step():
            shrink = self._bad_steps + 1 >= self._decr_every_n_nan_or_inf
            new_scale = tf.where(shrink, tf.maximum(self._loss_scale * self._decr_ratio, 1.0), self._loss_scale)
            return tf.group(
                self._loss_scale.assign(new_scale),
                self._bad_steps.assign(tf.where(shrink, 0, self._bad_steps + 1)),
                self._good_steps.assign(0),
            )

        return tf.cond(finite_grads, good_step, bad_step)


def _state(name: str, value, dtype):
    """A scalar state variable named as TF 1.15 named it (`name:0`, made unique by the graph), of the kind
    TensorFlow's own default gives: under TF1 behaviour (`run --tf1`) a TF1 variable, whose `name:0` tensor is
    its value, as scripts that fetch it by name expect. The initial value is a callable, so the variable can also
    be created inside a loop body or function."""
    return v1.Variable(
        lambda: tf.constant(value, dtype),
        name=name,
        dtype=dtype,
        trainable=False,
        collections=[v1.GraphKeys.GLOBAL_VARIABLES],
    )


class NPULossScaleOptimizer(v1.train.Optimizer):
    """Wraps a `tf.compat.v1.train.Optimizer` with loss scaling and overflow skipping. A TF1 optimizer itself, as
    the adapter's is, so that what takes one takes it too (Keras' `compile(optimizer=...)` wraps it as a TF
    optimizer); its slots and variables are the wrapped optimizer's."""

    def __init__(self, opt, loss_scale_manager, is_distributed: bool = False) -> None:
        if loss_scale_manager is None:
            raise NpuOptionValueError(
                "loss_scale_manager must be a FixedLossScaleManager or an ExponentialUpdateLossScaleManager, got None"
            )
        super().__init__(use_locking=False, name="NPULossScaleOptimizer")
        self._is_distributed = is_distributed  # skip a step on every rank when one rank overflows
        self._optimizer = opt
        self._manager = loss_scale_manager

    def __getattr__(self, name):
        return getattr(self._optimizer, name)  # what the wrapped optimizer has besides a TF1 optimizer's methods

    def get_slot(self, var, name):
        return self._optimizer.get_slot(var, name)

    def get_slot_names(self):
        return self._optimizer.get_slot_names()

    def variables(self):
        """The wrapped optimizer's variables and the loss scale's (what Keras initializes for a TF1 optimizer)."""
        state = getattr(self._manager, "state_variables", list)  # a manager of the program's own may have none
        return [*self._optimizer.variables(), *state()]

    def get_loss_scale(self):
        return self._manager.get_loss_scale()

    def compute_gradients(self, loss, var_list=None, **kwargs):
        scale = self._manager.get_loss_scale()
        scaled = loss * tf.cast(scale, loss.dtype) if not callable(loss) else (lambda: loss() * scale)
        grads_and_vars = self._optimizer.compute_gradients(scaled, var_list=var_list, **kwargs)
        return [(_unscale(grad, scale), var) for grad, var in grads_and_vars]

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = list(grads_and_vars)
        if not self._manager.get_enable_overflow_check():
            return self._optimizer.apply_gradients(grads_and_vars, global_step=global_step, name=name)
        grads = [_values(grad) for grad, _ in grads_and_vars if grad is not None]
        finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(grad)) for grad in grads])
        if self._is_distributed:
            finite = all_ranks_true(finite)
        update_scale = self._manager.update_loss_scale(finite)
        apply = tf.cond(
            finite, lambda: tf.group(self._optimizer.apply_gradients(grads_and_vars, global_step=global_step)), tf.no_op
        )
        return tf.group(apply, update_scale, name=name)

    def minimize(self, loss, global_step=None, var_list=None, name=None, **kwargs):
        grads_and_vars = self.compute_gradients(loss, var_list=var_list, **kwargs)
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)


def _values(grad):
    return grad.values if isinstance(grad, tf.IndexedSlices) else grad


def _unscale(grad, scale):
    if grad is None:
        return None
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(grad.values / tf.cast(scale, grad.values.dtype), grad.indices, grad.dense_shape)
    return grad / tf.cast(scale, grad.dtype)


def NPUOptimizer(
    opt,
    loss_scale_manager=None,
    is_distributed: bool = False,
    is_loss_scale: bool = False,  # noqa: N802
    is_tailing_optimization: bool = False,
    name=None,
):
    """The adapter's all-in-one wrapper: loss scaling when `is_loss_scale`, distribution when `is_distributed`."""
    if is_loss_scale and loss_scale_manager is None:
        raise NpuOptionValueError("NPUOptimizer(is_loss_scale=True) needs a loss_scale_manager")
    if is_distributed:
        opt = NPUDistributedOptimizer(opt)
    return NPULossScaleOptimizer(opt, loss_scale_manager, is_distributed) if is_loss_scale else opt
