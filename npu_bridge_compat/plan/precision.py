"""Precision: precision_mode / precision_mode_v2 and modify_mixlist on grappler's auto mixed precision.

The NPU's mixed precision is float16; a GPU host gets the same through grappler's `auto_mixed_precision` pass.
CPUs have no fast float16 path, so a CPU host uses the oneDNN bfloat16 pass by default and offers float16
emulation (`auto_mixed_precision_cpu`) as an opt-in for comparing numerics with an NPU.
"""

from __future__ import annotations

import functools

from npu_bridge_compat.errors import NpuCompatWarning, UnknownOpTypeWarning, warn
from npu_bridge_compat.options.grammars import MixList
from npu_bridge_compat.options.precision_modes import Intent, intent_of
from npu_bridge_compat.options.spec import Effect
from npu_bridge_compat.plan.contribution import Contribution
from npu_bridge_compat.plan.features import MixedPrecision, TensorFloat32
from npu_bridge_compat.plan.platform import CPU_FLOAT16_ENV, HostFacts

FLOAT16_EMULATION_PASS = "auto_mixed_precision_cpu"
FLOAT16_EMULATION_CRASHES = (
    f"{CPU_FLOAT16_ENV}=1: TensorFlow 2.15's float16-emulation pass (auto_mixed_precision_cpu) ends the process "
    "with a segmentation fault on some training graphs (seen with tf.compat.v1.losses.mean_squared_error, and with "
    "Keras fit on batches of dynamic size). If the process dies without a Python error, unset the variable: "
    "bfloat16 (CPUs with AVX-512) or float32 runs instead."
)


# Ascend IR operator types whose TensorFlow counterpart has another name.
ASCEND_TO_TF_OP = {
    "MatMulV2": "MatMul",
    "SoftmaxV2": "Softmax",
    "LogSoftmaxV2": "LogSoftmax",
    "ReduceMeanD": "Mean",
    "ReduceSumD": "Sum",
    "ReduceMaxD": "Max",
    "ReduceMinD": "Min",
    "ReduceProdD": "Prod",
    "ReduceMean": "Mean",
    "ReduceSum": "Sum",
    "Conv2DBackpropInputD": "Conv2DBackpropInput",
    "Conv2DBackpropFilterD": "Conv2DBackpropFilter",
    "DepthwiseConv2DBackpropInputD": "DepthwiseConv2dNativeBackpropInput",
    "DepthwiseConv2DBackpropFilterD": "DepthwiseConv2dNativeBackpropFilter",
    "DepthwiseConv2D": "DepthwiseConv2dNative",
    "GatherV2D": "GatherV2",
    "ConcatV2D": "ConcatV2",
    "ConcatD": "ConcatV2",
    "SplitD": "Split",
    "SplitVD": "SplitV",
    "PadD": "Pad",
    "TransposeD": "Transpose",
    "TileD": "Tile",
    "Bias": "BiasAdd",
    "Pooling": "MaxPool",
}


@functools.lru_cache(maxsize=1)
def _tf_op_names() -> dict[str, str]:
    """TensorFlow's registered op types, keyed by lower-case name."""
    import tensorflow as tf

    return {name.lower(): name for name in dir(tf.raw_ops) if not name.startswith("_")}


def tf_op_type(ascend_op: str) -> str | None:
    """The TensorFlow op type for an Ascend op type name, or None when TensorFlow has none."""
    ops = _tf_op_names()
    if ascend_op in ASCEND_TO_TF_OP:
        return ASCEND_TO_TF_OP[ascend_op]
    return ops.get(ascend_op.lower())


def _pass_for(intent: Intent, host: HostFacts) -> tuple[str | None, Effect, str]:
    """The grappler pass (RewriterConfig field) for a mixed intent on this host, its effect and explanation."""
    if intent is Intent.MIXED_FLOAT16:
        if host.has_gpu:
            return "auto_mixed_precision", Effect.TRANSLATED, "grappler auto_mixed_precision (float16 on the GPU)"
        if host.cpu_float16_emulation:
            warn(FLOAT16_EMULATION_CRASHES, NpuCompatWarning)
            return (
                FLOAT16_EMULATION_PASS,
                Effect.APPROXIMATED,
                "grappler auto_mixed_precision_cpu: float16 casts emulated on the CPU, as the NPU rounds "
                "(TensorFlow 2.15's pass crashes on some training graphs, see the warning)",
            )
        if not host.cpu_bfloat16:
            return (
                None,
                Effect.NO_EQUIVALENT,
                "this CPU has no AVX-512, which TensorFlow's bfloat16 kernels need; float32 throughout "
                f"({CPU_FLOAT16_ENV}=1 emulates float16 instead)",
            )
        return (
            "auto_mixed_precision_onednn_bfloat16",
            Effect.APPROXIMATED,
            "grappler auto_mixed_precision_onednn_bfloat16: bfloat16 instead of float16, which CPUs lack a "
            f"fast path for (set {CPU_FLOAT16_ENV}=1 to emulate float16 instead)",
        )
    if intent is Intent.MIXED_BFLOAT16:
        if host.has_gpu:
            return (
                None,
                Effect.NO_EQUIVALENT,
                "TensorFlow's GPU graph rewrite only produces float16; use the Keras 'mixed_bfloat16' policy",
            )
        if not host.cpu_bfloat16:
            return None, Effect.NO_EQUIVALENT, "this CPU has no AVX-512, which TensorFlow's bfloat16 kernels need"
        return (
            "auto_mixed_precision_onednn_bfloat16",
            Effect.TRANSLATED,
            "grappler auto_mixed_precision_onednn_bfloat16 (bfloat16 on the CPU)",
        )
    if intent is Intent.FORCE_FLOAT16 and host.has_gpu:
        return (
            "auto_mixed_precision",
            Effect.APPROXIMATED,
            "grappler auto_mixed_precision at level UNSAFE_FORCE_ALL: every op that has a float16 kernel",
        )
    raise AssertionError(f"{intent} has no grappler pass")


