"""`hccl.split`."""
