"""The FusedBatchNormV3 workaround that mixed compute needs.

FusedBatchNormV3 has a sixth, CUDA-specific output that the NPU cannot take in mixed compute; Ascend's
documentation tells scripts to build batch norm under `tf.compat.forward_compatibility_horizon(2019, 5, 1)`, which
in TF 1.15 made `fused_batch_norm` emit FusedBatchNorm (float32) or FusedBatchNormV2 (float16/bfloat16).

TF 2.1 removed that check, and TF 2.15 even ignores a horizon in the past (it logs "This will be ignored"), so
the horizon alone changes nothing there. `install_horizon_gate` records the horizon a script asks for (at TF's own
update hook, so both `tf.compat.forward_compatibility_horizon` and `compat.forward_compatibility_horizon` count);
from the first horizon before 2019-06-06 asked for (the program's own, or the one `batchnorm_workaround` enters
for a plan's mixed compute) the 1.15 check is back in front of the op wrapper `fused_batch_norm` calls: inside
such a horizon the legacy ops are emitted (with their own registered gradients); otherwise the call goes through
untouched, so graphs built outside the horizon are unchanged. A program that asks for no such horizon keeps
TensorFlow's batch norm as it is. Only batch norm is affected: other date checks keep
TensorFlow's own horizon. `batchnorm_workaround()` is the horizon the doors enter for mixed compute.

Both hooks are private TensorFlow functions (`compat._update_forward_compatibility_date_number`,
`gen_nn_ops.fused_batch_norm_v3`, which `nn.fused_batch_norm` looks up at each call); no public API selects the
batch-norm op. Checked on TensorFlow 2.15 and 2.21.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Iterator

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner

# TF 1.15 emitted FusedBatchNormV3 only when forward-compatible with this date.
V3_HORIZON = datetime.date(2019, 6, 6)
# The horizon Ascend's documentation recommends for mixed compute.
WORKAROUND_HORIZON = datetime.date(2019, 5, 1)

OWNER = Owner.BATCH_NORM_HORIZON
_requested_horizon: datetime.date | None = None  # the horizon of the innermost active context, if any


def install_horizon_gate() -> None:
    """Make `forward_compatibility_horizon` before 2019-06-06 emit the pre-V3 batch-norm ops again (idempotent,
    through the changes registry): the horizons asked for are recorded from now on, and the first one before
    2019-06-06 puts the gate in front of TensorFlow's FusedBatchNormV3 wrapper."""
    from tensorflow.python.compat import compat

    changes.replace_attribute(
        compat,
        "_update_forward_compatibility_date_number",
        _record_horizon,
        owner=OWNER,
        reason="remember the horizon a script asks for: TensorFlow ignores past horizons, the batch-norm gate reads it",
    )


def _gate_fused_batch_norm_v3() -> None:
    from tensorflow.python.ops import gen_nn_ops

    changes.replace_attribute(
        gen_nn_ops,
        "fused_batch_norm_v3",
        _gated_fused_batch_norm_v3,
        owner=OWNER,
        reason="inside a horizon before 2019-06-06, batch norm is FusedBatchNorm / V2 as in TF 1.15 (mixed compute)",
    )


def _record_horizon(date_to_override: datetime.date | None = None) -> None:
    """TF's horizon update, remembering the date asked for; a past date is kept for batch norm only."""
    global _requested_horizon
    from tensorflow.python.compat import compat

    _requested_horizon = date_to_override
    if date_to_override is not None and date_to_override < V3_HORIZON:
        _gate_fused_batch_norm_v3()
    if date_to_override is not None and date_to_override < compat._FORWARD_COMPATIBILITY_HORIZON:
        return  # TF would log that it ignores the date; here it is honoured by the batch-norm gate
    changes.original(compat, "_update_forward_compatibility_date_number")(date_to_override)


def legacy_batchnorm_requested() -> bool:
    """Whether graph construction is inside a horizon that predates FusedBatchNormV3."""
    return _requested_horizon is not None and _requested_horizon < V3_HORIZON


def _gated_fused_batch_norm_v3(
    x,
    scale,
    offset,
    mean,
    variance,
    epsilon=0.0001,
    exponential_avg_factor=1,
    data_format="NHWC",
    is_training=True,
    name=None,
):
    from tensorflow.python.framework import dtypes
    from tensorflow.python.ops import gen_nn_ops

    arguments = dict(
        epsilon=epsilon,
        exponential_avg_factor=exponential_avg_factor,
        data_format=data_format,
        is_training=is_training,
        name=name,
    )
    if not legacy_batchnorm_requested():
        return changes.original(gen_nn_ops, "fused_batch_norm_v3")(x, scale, offset, mean, variance, **arguments)
    if x.dtype.base_dtype == dtypes.float32:
        outputs = gen_nn_ops._fused_batch_norm(x, scale, offset, mean, variance, **arguments)
    else:
        outputs = gen_nn_ops.fused_batch_norm_v2(x, scale, offset, mean, variance, **arguments)
    # Callers unpack V3's six outputs; the sixth (reserve_space_3) is what the legacy ops do not have.
    return (*outputs, outputs[-1])


@contextlib.contextmanager
def batchnorm_workaround() -> Iterator[None]:
    """Build graphs as TF 1.15 did under the horizon Ascend recommends for mixed compute."""
    import tensorflow as tf

    install_horizon_gate()
    with tf.compat.forward_compatibility_horizon(
        WORKAROUND_HORIZON.year, WORKAROUND_HORIZON.month, WORKAROUND_HORIZON.day
    ):
        yield
