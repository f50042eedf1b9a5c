"""What each precision mode means: the allowed values of precision_mode / precision_mode_v2 and, beside each, the
precision it asks for. The option table takes its allowed values from here; the precision planner its meaning."""

from __future__ import annotations

import enum
from types import MappingProxyType


class Intent(enum.Enum):
    MIXED_FLOAT16 = "mixed float16"
    MIXED_BFLOAT16 = "mixed bfloat16"
    FLOAT32 = "float32"
    FLOAT32_WHERE_SUPPORTED = "float32 where the op supports it"
    FORCE_FLOAT16 = "float16 everywhere"
    CUBE_FLOAT16 = "float16 matmul/conv inputs, float32 outputs"
    MIXED_HIFLOAT8 = "mixed HiFloat8"
    CUBE_HIFLOAT8 = "HiFloat8 matmul/conv"

    @property
    def is_mixed(self) -> bool:
        """Whether the mode picks a lower precision per op from lists (which modify_mixlist edits)."""
        return self in (Intent.MIXED_FLOAT16, Intent.MIXED_BFLOAT16, Intent.MIXED_HIFLOAT8)


PRECISION_MODES = MappingProxyType(
    {
        "force_fp32": Intent.FLOAT32,
        "allow_fp32_to_fp16": Intent.FLOAT32_WHERE_SUPPORTED,
        "force_fp16": Intent.FORCE_FLOAT16,
        "must_keep_origin_dtype": Intent.FLOAT32,
        "allow_mix_precision": Intent.MIXED_FLOAT16,
        "cube_fp16in_fp32out": Intent.CUBE_FLOAT16,
        "allow_mix_precision_fp16": Intent.MIXED_FLOAT16,
        "allow_mix_precision_bf16": Intent.MIXED_BFLOAT16,
        "allow_fp32_to_bf16": Intent.FLOAT32_WHERE_SUPPORTED,
    }
)

PRECISION_MODES_V2 = MappingProxyType(
    {
        "fp16": Intent.FORCE_FLOAT16,
        "origin": Intent.FLOAT32,
        "cube_fp16in_fp32out": Intent.CUBE_FLOAT16,
        "mixed_float16": Intent.MIXED_FLOAT16,
        "mixed_bfloat16": Intent.MIXED_BFLOAT16,
        "mixed_hif8": Intent.MIXED_HIFLOAT8,  # Ascend 950 only
        "cube_hif8": Intent.CUBE_HIFLOAT8,
    }
)


def intent_of(options) -> Intent | None:
    """The precision the options ask for (precision_mode wins over precision_mode_v2), or None."""
    if options.precision_mode:
        return PRECISION_MODES[options.precision_mode]
    if options.precision_mode_v2:
        return PRECISION_MODES_V2[options.precision_mode_v2]
    return None


MIXED_PRECISION_MODES = tuple(mode for mode, intent in PRECISION_MODES.items() if intent.is_mixed)
MIXED_PRECISION_MODES_V2 = tuple(mode for mode, intent in PRECISION_MODES_V2.items() if intent.is_mixed)
