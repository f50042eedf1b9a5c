"""TensorFlow 2.6 / Keras 2.6 names: what a name that ported TF2 programs import, and this line moved or
removed, becomes under `run` (`keras.utils.control_flow_util`, `tensorflow.python.keras.layers.LSTM`,
`tf.keras.mixed_precision.experimental`).

Answered by `npu_bridge_compat.legacy.tf26.tf26_name_status`, from the table that serves them at run time.
"""

from __future__ import annotations

from npu_bridge_compat.legacy.tf26 import tf26_name_status
from npu_bridge_compat.scan.outcomes import FINDINGS, RUN, outcome
from npu_bridge_compat.scan.report import Severity


def classify_tf26_name(dotted: str) -> tuple[str, Severity, str] | None:
    """(outcome, severity, detail) of a TF 2.6 name this line lacks; None for a name this line has as it is, or
    one the TF 2.6 world does not map."""
    status = tf26_name_status(dotted)
    if status.status not in FINDINGS:
        return None
    return *outcome(status.status, RUN), status.detail
