"""An optimizer built on Ascend's fused LARS kernel (device-only), and an RDMA helper it imports but never calls."""
import tensorflow as tf
from npu_bridge.estimator import npu_ops
from npu_bridge.estimator.npu.npu_plugin import rdma_remote_init


def apply_lars(weights, gradients, hyperparameter=0.001):
    return npu_ops.LARS(inputs_w=weights, inputs_g=gradients, weight_decay=tf.constant(1e-4),
                        hyperpara=hyperparameter, epsilon=1e-5)
