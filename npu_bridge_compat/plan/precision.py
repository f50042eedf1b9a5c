"""Precision: precision_mode / precision_mode_v2 and modify_mixlist on grappler's auto mixed precision.

The NPU's mixed precision is float16; a GPU host gets the same through grappler's `auto_mixed_precision` pass,
where its tensor cores make it pay (compute capability 7.0 and later). A CPU gets grappler's oneDNN bfloat16 pass,
which pays only where the CPU computes bfloat16 natively, and then not for every model: a step dominated by
element-wise ops can run slower with the casts the pass adds. So on a CPU the plan says who decides
(`PrecisionChoice`): the program's own first runs, which try both forms and keep the faster (MEASURED), after a
short probe of this CPU where its flags cannot tell (PROBED: AVX-512 without native bfloat16, an unknown CPU). The
run-time core resolves both (runtime/precision.py); the plan stays data. Float16 emulation
(`auto_mixed_precision_cpu`) is an opt-in for comparing numerics with an NPU, and NPU_BRIDGE_COMPAT_REDUCED_PRECISION
keeps reduced precision where it is slower (on) or turns it off (off).
"""

from __future__ import annotations

import dataclasses
import functools

from npu_bridge_compat.errors import NpuCompatWarning, UnknownOpTypeWarning, warn
from npu_bridge_compat.options.grammars import MixList
from npu_bridge_compat.options.precision_modes import Intent, intent_of
from npu_bridge_compat.options.spec import Effect
from npu_bridge_compat.plan.contribution import Contribution
from npu_bridge_compat.plan.features import MixedPrecision, PrecisionChoice, TensorFloat32
from npu_bridge_compat.plan.mixlists import default_list_edits, lists_in_force, without_ops
from npu_bridge_compat.plan.platform import (
    BFLOAT16_TENSOR_CORES,
    CPU_FLOAT16_ENV,
    FLOAT16_TENSOR_CORES,
    REDUCED_PRECISION_ENV,
    HostFacts,
    Support,
)

