"""`npu_bridge.scoped_graph_manager.scoped_graph_manager`: Graph Engine sub-graph scheduling."""

from npu_bridge_compat.errors import device_only

ScopedGraphManager = device_only("scoped_graph_manager.ScopedGraphManager")
