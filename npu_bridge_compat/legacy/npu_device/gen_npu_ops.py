"""`npu_device.gen_npu_ops`: the kernels TF2 scripts call by their generated names."""

from npu_bridge_compat.fused.nn import (  # noqa: F401
    drop_out_do_mask,
    drop_out_do_mask_v3,
    drop_out_gen_mask,
    drop_out_gen_mask_v3,
    fast_gelu,
    fast_gelu_grad,
)
