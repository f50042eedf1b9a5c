"""`hccl`: Ascend's collective communication library. Importing it joins the job's collective runtime when
RANK_SIZE > 1 (see npu_bridge/__init__.py)."""

from npu_bridge_compat.distributed.runtime import start_if_several_ranks

start_if_several_ranks()
