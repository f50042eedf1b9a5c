"""`npu_device.train.optimizer.NpuLossScaleOptimizer` as the adapter's class: isinstance, every optimizer generation
ported TF2 scripts wrap (Keras 2's legacy and current optimizers and their subclasses, Keras 3's), dynamic and
fixed scales, skipped overflowing steps, checkpoints. In this process's Keras (Keras 2 on TensorFlow 2.15, Keras 3
on the newest line); tests/test_tf2_adapter.py runs it on 2 ranks and in tf_keras."""

import numpy as np
import pytest
import tensorflow as tf

from npu_bridge_compat.compat.keras import tf_keras_is_keras_3
from npu_bridge_compat.legacy.npu_device.train import optimizer as npu_optimizer

KERAS_2 = pytest.mark.needs_keras_2


def _adam_weight_decay_class():
    """A stand-in for BERT's AdamWeightDecay (official/nlp/optimization.py in the ports): a subclass of Keras 2's
    OptimizerV2 Adam (TF 2.6's tf.keras.optimizers.Adam) that decays the weights before Adam's update through the
    private methods it overrides."""

    class AdamWeightDecay(tf.keras.optimizers.legacy.Adam):
        def __init__(self, learning_rate, weight_decay_rate):
            super().__init__(learning_rate)
            self.weight_decay_rate = weight_decay_rate

        def _prepare_local(self, var_device, var_dtype, apply_state):
            super()._prepare_local(var_device, var_dtype, apply_state)
            apply_state[(var_device, var_dtype)]["weight_decay_rate"] = tf.constant(self.weight_decay_rate)

        def _resource_apply_dense(self, grad, var, apply_state=None):
            state = apply_state[(var.device, var.dtype.base_dtype)]
            decayed = var.assign_sub(self._decayed_lr(var.dtype) * state["weight_decay_rate"] * var)
            with tf.control_dependencies([decayed]):
                return super()._resource_apply_dense(grad, var, apply_state)

    return AdamWeightDecay


class SubclassedAdam(tf.keras.optimizers.Adam):
    """A script's own subclass of the current Adam (Keras 2's from TensorFlow 2.11, or Keras 3's)."""


OPTIMIZERS = [
    pytest.param(lambda: tf.keras.optimizers.SGD(0.1), id="sgd"),
    pytest.param(lambda: SubclassedAdam(0.1), id="adam-subclass"),
    pytest.param(lambda: tf.keras.optimizers.legacy.SGD(0.1), id="legacy-sgd", marks=KERAS_2),
    pytest.param(lambda: _adam_weight_decay_class()(0.1, 0.01), id="adam-weight-decay", marks=KERAS_2),
]


def _scaled_loss(optimizer, loss):
    return optimizer.scale_loss(loss) if tf_keras_is_keras_3() else optimizer.get_scaled_loss(loss)


def _gradients(optimizer, tape, scaled, variables):
    grads = tape.gradient(scaled, variables)
    return grads if tf_keras_is_keras_3() else optimizer.get_unscaled_gradients(grads)


def _step_function(optimizer, weights):
    @tf.function
    def step(poison):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(weights - 1.0))
            scaled = _scaled_loss(optimizer, loss)
        [grad] = _gradients(optimizer, tape, scaled, [weights])
        optimizer.apply_gradients([(grad * poison, weights)])

    return step


def _variables(optimizer) -> list:
    variables = optimizer.variables
    return variables() if callable(variables) else variables


