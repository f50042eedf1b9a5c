"""`npu_bridge.hccl.hccl_ops`: collectives on TensorFlow's collective runtime; remote (RDMA) memory operations
exist only on Ascend."""

from npu_bridge_compat.distributed import (  # noqa: F401
    all_to_all_v,
    all_to_all_v_c,
    allgather,
    allreduce,
    broadcast,
    receive,
    reduce,
    reduce_scatter,
    send,
)
from npu_bridge_compat.errors import device_only

remote_read = device_only("hccl_ops.remote_read")
remote_write = device_only("hccl_ops.remote_write")
remote_ref_read = device_only("hccl_ops.remote_ref_read")
remote_scatter_write = device_only("hccl_ops.remote_scatter_write")
gather_all_to_all_v = device_only("hccl_ops.gather_all_to_all_v")
