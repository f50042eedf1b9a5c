"""`npu_bridge.estimator.npu`."""
