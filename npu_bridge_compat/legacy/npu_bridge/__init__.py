"""`npu_bridge`: the adapter's top-level package, as an alias of npu_bridge_compat."""
