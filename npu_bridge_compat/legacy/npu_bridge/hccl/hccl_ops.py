"""`npu_bridge.hccl.hccl_ops`: single-rank collectives; remote (RDMA) operations exist only on Ascend."""

from npu_bridge_compat.distributed import allgather, allreduce, broadcast, reduce_scatter  # noqa: F401
from npu_bridge_compat.errors import device_only

remote_read = device_only("hccl_ops.remote_read")
remote_write = device_only("hccl_ops.remote_write")
remote_ref_read = device_only("hccl_ops.remote_ref_read")
remote_scatter_write = device_only("hccl_ops.remote_scatter_write")
send = device_only("hccl_ops.send")
receive = device_only("hccl_ops.receive")
