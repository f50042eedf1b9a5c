"""`npu_device.gen_npu_ops`: the kernels TF2 scripts call by their generated names (the ports' own npu_ops.py
copies call these: dropout's masks, gelu, and the fused optimizer updates BERT's LAMB and Adam use)."""

from npu_bridge_compat.fused.nn import (  # noqa: F401
    drop_out_do_mask,
    drop_out_do_mask_v3,
    drop_out_gen_mask,
    drop_out_gen_mask_v3,
    fast_gelu,
    fast_gelu_grad,
)
from npu_bridge_compat.fused.optimizers import LARSV2 as lars_v2  # noqa: F401
from npu_bridge_compat.fused.optimizers import (  # noqa: F401
    adam_apply_one_assign,
    adam_apply_one_with_decay_assign,
    lamb_apply_optimizer_assign,
    lamb_apply_weight_assign,
)
