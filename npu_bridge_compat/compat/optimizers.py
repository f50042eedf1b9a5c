"""TF1 optimizers' internal state, for the `tf.contrib.opt` optimizers written here on top of
`tf.compat.v1.train.AdamOptimizer` (TF 1.15's contrib reached the same attributes). Checked on TensorFlow 2.15 and
2.21.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class AdamTensors:
    """An AdamOptimizer's hyperparameters and bias-correction powers for one step, cast to a variable's dtype."""

    beta1_power: tf.Tensor
    beta2_power: tf.Tensor
    beta1: tf.Tensor
    beta2: tf.Tensor
    epsilon: tf.Tensor
    learning_rate: tf.Tensor


def adam_tensors(optimizer, dtype) -> AdamTensors:
    """The step's tensors of a `tf.compat.v1.train.AdamOptimizer` (after `_prepare`, inside its apply methods)."""
    beta1_power, beta2_power = optimizer._get_beta_accumulators()
    return AdamTensors(
        *(
            tf.cast(value, dtype)
            for value in (
                beta1_power,
                beta2_power,
                optimizer._beta1_t,
                optimizer._beta2_t,
                optimizer._epsilon_t,
                optimizer._lr_t,
            )
        )
    )


def uses_locking(optimizer) -> bool:
    """The `use_locking` a TF1 optimizer was built with."""
    return optimizer._use_locking
