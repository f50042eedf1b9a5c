"""`hccl.manage.api`: ranks and groups (RANK_ID, RANK_SIZE, the rank table), see npu_bridge_compat.distributed."""

from npu_bridge_compat.distributed import (  # noqa: F401
    create_group,
    destroy_group,
    get_group_rank_from_world_rank,
    get_local_rank_id,
    get_local_rank_size,
    get_rank_id,
    get_rank_size,
    get_world_rank_from_group_rank,
)
