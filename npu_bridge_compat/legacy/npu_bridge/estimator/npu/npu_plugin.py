"""`npu_bridge.estimator.npu.npu_plugin`: device memory, RDMA and saturation helpers exist only on Ascend."""

from npu_bridge_compat.errors import device_only

malloc_shared_memory = device_only("npu_plugin.malloc_shared_memory")
get_var_addr_and_size = device_only("npu_plugin.get_var_addr_and_size")
rdma_remote_init = device_only("npu_plugin.rdma_remote_init")
rdma_remote_register = device_only("npu_plugin.rdma_remote_register")
init_rdma_pool = device_only("npu_plugin.init_rdma_pool")
get_rdma_cache = device_only("npu_plugin.get_rdma_cache")
set_device_sat_mode = device_only("npu_plugin.set_device_sat_mode")
npu_resource_init = device_only("npu_plugin.npu_resource_init")
npu_resource_shutdown = device_only("npu_plugin.npu_resource_shutdown")
