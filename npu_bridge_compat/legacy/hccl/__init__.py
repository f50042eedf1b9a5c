"""`hccl`: Ascend's collective communication library."""
