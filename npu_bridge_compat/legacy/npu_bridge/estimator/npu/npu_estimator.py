"""`npu_bridge.estimator.npu.npu_estimator`."""

from npu_bridge_compat.estimator.estimator import NPUEstimator, NPUEstimatorSpec  # noqa: F401
