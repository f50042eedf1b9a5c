"""Numeric checks for enable_dump_debug (overflow detection) and enable_exception_dump.

Every floating-point output of the ops a run computes is reduced to two flags (has NaN, has Inf) that are
fetched with the step; after the run the first op in graph order with a non-finite output is named in a
`NonFiniteValueError`, which stops training, as the NPU's overflow detection does. A host detects Inf and NaN
only: float16 saturation, which the NPU also reports, has no host signal.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from npu_bridge_compat.errors import NonFiniteValueError
from npu_bridge_compat.host.subgraph import step_operations


@dataclasses.dataclass(frozen=True)
class NumericCheck:
    flags: object  # bool tensor [outputs, 2]: NaN, Inf
    outputs: tuple[tuple[str, int], ...]  # (op name, slot) per row, in graph order

    def raise_if_non_finite(self, flags: np.ndarray) -> None:
        bad = np.flatnonzero(flags.any(axis=1))
        if bad.size:
            op, slot = self.outputs[bad[0]]
            kind = "NaN" if flags[bad[0], 0] else "Inf"
            raise NonFiniteValueError(
                f"op '{op}' produced {kind} values in output {slot}, the first non-finite output of this step "
                "(enable_dump_debug / enable_exception_dump stop here, as the NPU's overflow detection does)")


def numeric_check(graph, fetched_ops) -> NumericCheck | None:
    """The check over every floating-point output of the step, or None if it has none."""
    outputs = [(op, slot, tensor) for op in step_operations(graph, fetched_ops)
               for slot, tensor in enumerate(op.outputs) if tensor.dtype.is_floating]
    if not outputs:
        return None
    with graph.as_default(), tf.name_scope("npu_numeric_checks"):
        flags = tf.stack([tf.stack([tf.reduce_any(tf.math.is_nan(t)), tf.reduce_any(tf.math.is_inf(t))])
                          for _, _, t in outputs])
    return NumericCheck(flags, tuple((op.name, slot) for op, slot, _ in outputs))
