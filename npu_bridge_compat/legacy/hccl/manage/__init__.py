"""`hccl.manage`."""
