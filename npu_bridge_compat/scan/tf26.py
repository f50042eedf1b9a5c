"""TensorFlow 2.6 / Keras 2.6 names: what a name that ported TF2 programs import, and this line moved or
removed, becomes under `run` (`keras.utils.control_flow_util`, `tensorflow.python.keras.layers.LSTM`,
`tf.keras.mixed_precision.experimental`).

Answered by `npu_bridge_compat.legacy.tf26.tf26_name_status`, from the table that serves them at run time; the
standalone Keras 2.2 names (`keras.engine.topology`) by the Keras 2.2 world (legacy/keras2), which `run --tf1`
serves.
"""

from __future__ import annotations

from npu_bridge_compat.imports.world import today_has
from npu_bridge_compat.legacy.keras2 import KERAS2
from npu_bridge_compat.legacy.tf26 import tf26_name_status
from npu_bridge_compat.scan.outcomes import FINDINGS, RUN, RUN_TF1, outcome
from npu_bridge_compat.scan.report import Severity


def classify_tf26_name(dotted: str) -> tuple[str, Severity, str] | None:
    """(outcome, severity, detail) of a TF 2.6 name this line lacks; None for a name this line has as it is, or
    one the TF 2.6 world does not map."""
    status = tf26_name_status(dotted)
    if status.status not in FINDINGS:
        return None
    return *outcome(status.status, RUN), status.detail


def classify_keras2_name(dotted: str) -> tuple[str, Severity, str] | None:
    """(outcome, severity, detail) under `run --tf1` of a standalone Keras 2.2 name this line's Keras lacks; None for
    a name it has as it is, one the Keras 2.2 world does not map, or one that `run` serves with the same status
    from the TF 2.6 world (that world's finding says it). A name both worlds serve differently is a finding of each
    (Keras 1's `keras.layers.merge`: TF 2.6's merging module under `run`, a stand-in under `run --tf1`)."""
    if not KERAS2.in_tree(dotted, KERAS2.roots) or today_has(dotted):
        return None
    status = KERAS2.name_status(dotted)
    if status.status not in FINDINGS or tf26_name_status(dotted).status is status.status:
        return None
    return *outcome(status.status, RUN_TF1), status.detail
