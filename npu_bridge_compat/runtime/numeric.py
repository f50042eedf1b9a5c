"""Numeric checks for enable_dump_debug (overflow detection) and enable_exception_dump.

Every floating-point output of the ops a run computes is reduced to two flags (has NaN, has Inf) that are
fetched with the step (inside a loop or a traced function, `runtime/probes.py` records them instead); after
the run the first op in graph order with a non-finite output is named in a `NonFiniteValueError`, which stops
training, as the NPU's overflow detection does. With a dump path, an op whose output is not finite also writes
its inputs under `<dump_path>/exception/<time>_<pid>/<op>/`, from inside the failing step (a `tf.cond` that runs
only then), as the NPU's exception dump does. A host detects Inf and NaN only: float16 saturation, which the NPU
also reports, has no host signal.
"""

from __future__ import annotations

import dataclasses
import os
import time

import numpy as np
import tensorflow as tf

from npu_bridge_compat.errors import NonFiniteValueError
from npu_bridge_compat.runtime.dump import atomic_write, safe_name
from npu_bridge_compat.runtime.graph import MERGE_OPS, original_name, step_operations

EXCEPTION_DIRECTORY = "exception"


@dataclasses.dataclass(frozen=True)
class NumericCheck:
    flags: object  # bool tensor [outputs, 2]: NaN, Inf
    outputs: tuple[tuple[str, int], ...]  # (op name, slot) per row, in graph order
    saved_to: str | None  # where failing ops' inputs are written

    def raise_if_non_finite(self, flags: np.ndarray, step: int) -> None:
        bad = np.flatnonzero(flags.any(axis=1))
        if bad.size:
            self.raise_for(int(bad[0]), "NaN" if flags[bad[0], 0] else "Inf", step)

    def raise_for(self, row: int, kind: str, step: int) -> None:
        op, slot = self.outputs[row]
        saved = f"; its inputs are saved in {os.path.join(self.saved_to, safe_name(op))}" if self.saved_to else ""
        raise NonFiniteValueError(
            f"op '{op}' produced {kind} values in output {slot}, the first non-finite output of step {step}{saved} "
            "(enable_dump_debug / enable_exception_dump stop here, as the NPU's overflow detection does)"
        )


def numeric_check(graph, fetched_ops, dump_path: str | None = None) -> NumericCheck | None:
    """The check over every floating-point output of the step (saving failing ops' inputs under `dump_path`),
    or None if the step has no floating-point output."""
    with graph.as_default():
        return check_operations(step_operations(graph, fetched_ops), dump_path)


def check_operations(
    operations, dump_path: str | None = None, imported_as: str = "", no_earlier_failure=None
) -> NumericCheck | None:
    """The check over every floating-point output of `operations`, built in the current graph (a loop body or a
    traced function may hold it), or None if they have no floating-point output. Ops of a copy imported under the
    scope `imported_as` are named as in the original graph. `no_earlier_failure` (a bool tensor): save inputs only
    while it holds, so that the steps a loop runs after its first failure keep that failure's inputs."""
    # Outputs declared empty hold nothing to check, and some (batch norm's unused reserve space) run with another
    # rank than declared, which a reduction built for the declared rank rejects. A TF1 variable's own (ref)
    # output is left out: it is read before its initialiser ran; its values show in the reads of it.
    outputs = [
        (op, slot, tensor)
        for op in operations
        for slot, tensor in enumerate(op.outputs)
        if tensor.dtype.is_floating and tensor.dtype == tensor.dtype.base_dtype and tensor.shape.num_elements() != 0
    ]
    if not outputs:
        return None
    # A directory per check built (time and process), so a later failure never overwrites an earlier one's inputs.
    saved_to = (
        os.path.join(dump_path, EXCEPTION_DIRECTORY, f"{time.strftime('%Y%m%d%H%M%S')}_{os.getpid()}")
        if dump_path
        else None
    )
    with tf.name_scope("npu_numeric_checks"):
        rows, savers = [], []
        for op, _, tensor in outputs:
            row = tf.stack([tf.reduce_any(tf.math.is_nan(tensor)), tf.reduce_any(tf.math.is_inf(tensor))])
            rows.append(row)
            if saved_to is not None and op.type not in MERGE_OPS:  # a Merge's inputs: one has no value
                failed = tf.reduce_any(row) if no_earlier_failure is None else tf.reduce_any(row) & no_earlier_failure
                savers.append(_save_inputs_if(failed, op, original_name(op, imported_as), saved_to))
        with tf.control_dependencies(savers):
            flags = tf.stack(rows)
    return NumericCheck(flags, tuple((original_name(op, imported_as), slot) for op, slot, _ in outputs), saved_to)


def _save_inputs_if(non_finite, op, name: str, directory: str):
    """An op that writes `op`'s numeric inputs under `directory/<name>/` when `non_finite` is true."""
    slots = [i for i, t in enumerate(op.inputs) if t.dtype.is_floating or t.dtype.is_integer or t.dtype.is_bool]
    inputs = [op.inputs[i] for i in slots]

    def write(*values) -> np.ndarray:
        target = os.path.join(directory, safe_name(name))
        os.makedirs(target, exist_ok=True)
        for slot, value in zip(slots, values):
            atomic_write(os.path.join(target, f"input.{slot}.npy"), lambda f, v=value: np.save(f, np.asarray(v)))
        return np.zeros([], np.int32)

    return tf.cond(
        non_finite, lambda: tf.numpy_function(write, inputs, tf.int32, stateful=True), lambda: tf.zeros([], tf.int32)
    )
