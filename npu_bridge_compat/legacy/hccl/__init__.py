"""`hccl`: Ascend's collective communication library. Importing it joins the job's collective runtime when
RANK_SIZE > 1 (see npu_bridge/__init__.py)."""

if __name__ == "hccl":  # a script's import through the alias, not npu_bridge_compat's own (scan)
    from npu_bridge_compat.distributed.collective_runtime import start_if_several_ranks

    start_if_several_ranks()
    del start_if_several_ranks  # not one of the adapter's names
