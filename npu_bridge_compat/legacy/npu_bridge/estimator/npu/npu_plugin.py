"""`npu_bridge.estimator.npu.npu_plugin`: device memory, RDMA and saturation helpers exist only on Ascend."""

from npu_bridge_compat.errors import device_only

_ONE_PROCESS_MEMORY = "the variables live in the process's own memory: read them directly (sess.run(var), var.numpy())"
_NO_RDMA = (
    "embedding tables stay in host memory and need no RDMA pool; look them up with tf.nn.embedding_lookup "
    "(tf.compat.v1.get_variable creates the table get_rdma_cache would)"
)
_SESSION_OPTIONS = "there is no device to open or close: give the options to NPURunConfig or the session config"

malloc_shared_memory = device_only("npu_plugin.malloc_shared_memory", _ONE_PROCESS_MEMORY)
get_var_addr_and_size = device_only("npu_plugin.get_var_addr_and_size", _ONE_PROCESS_MEMORY)
rdma_remote_init = device_only("npu_plugin.rdma_remote_init", _NO_RDMA)
rdma_remote_register = device_only("npu_plugin.rdma_remote_register", _NO_RDMA)
init_rdma_pool = device_only("npu_plugin.init_rdma_pool", _NO_RDMA)
get_rdma_cache = device_only("npu_plugin.get_rdma_cache", _NO_RDMA)
set_device_sat_mode = device_only(
    "npu_plugin.set_device_sat_mode",
    "floats always overflow to Inf/NaN (IEEE 754); find overflows with "
    "enable_dump_debug or tf.debugging.enable_check_numerics()",
)
npu_resource_init = device_only("npu_plugin.npu_resource_init", _SESSION_OPTIONS)
npu_resource_shutdown = device_only("npu_plugin.npu_resource_shutdown", _SESSION_OPTIONS)
