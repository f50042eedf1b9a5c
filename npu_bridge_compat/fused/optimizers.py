"""Ascend's fused optimizer kernels on a host: LARS, LARSV2, the Adam "apply one" kernels and LAMB's two stages.

The formulas are the Ascend kernels' (their argument names are the adapter's, input0..4 / mulN_x / add2_y):

  LARSV2   coeff = hyperpara·‖w‖ / (‖g‖ + weight_decay·‖w‖ + epsilon), clipped to [0, 1] after dividing by
           learning_rate when use_clip;  g_new = coeff·(g + weight_decay·w)
  LARS     LARSV2 without learning rate and clip, for each (w, g) pair of the lists
  adam_apply_one[_with_decay]_assign(g, v, m, var, lr, beta1, 1-beta1, beta2, 1-beta2, [decay,] epsilon):
           v' = beta2·v + (1-beta2)·g²;  m' = beta1·m + (1-beta1)·g;
           var' = var - lr·(m' / (√v' + epsilon) [+ decay·var]);  v, m and var are assigned in place
  lamb_apply_optimizer_assign(g, v, m, param, beta1, 1-beta1, beta2, 1-beta2, epsilon, steps, do_use_weight,
                              weight_decay_rate):
           v' and m' as above (assigned to v and m);  update = (m' / (1 - beta1^steps)) /
           (√(v' / (1 - beta2^steps)) + epsilon) + do_use_weight·weight_decay_rate·param;  returns
           (update, v', m')
  lamb_apply_weight_assign(w_norm, g_norm, lr, update, param):
           ratio = w_norm / g_norm where both are > 0, else 1;  param' = param - ratio·lr·update (assigned)

As in the adapter, they build graph ops only (a TF1 graph or a tf.function), and the `*_assign` kernels' in-place
arguments must be variables.
"""

from __future__ import annotations

import tensorflow as tf

from npu_bridge_compat.errors import NpuOptionValueError
from npu_bridge_compat.fused.checks import graph_mode_only, variables


def _lars_gradient(weight, grad, weight_decay, learning_rate, hyperpara, epsilon, use_clip) -> tf.Tensor:
    weight, grad = tf.convert_to_tensor(weight), tf.convert_to_tensor(grad)
    weight_decay = tf.cast(weight_decay, weight.dtype)
    weight_norm, grad_norm = tf.norm(weight), tf.norm(grad)
    coeff = hyperpara * weight_norm / (grad_norm + weight_decay * weight_norm + epsilon)
    if use_clip:
        coeff = tf.clip_by_value(coeff / tf.cast(learning_rate, weight.dtype), 0.0, 1.0)
    return coeff * (grad + weight_decay * weight)


def LARS(inputs_w, inputs_g, weight_decay, hyperpara=0.001, epsilon=0.00001, name=None):  # noqa: N802 - adapter name
    """npu_ops.LARS: the LARS-scaled gradient of every (weight, gradient) pair, as a list."""
    graph_mode_only("LARS")
    if len(inputs_w) != len(inputs_g):
        raise NpuOptionValueError(
            f"inputs_w and inputs_g must have the same length, got {len(inputs_w)} weights "
            f"and {len(inputs_g)} gradients"
        )
    with tf.name_scope(name or "LARS"):
        return [
            _lars_gradient(w, g, weight_decay, None, hyperpara, epsilon, use_clip=False)
            for w, g in zip(inputs_w, inputs_g)
        ]


def LARSV2(
    input_weight,
    input_grad,
    weight_decay,
    learning_rate,
    hyperpara=0.001,
    epsilon=0.00001,  # noqa: N802
    use_clip=False,
    name=None,
):
    """npu_ops.LARSV2: the LARS-scaled gradient of one weight."""
    graph_mode_only("LARSV2")
    with tf.name_scope(name or "LARSV2"):
        return _lars_gradient(input_weight, input_grad, weight_decay, learning_rate, hyperpara, epsilon, use_clip)


def _moments(grad, v, m, beta1, one_minus_beta1, beta2, one_minus_beta2):
    """Adam's and LAMB's next second and first moments."""
    next_v = v.read_value() * beta2 + tf.square(grad) * one_minus_beta2
    next_m = m.read_value() * beta1 + grad * one_minus_beta1
    return next_v, next_m


