"""`npu_bridge.estimator`."""

from npu_bridge_compat.legacy.npu_bridge.estimator import npu_ops  # noqa: F401 - the adapter exposes it here
