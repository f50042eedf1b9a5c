"""TF 2.6's `tf.keras.mixed_precision.experimental` on today's mixed precision API (public names only)."""

from __future__ import annotations

from typing import Any


def _keras():
    import tensorflow as tf

    return tf.keras


def experimental_loss_scale_optimizer(optimizer: Any, loss_scale: Any = "dynamic") -> Any:
    """TF 2.6's `LossScaleOptimizer(optimizer, loss_scale)`: 'dynamic' scales dynamically from 2**15, a number is
    a fixed scale, as TF 2.6 did; today's class takes `dynamic` and `initial_scale` instead."""
    keras = _keras()
    if loss_scale == "dynamic":
        return keras.mixed_precision.LossScaleOptimizer(optimizer)
    try:
        scale = float(loss_scale)
    except (TypeError, ValueError):
        raise ValueError(
            f"tf.keras.mixed_precision.experimental.LossScaleOptimizer: loss_scale={loss_scale!r} is not supported "
            "here; give 'dynamic' or a number (TF 2.6's LossScale objects were removed)"
        ) from None
    return keras.mixed_precision.LossScaleOptimizer(optimizer, dynamic=False, initial_scale=scale)


def _policy_class() -> type:
    return _keras().mixed_precision.Policy


class _ExperimentalPolicyMeta(type):
    """Builds today's Policy from TF 2.6's arguments; `isinstance(x, ExperimentalPolicy)` asks today's class."""

    def __call__(cls, name: str, loss_scale: Any = "auto") -> Any:
        return _policy_class()(name)

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, _policy_class())


class ExperimentalPolicy(metaclass=_ExperimentalPolicyMeta):
    """TF 2.6's `Policy(name, loss_scale='auto')`: today's Policy of `name`. The loss scale is Model.compile's
    (dynamic for mixed_float16, as TF 2.6's 'auto')."""