def _adam_apply_one(
    api, input0, input1, input2, input3, input4, mul0_x, mul1_x, mul2_x, mul3_x, add2_y, decay, name
) -> tf.Operation:
    graph_mode_only(api)
    v, m, var = variables(api, input1=input1, input2=input2, input3=input3)
    with tf.name_scope(name or api):
        next_v, next_m = _moments(tf.convert_to_tensor(input0), v, m, mul0_x, mul1_x, mul2_x, mul3_x)
        value = var.read_value()
        update = next_m / (tf.sqrt(next_v) + add2_y)
        if decay is not None:
            update += value * decay
        return tf.group(
            v.assign(next_v, read_value=False),
            m.assign(next_m, read_value=False),
            var.assign(value - update * input4, read_value=False),
            name="assign",
        )


def adam_apply_one_assign(input0, input1, input2, input3, input4, mul0_x, mul1_x, mul2_x, mul3_x, add2_y, name=None):
    """npu_ops.adam_apply_one_assign: one Adam step for grad input0 into the variables input1 (v), input2 (m) and
    input3 (the weight), learning rate input4; returns the op that assigns them."""
    return _adam_apply_one(
        "adam_apply_one_assign",
        input0,
        input1,
        input2,
        input3,
        input4,
        mul0_x,
        mul1_x,
        mul2_x,
        mul3_x,
        add2_y,
        None,
        name,
    )


def adam_apply_one_with_decay_assign(
    input0, input1, input2, input3, input4, mul0_x, mul1_x, mul2_x, mul3_x, mul4_x, add2_y, name=None
):
    """npu_ops.adam_apply_one_with_decay_assign: adam_apply_one_assign with weight decay mul4_x·input3 added to
    the update (AdamW as BERT uses it)."""
    return _adam_apply_one(
        "adam_apply_one_with_decay_assign",
        input0,
        input1,
        input2,
        input3,
        input4,
        mul0_x,
        mul1_x,
        mul2_x,
        mul3_x,
        add2_y,
        mul4_x,
        name,
    )


def lamb_apply_optimizer_assign(
    input0,
    input1,
    input2,
    input3,
    mul0_x,
    mul1_x,
    mul2_x,
    mul3_x,
    add2_y,
    steps,
    do_use_weight,
    weight_decay_rate,
    name=None,
):
    """npu_vector_ops.lamb_apply_optimizer_assign: LAMB's first stage for grad input0 and weight input3; assigns
    the next moments to the variables input1 (v) and input2 (m) and returns (update, next_v, next_m)."""
    api = "lamb_apply_optimizer_assign"
    graph_mode_only(api)
    v, m = variables(api, input1=input1, input2=input2)
    with tf.name_scope(name or api):
        next_v, next_m = _moments(tf.convert_to_tensor(input0), v, m, mul0_x, mul1_x, mul2_x, mul3_x)
        unbiased_m = next_m / (1.0 - tf.pow(mul0_x, steps))
        unbiased_v = next_v / (1.0 - tf.pow(mul2_x, steps))
        update = unbiased_m / (tf.sqrt(unbiased_v) + add2_y) + input3 * weight_decay_rate * do_use_weight
        with tf.control_dependencies([v.assign(next_v, read_value=False), m.assign(next_m, read_value=False)]):
            return tf.identity(update, name="update"), tf.identity(next_v), tf.identity(next_m)


def lamb_apply_weight_assign(input0, input1, input2, input3, input4, name=None):
    """npu_vector_ops.lamb_apply_weight_assign: LAMB's second stage; assigns the variable input4 (the weight)
    from w_norm input0, g_norm input1, learning rate input2 and update input3, and returns its new value."""
    api = "lamb_apply_weight_assign"
    graph_mode_only(api)
    (param,) = variables(api, input4=input4)
    with tf.name_scope(name or api):
        w_norm, g_norm = tf.convert_to_tensor(input0), tf.convert_to_tensor(input1)
        ratio = tf.where((w_norm > 0) & (g_norm > 0), w_norm / g_norm, tf.ones_like(w_norm))
        next_param = param.read_value() - ratio * input2 * input3
        with tf.control_dependencies([param.assign(next_param, read_value=False)]):
            return tf.identity(next_param, name="param")
