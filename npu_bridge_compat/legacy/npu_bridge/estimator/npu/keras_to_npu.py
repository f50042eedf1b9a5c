"""`npu_bridge.estimator.npu.keras_to_npu`."""

from npu_bridge_compat.legacy.keras_helpers import model_to_npu_estimator  # noqa: F401