@pytest.mark.parametrize("make", OPTIMIZERS)
def test_wraps_every_optimizer_generation_and_is_the_adapters_class(make):
    optimizer = npu_optimizer.NpuLossScaleOptimizer(make(), initial_scale=256.0, dynamic_growth_steps=2)
    assert isinstance(optimizer, npu_optimizer.NpuLossScaleOptimizer)
    assert isinstance(optimizer, tf.keras.mixed_precision.LossScaleOptimizer)
    assert type(optimizer).__name__ == "NpuLossScaleOptimizer" and optimizer.dynamic
    weights = tf.Variable([3.0, -2.0])
    step = _step_function(optimizer, weights)
    history = []
    for poison in (1.0, 1.0, np.inf, 1.0):
        before = weights.numpy().copy()
        step(tf.constant(poison))
        finite = bool(optimizer.last_step_finite.numpy())
        history.append((finite, not np.array_equal(before, weights.numpy()), float(optimizer.loss_scale)))
    # Two finite steps double the scale (growth every 2), the overflow skips its step and halves it.
    assert history == [(True, True, 256.0), (True, True, 512.0), (False, False, 256.0), (True, True, 256.0)]
    assert int(optimizer.iterations.numpy()) == 4  # the skipped step counts, as in the adapter
    assert np.all(np.isfinite(weights.numpy()))


@KERAS_2
def test_adam_weight_decay_keeps_its_own_update_under_loss_scaling():
    """The subclass's overridden methods run: one step decays the weights by lr x rate x w before Adam's update."""
    initial = np.array([3.0, -2.0], np.float32)
    results = {}
    inners = {"decay": _adam_weight_decay_class()(0.1, 0.5), "adam": tf.keras.optimizers.legacy.Adam(0.1)}
    for name, inner in inners.items():
        weights = tf.Variable(initial)
        _step_function(npu_optimizer.NpuLossScaleOptimizer(inner), weights)(tf.constant(1.0))
        results[name] = weights.numpy()
    np.testing.assert_allclose(results["decay"], results["adam"] - 0.1 * 0.5 * initial, rtol=1e-6)


@pytest.mark.parametrize("make", OPTIMIZERS[:2] + OPTIMIZERS[3:])
def test_a_fixed_scale_skips_overflowing_steps_and_keeps_its_scale(make):
    optimizer = npu_optimizer.NpuLossScaleOptimizer(make(), dynamic=False, initial_scale=128.0)
    assert not optimizer.dynamic
    weights = tf.Variable([3.0, -2.0])
    step = _step_function(optimizer, weights)
    history = []
    for poison in (1.0, np.inf, 1.0, 1.0):
        before = weights.numpy().copy()
        step(tf.constant(poison))
        changed = not np.array_equal(before, weights.numpy())
        history.append((bool(optimizer.last_step_finite.numpy()), changed, float(optimizer.loss_scale)))
    assert history == [(True, True, 128.0), (False, False, 128.0), (True, True, 128.0), (True, True, 128.0)]
    assert int(optimizer.iterations.numpy()) == 4 and np.all(np.isfinite(weights.numpy()))


@pytest.mark.parametrize("make", OPTIMIZERS[1:2] + OPTIMIZERS[3:])
def test_a_checkpoint_restores_the_scale_and_the_inner_state(tmp_path, make):
    def trained(steps):
        optimizer = npu_optimizer.NpuLossScaleOptimizer(make(), initial_scale=64.0, dynamic_growth_steps=3)
        weights = tf.Variable([3.0, -2.0])
        step = _step_function(optimizer, weights)
        for poison in [1.0, np.inf, 1.0, 1.0, 1.0][:steps]:
            step(tf.constant(poison))
        return optimizer, weights, step

    optimizer, weights, step = trained(5)
    path = tf.train.Checkpoint(optimizer=optimizer, weights=weights).save(str(tmp_path / "ckpt"))
    restored, restored_weights, restored_step = trained(1)
    tf.train.Checkpoint(optimizer=restored, weights=restored_weights).restore(path).assert_consumed()
    assert float(restored.loss_scale) == float(optimizer.loss_scale) == 64.0  # halved once, doubled once
    assert int(restored.iterations.numpy()) == 5
    for original, copy in zip(_variables(optimizer), _variables(restored)):
        np.testing.assert_array_equal(original.numpy(), copy.numpy())
    step(tf.constant(1.0))
    restored_step(tf.constant(1.0))
    np.testing.assert_array_equal(weights.numpy(), restored_weights.numpy())
