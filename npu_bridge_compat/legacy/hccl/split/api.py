"""`hccl.split.api`."""

from npu_bridge_compat.distributed import set_split_strategy_by_idx, set_split_strategy_by_size  # noqa: F401
