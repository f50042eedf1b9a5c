"""The NPU's default mixed-precision lists, as grappler's deny / allow / infer lists on the host.

On an NPU, allow_mix_precision (and mixed_float16, allow_mix_precision_fp16 / _bf16) lowers an op's precision
according to its op information's `precision_reduce` flag: `false` puts it on the black list (kept in float32),
`true` on the white list (lowered), no flag on the gray list (it follows the op before it); modify_mixlist edits
these lists. The flags are public in Ascend's operator repositories (hicann/ops-nn and hicann/ops-math: each
operator definition's `PrecisionReduceFlag`); the lists below are the TensorFlow op types that have an Ascend
counterpart there.

Grappler's mixed-precision passes have lists of their own (TensorFlow's auto_mixed_precision_lists.h): *allow*
(always converted), *infer* (converted between converted ops), *clear* (follows its neighbours) and *deny*
(float32, and what follows it). The host keeps the stricter of the two for each op:
- black on the NPU: grappler's deny list (`DENYLIST_ADD`, and out of the others), so an op the NPU keeps in float32
  stays float32 here too (Selu and Inv, which grappler infers, are the ops this changes);
- white on the NPU: where grappler has it. The matmul and convolution families are white on the NPU and on
  grappler's allow list; the element-wise white ops stay on grappler's infer list (lowered between lowered ops
  only: as allow-list seeds each would add casts around itself), and the white ops grappler denies (Exp, Expm1,
  Pow, Sum, Mean) stay float32: the host lowers to bfloat16, whose 8 significant bits against float16's 11 make
  exponentials, powers and long sums lose more than they do on the NPU;
- gray on the NPU: where grappler has it (infer or clear; no op of grappler's allow list is gray on the NPU).

modify_mixlist then moves ops between the lists as on the NPU (plan/precision.py), over these defaults.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# TensorFlow op types whose Ascend counterpart's op information sets precision_reduce false (hicann/ops-math:
# Acosh, Asinh, Inv, InvGrad; hicann/ops-nn: the rest). Integer and complex ops of that list (DataFormatDimMap,
# PopulationCount, Real) are left out: a float pass never converts them.
_NPU_OPTIMIZER_OPS = (
    "ApplyAdagrad",
    "ApplyAdam",
    "ApplyCenteredRMSProp",
    "ApplyFtrl",
    "ApplyGradientDescent",
    "ApplyMomentum",
    "ApplyProximalAdagrad",
    "ApplyProximalGradientDescent",
)
NPU_BLACK_LIST = (
    "Acosh",
    "Asinh",
    "Inv",
    "InvGrad",
    "L2Loss",
    "Selu",
    "SoftmaxCrossEntropyWithLogits",
    "SparseSoftmaxCrossEntropyWithLogits",
    *_NPU_OPTIMIZER_OPS,
    *(f"Resource{op}" for op in _NPU_OPTIMIZER_OPS),  # the same updates on resource variables
)

# Grappler's own lists where they matter to the translation (TensorFlow's auto_mixed_precision_lists.h: the
# same deny list for the CUDA float16 and the oneDNN bfloat16 pass).
GRAPPLER_DENY_LIST = (
    "Exp",
    "Expm1",
    "L2Loss",
    "Mean",
    "Pow",
    "SaveV2",
    "SoftmaxCrossEntropyWithLogits",
    "SparseSoftmaxCrossEntropyWithLogits",
    "Sum",
)
GRAPPLER_ALLOW_LISTS = {
    "auto_mixed_precision_onednn_bfloat16": (
        "BatchMatMul",
        "BatchMatMulV2",
        "Conv2D",
        "Conv2DBackpropFilter",
        "Conv2DBackpropInput",
        "Conv3D",
        "Conv3DBackpropFilterV2",
        "Conv3DBackpropInputV2",
        "DepthwiseConv2dNative",
        "DepthwiseConv2dNativeBackpropFilter",
        "DepthwiseConv2dNativeBackpropInput",
        "Einsum",
        "MatMul",
    ),
}
# The NPU's black ops on grappler's infer lists (Selu on both passes', Inv on the CUDA one): grappler would lower them.
GRAPPLER_INFERRED_BLACK = ("Inv", "Selu")
# The NPU's white ops that grappler denies, kept float32 (see the module's docstring).
KEPT_FLOAT32_THOUGH_WHITE = ("Exp", "Expm1", "Mean", "Pow", "Sum")


def default_list_edits() -> dict[str, list[str]]:
    """Grappler list edits (DENYLIST_ADD, INFERLIST_REMOVE -> op types) that put the NPU's black list on
    grappler's deny list and off its infer list (no op of it is on grappler's allow or clear lists)."""
    return {
        "DENYLIST_ADD": [op for op in NPU_BLACK_LIST if op not in GRAPPLER_DENY_LIST],
        "INFERLIST_REMOVE": list(GRAPPLER_INFERRED_BLACK),
    }


def without_ops(edits: Mapping[str, list[str]], ops: Iterable[str]) -> dict[str, list[str]]:
    """`edits` less every edit of `ops` (an op that modify_mixlist moves leaves the defaults)."""
    dropped = set(ops)
    return {variable: [op for op in listed if op not in dropped] for variable, listed in edits.items()}


def lists_in_force(grappler_pass: str, edits: Mapping[str, Iterable[str]]) -> str:
    """The lists in force for `grappler_pass` after `edits`, in words for the report: the deny and allow lists
    whole, the infer and clear lists as grappler's own less or plus what the edits move."""
    deny = _edited(GRAPPLER_DENY_LIST, edits, "DENYLIST")
    allow = GRAPPLER_ALLOW_LISTS.get(grappler_pass)
    words = [f"deny (float32): {', '.join(sorted(deny))}"]
    words.append(
        f"allow: {', '.join(sorted(_edited(allow, edits, 'ALLOWLIST')))}"
        if allow is not None
        else f"allow: grappler's{_moved(edits, 'ALLOWLIST')}"
    )
    words += [
        f"{name.lower().removesuffix('list')}: grappler's{_moved(edits, name)}" for name in ("INFERLIST", "CLEARLIST")
    ]
    return "; ".join(words)


def _edited(listed: Iterable[str], edits: Mapping[str, Iterable[str]], name: str) -> set[str]:
    return ({*listed} | {*edits.get(f"{name}_ADD", ())}) - {*edits.get(f"{name}_REMOVE", ())}


def _moved(edits: Mapping[str, Iterable[str]], name: str) -> str:
    added, removed = list(edits.get(f"{name}_ADD", ())), list(edits.get(f"{name}_REMOVE", ()))
    return (f" plus {', '.join(added)}" if added else "") + (f" less {', '.join(removed)}" if removed else "")
