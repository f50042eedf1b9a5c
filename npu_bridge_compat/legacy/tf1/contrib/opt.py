"""`tf.contrib.opt`'s Adam variants most used by ported scripts, on tf.compat.v1.train.AdamOptimizer."""

from __future__ import annotations

import tensorflow as tf

from npu_bridge_compat.compat.optimizers import adam_tensors, uses_locking

v1 = tf.compat.v1


class LazyAdamOptimizer(v1.train.AdamOptimizer):
    """Adam whose sparse updates (embedding lookups) touch only the rows in the gradient: their moments decay
    and their values move; other rows stay as they are. Dense gradients are plain Adam."""

    def _apply_sparse(self, grad, var):
        return self._lazy_update(var, grad.values, grad.indices)

    def _resource_apply_sparse(self, grad, var, indices):
        return self._lazy_update(var, grad, indices)

    def _lazy_update(self, var, values, indices):
        adam, locking = adam_tensors(self, var.dtype.base_dtype), uses_locking(self)
        step_size = adam.learning_rate * tf.sqrt(1 - adam.beta2_power) / (1 - adam.beta1_power)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_t = v1.scatter_update(
            m, indices, adam.beta1 * tf.gather(m, indices) + (1 - adam.beta1) * values, use_locking=locking
        )
        v_t = v1.scatter_update(
            v, indices, adam.beta2 * tf.gather(v, indices) + (1 - adam.beta2) * tf.square(values), use_locking=locking
        )
        step = step_size * tf.gather(m_t, indices) / (tf.sqrt(tf.gather(v_t, indices)) + adam.epsilon)
        return tf.group(v1.scatter_sub(var, indices, step, use_locking=locking), m_t, v_t)


class AdamWOptimizer(v1.train.AdamOptimizer):
    """Adam with decoupled weight decay: each step first shrinks a variable by `weight_decay * variable` (not
    scaled by the learning rate), then applies Adam. `minimize(..., decay_var_list=...)` limits the decay."""

    def __init__(
        self, weight_decay, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, use_locking=False, name="AdamW"
    ):
        super().__init__(learning_rate, beta1, beta2, epsilon, use_locking, name)
        self._weight_decay = weight_decay
        self._decay_var_list = None

    def minimize(
        self,
        loss,
        global_step=None,
        var_list=None,
        gate_gradients=v1.train.Optimizer.GATE_OP,
        aggregation_method=None,
        colocate_gradients_with_ops=False,
        name=None,
        grad_loss=None,
        decay_var_list=None,
    ):
        self._decay_var_list = _refs(decay_var_list)
        return super().minimize(
            loss,
            global_step=global_step,
            var_list=var_list,
            gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
            name=name,
            grad_loss=grad_loss,
        )

    def apply_gradients(self, grads_and_vars, global_step=None, name=None, decay_var_list=None):
        if decay_var_list is not None:
            self._decay_var_list = _refs(decay_var_list)
        return super().apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def _decay(self, var, indices=None):
        if self._decay_var_list is not None and var.ref() not in self._decay_var_list:
            return tf.no_op()
        decay = tf.cast(
            self._weight_decay() if callable(self._weight_decay) else self._weight_decay, var.dtype.base_dtype
        )
        if indices is None:
            return var.assign_sub(decay * var, use_locking=uses_locking(self))
        return v1.scatter_sub(var, indices, decay * tf.gather(var, indices), use_locking=uses_locking(self))

    def _apply_dense(self, grad, var):
        with tf.control_dependencies([self._decay(var)]):
            return super()._apply_dense(grad, var)

    def _resource_apply_dense(self, grad, var):
        with tf.control_dependencies([self._decay(var)]):
            return super()._resource_apply_dense(grad, var)

    def _apply_sparse(self, grad, var):
        with tf.control_dependencies([self._decay(var, grad.indices)]):
            return super()._apply_sparse(grad, var)

    def _resource_apply_sparse(self, grad, var, indices):
        with tf.control_dependencies([self._decay(var, indices)]):
            return super()._resource_apply_sparse(grad, var, indices)


def _refs(variables):
    return None if variables is None else {variable.ref() for variable in variables}
