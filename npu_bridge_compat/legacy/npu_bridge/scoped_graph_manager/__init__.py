"""`npu_bridge.scoped_graph_manager`."""