def plan_precision(options, host: HostFacts) -> Contribution:
    result = Contribution()
    intent = intent_of(options)
    key = "precision_mode" if options.precision_mode else "precision_mode_v2"
    amp_pass = None
    if intent in (Intent.MIXED_FLOAT16, Intent.MIXED_BFLOAT16) or (intent is Intent.FORCE_FLOAT16 and host.has_gpu):
        amp_pass, effect, how = _pass_for(intent, host)
        result.say(key, effect, how)
    elif intent is Intent.FLOAT32:
        result.features.append(TensorFloat32(enabled=False))
        result.say(key, Effect.TRANSLATED, "float32 kept: no mixed precision, TF32 off on GPUs")
    elif intent is Intent.FLOAT32_WHERE_SUPPORTED:
        result.say(
            key,
            Effect.NOT_NEEDED,
            "lowers precision only for ops without a float32 kernel; every host op has one, so float32 runs",
        )
    elif intent is Intent.FORCE_FLOAT16:
        result.say(
            key,
            Effect.NO_EQUIVALENT,
            "a CPU has no whole-graph float16 execution (grappler refuses UNSAFE_FORCE_ALL on the CPU passes)",
        )
    elif intent in (Intent.MIXED_HIFLOAT8, Intent.CUBE_HIFLOAT8):
        result.say(
            key,
            Effect.NO_EQUIVALENT,
            "HiFloat8 is an Ascend 950 data type; no host kernel computes in it, so float32 runs",
        )
    elif intent is Intent.CUBE_FLOAT16:
        if host.has_gpu:
            result.features.append(TensorFloat32(enabled=True))
            result.say(
                key, Effect.APPROXIMATED, "TF32 matmuls and convolutions with float32 accumulation (GPUs with TF32)"
            )
        else:
            result.say(key, Effect.NO_EQUIVALENT, "CPU matmuls have no reduced-precision-input mode")
    lists = _plan_mixlist(options.parsed_value("modify_mixlist"), amp_pass, result) if options.modify_mixlist else ()
    if amp_pass:
        result.features.append(MixedPrecision(amp_pass, lists, force_all=intent is Intent.FORCE_FLOAT16))
    return result


def _plan_mixlist(mixlist: MixList, amp_pass: str | None, result: Contribution) -> tuple:
    """The grappler list edits for Ascend's list edits: ((ALLOWLIST_ADD, (op, ...)), ...)."""
    if amp_pass is None:
        result.say(
            "modify_mixlist",
            Effect.NO_EQUIVALENT,
            "no mixed-precision pass runs on this host for the precision mode set, so the lists have no effect",
        )
        return ()
    lists: dict[str, list[str]] = {}
    unknown = []
    for list_name, action, ascend_op in mixlist.changes:
        op = tf_op_type(ascend_op)
        if op is None:
            unknown.append(ascend_op)
            continue
        if op != ascend_op:
            result.notes.append(f"modify_mixlist: Ascend op type {ascend_op} is TensorFlow's {op}")
        for variable in _list_moves(list_name, action):
            lists.setdefault(variable, [])
            if op not in lists[variable]:
                lists[variable].append(op)
    if unknown:
        warn(
            f"modify_mixlist names op types TensorFlow does not have: {', '.join(unknown)}; they are ignored "
            "on this host.",
            UnknownOpTypeWarning,
        )
        result.notes.append(f"modify_mixlist: no TensorFlow op type for {', '.join(unknown)} (ignored)")
    result.say(
        "modify_mixlist",
        Effect.TRANSLATED,
        f"grappler {amp_pass} lists: " + "; ".join(f"{v}={','.join(ops)}" for v, ops in lists.items()),
    )
    return tuple((variable, tuple(ops)) for variable, ops in lists.items())


def _list_moves(list_name: str, action: str) -> tuple[str, ...]:
    """Grappler list edits for one Ascend edit; Ascend moves an op between lists, so it leaves the others."""
    target = {"white-list": "ALLOWLIST", "black-list": "DENYLIST", "gray-list": "INFERLIST"}[list_name]
    if action == "to-remove":  # removing from black or white makes the op gray, as on Ascend
        return (f"{target}_REMOVE",) if target == "INFERLIST" else (f"{target}_REMOVE", "INFERLIST_ADD")
    others = [name for name in ("ALLOWLIST", "DENYLIST", "INFERLIST", "CLEARLIST") if name != target]
    return (f"{target}_ADD", *(f"{name}_REMOVE" for name in others))
