"""`tf.contrib.tpu` on a host: TPUEstimator with TPU use off, CrossShardOptimizer over one shard."""

from __future__ import annotations

import inspect

import tensorflow as tf

from npu_bridge_compat.estimator_library import estimator_api, estimator_missing

if estimator_api() is None:  # the table then reports TPUEstimator as missing, with this reason
    raise ImportError(estimator_missing("TPUEstimator"))
_TPUEstimator = tf.compat.v1.estimator.tpu.TPUEstimator
_SIGNATURE = inspect.signature(_TPUEstimator.__init__)


class TPUEstimator(_TPUEstimator):
    """TF 1.15's TPUEstimator with `use_tpu`, `eval_on_tpu` and `export_to_tpu` off: model_fn (returning
    TPUEstimatorSpec or EstimatorSpec) runs on this host's CPU/GPU; `params["batch_size"]` is still set."""

    def __init__(self, *args, **kwargs) -> None:
        arguments = _SIGNATURE.bind(self, *args, **kwargs).arguments
        arguments.pop("self")
        arguments.update(use_tpu=False, eval_on_tpu=False, export_to_tpu=False)
        super().__init__(**arguments)


def CrossShardOptimizer(
    opt,
    reduction=tf.compat.v1.losses.Reduction.MEAN,
    name="CrossShardOptimizer",  # noqa: N802
    group_assignment=None,
):
    """With one shard, the cross-shard sum of gradients is the gradient itself: the optimizer as it is."""
    if not isinstance(opt, tf.compat.v1.train.Optimizer):
        raise TypeError(f"CrossShardOptimizer only works with tf.compat.v1.train.Optimizer, got {type(opt).__name__}")
    return opt