FLOAT16_EMULATION_PASS = "auto_mixed_precision_cpu"
BFLOAT16_PASS = "auto_mixed_precision_onednn_bfloat16"
GPU_PASS = "auto_mixed_precision"
FLOAT16_EMULATION_CRASHES = (
    f"{CPU_FLOAT16_ENV}=1: TensorFlow 2.15's float16-emulation pass (auto_mixed_precision_cpu) ends the process "
    "with a segmentation fault on some training graphs (seen with tf.compat.v1.losses.mean_squared_error, and with "
    "Keras fit on batches of dynamic size). If the process dies without a Python error, unset the variable: "
    "bfloat16 (CPUs with AVX-512) or float32 runs instead."
)
FORCE_HINT = f"{REDUCED_PRECISION_ENV}=on keeps it even where slower"
LISTS_NOTE = "mixed-precision lists in force"
MEASURED_HOW = (
    "each training function's first runs (a session run signature, a Keras or tf.function call, per input shapes) "
    "run it and float32 in turn and keep the faster, logged with the times measured"
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


def precision_key(options) -> str:
    """The option whose report entry says what precision runs: precision_mode wins over precision_mode_v2."""
    return "precision_mode" if options.precision_mode else "precision_mode_v2"


def _pass_for(intent: Intent, host: HostFacts) -> tuple[MixedPrecision | None, Effect, str]:
    """The mixed-precision pass for a mixed intent (or FORCE_FLOAT16 on a GPU) on this host, its effect and
    explanation; None where float32 runs."""
    if host.reduced_precision == "off":
        return None, Effect.APPROXIMATED, f"float32 throughout: {REDUCED_PRECISION_ENV}=off"
    forced = host.reduced_precision == "on"
    if host.has_gpu:
        return _gpu_pass(intent, host, forced)
    if intent is Intent.MIXED_FLOAT16 and host.cpu_float16_emulation:
        warn(FLOAT16_EMULATION_CRASHES, NpuCompatWarning)
        how = (
            "grappler auto_mixed_precision_cpu: float16 casts emulated on the CPU, as the NPU rounds (slower than "
            "float32, asked for; TensorFlow 2.15's pass crashes on some training graphs, see the warning)"
        )
        return MixedPrecision(FLOAT16_EMULATION_PASS, dtype="float16"), Effect.APPROXIMATED, how
    if host.cpu_bfloat16 is Support.NONE:
        return (
            None,
            Effect.NO_EQUIVALENT,
            f"this CPU has no AVX-512 ({host.cpu_description}), which TensorFlow's bfloat16 kernels need; float32 "
            "throughout"
            + (f" ({CPU_FLOAT16_ENV}=1 emulates float16 instead)" if intent is Intent.MIXED_FLOAT16 else ""),
        )
    what = f"grappler {BFLOAT16_PASS}"
    if intent is Intent.MIXED_FLOAT16:
        what += " (bfloat16 instead of float16: TensorFlow's CPU rewrite runs float16 only emulated"
        what += f", {CPU_FLOAT16_ENV}=1 asks for that)"
    effect = Effect.APPROXIMATED if intent is Intent.MIXED_FLOAT16 else Effect.TRANSLATED
    if forced:
        return _bfloat16(PrecisionChoice.KEPT), effect, f"{what}, kept: {REDUCED_PRECISION_ENV}=on"
    if host.cpu_bfloat16 is Support.NATIVE:
        how = f"{what} where it pays: {host.cpu_description}, and {MEASURED_HOW} ({FORCE_HINT})"
        return _bfloat16(PrecisionChoice.MEASURED), effect, how
    why = (
        "oneDNN emulates bfloat16 there, converting every operand, and may run slower than float32"
        if host.cpu_bfloat16 is Support.EMULATED
        else "its flags do not say whether it computes bfloat16 natively"
    )
    how = (
        f"{what} where it pays: {host.cpu_description}; {why}, so a short matmul and conv probe, run once per CPU "
        f"and TensorFlow version and cached, decides, then {MEASURED_HOW} ({FORCE_HINT})"
    )
    return _bfloat16(PrecisionChoice.PROBED), effect, how


def _bfloat16(choice: PrecisionChoice) -> MixedPrecision:
    return MixedPrecision(BFLOAT16_PASS, dtype="bfloat16", choice=choice)


def _gpu_pass(intent: Intent, host: HostFacts, forced: bool) -> tuple[MixedPrecision | None, Effect, str]:
    if intent is Intent.MIXED_BFLOAT16:
        native = (
            f"; its {host.gpu_description} has bfloat16 tensor cores, which the Keras 'mixed_bfloat16' policy uses"
            if host.gpu_has(BFLOAT16_TENSOR_CORES)
            else ""
        )
        return None, Effect.NO_EQUIVALENT, f"TensorFlow's GPU graph rewrite only produces float16{native}"
    force_all = intent is Intent.FORCE_FLOAT16
    what = (
        "grappler auto_mixed_precision at level UNSAFE_FORCE_ALL: every op that has a float16 kernel"
        if force_all
        else "grappler auto_mixed_precision (float16 on the GPU)"
    )
    effect = Effect.APPROXIMATED if force_all else Effect.TRANSLATED
    if host.gpu_has(FLOAT16_TENSOR_CORES):
        return MixedPrecision(GPU_PASS, force_all=force_all, dtype="float16"), effect, f"{what}, tensor cores"
    if forced:
        how = f"{what}, kept: {REDUCED_PRECISION_ENV}=on (no float16 tensor cores: {host.gpu_description})"
        return MixedPrecision(GPU_PASS, force_all=force_all, dtype="float16"), effect, how
    return (
        None,
        Effect.NO_EQUIVALENT,
        f"this GPU's {host.gpu_description} has no float16 tensor cores (7.0 and later), where float16 is no "
        f"faster than float32: float32 kept ({REDUCED_PRECISION_ENV}=on runs {what} anyway)",
    )


def plan_precision(options, host: HostFacts) -> Contribution:
    result = Contribution()
    intent = intent_of(options)
    key = precision_key(options)
    mixed = None
    if intent in (Intent.MIXED_FLOAT16, Intent.MIXED_BFLOAT16) or (intent is Intent.FORCE_FLOAT16 and host.has_gpu):
        mixed, effect, how = _pass_for(intent, host)
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
        if host.has_gpu and host.gpu_has(BFLOAT16_TENSOR_CORES):
            result.features.append(TensorFloat32(enabled=True))
            result.say(
                key, Effect.APPROXIMATED, "TF32 matmuls and convolutions with float32 accumulation (GPUs with TF32)"
            )
        elif host.has_gpu:
            result.say(key, Effect.NO_EQUIVALENT, f"TF32 needs compute capability 8.0 ({host.gpu_description})")
        else:
            result.say(key, Effect.NO_EQUIVALENT, "CPU matmuls have no reduced-precision-input mode")
    lists = _plan_lists(options, mixed, result)
    if mixed is not None:
        result.features.append(dataclasses.replace(mixed, lists=lists))
    return result


def _plan_lists(options, mixed: MixedPrecision | None, result: Contribution) -> tuple:
    """The grappler list edits of a mixed-precision pass: the NPU's default lists (plan/mixlists.py; none where
    the pass converts every op it can), then modify_mixlist's moves over them. ((DENYLIST_ADD, (op, ...)), ...)"""
    if mixed is None:
        if options.modify_mixlist:
            result.say(
                "modify_mixlist",
                Effect.NO_EQUIVALENT,
                "no mixed-precision pass runs on this host for the precision mode set, so the lists have no effect",
            )
        return ()
    edits = {} if mixed.force_all else default_list_edits()
    if options.modify_mixlist:
        moved, moved_ops = _plan_mixlist(options.parsed_value("modify_mixlist"), mixed.grappler_pass, result)
        edits = without_ops(edits, moved_ops)
        for variable, ops in moved.items():
            listed = edits.setdefault(variable, [])
            listed.extend(op for op in ops if op not in listed)
    edits = {variable: ops for variable, ops in edits.items() if ops}
    if not mixed.force_all:
        result.notes.append(
            f"{LISTS_NOTE} (grappler {mixed.grappler_pass}): {lists_in_force(mixed.grappler_pass, edits)}"
        )
    return tuple((variable, tuple(ops)) for variable, ops in edits.items())


def _plan_mixlist(mixlist: MixList, amp_pass: str, result: Contribution) -> tuple[dict[str, list[str]], set[str]]:
    """The grappler list edits for Ascend's list edits ({ALLOWLIST_ADD: [op, ...], ...}) and the ops they move."""
    lists: dict[str, list[str]] = {}
    moved: set[str] = set()
    unknown = []
    for list_name, action, ascend_op in mixlist.changes:
        op = tf_op_type(ascend_op)
        if op is None:
            unknown.append(ascend_op)
            continue
        if op != ascend_op:
            result.notes.append(f"modify_mixlist: Ascend op type {ascend_op} is TensorFlow's {op}")
        moved.add(op)
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
    return lists, moved


def _list_moves(list_name: str, action: str) -> tuple[str, ...]:
    """Grappler list edits for one Ascend edit; Ascend moves an op between lists, so it leaves the others."""
    target = {"white-list": "ALLOWLIST", "black-list": "DENYLIST", "gray-list": "INFERLIST"}[list_name]
    if action == "to-remove":  # removing from black or white makes the op gray, as on Ascend
        return (f"{target}_REMOVE",) if target == "INFERLIST" else (f"{target}_REMOVE", "INFERLIST_ADD")
    others = [name for name in ("ALLOWLIST", "DENYLIST", "INFERLIST", "CLEARLIST") if name != target]
    return (f"{target}_ADD", *(f"{name}_REMOVE" for name in others))
