"""TensorFlow 1.15 names: the one place the scan decides what a TF1-only name becomes on this host.

A name is a TF 1.15 name when it lives in a namespace TensorFlow 2 dropped (`tensorflow.contrib`,
`tensorflow.python.keras`, `tensorflow.examples`) or when TensorFlow 2.15 does not have it at all (`tf.Session`,
`tf.app.flags`): such scripts are run with `python -m npu_bridge_compat run --tf1`.

`tf1_name_status` is the integration point with the runtime's TF1 support: once `npu_bridge_compat.legacy`
provides `tf1_name_status(dotted_name) -> (status, detail)` (status "works", "differs", "missing" or
"unknown"), this module's `tf1_name_status` is replaced by that function and nothing else changes.
"""

from __future__ import annotations

from npu_bridge_compat.scan.report import Severity

TF1_NAMESPACES = ("tensorflow.contrib", "tensorflow.python.keras", "tensorflow.examples")

# status -> (the finding's outcome, its severity)
_OUTCOMES = {
    "works": ("works under run --tf1", Severity.READY),
    "differs": ("differs under run --tf1", Severity.WARNING),
    "missing": ("missing under run --tf1", Severity.BLOCKED),
    "unknown": ("needs run --tf1", Severity.WARNING),
}


def in_tf1_namespace(dotted: str) -> bool:
    return any(dotted == namespace or dotted.startswith(namespace + ".") for namespace in TF1_NAMESPACES)


def tf1_name_status(dotted: str) -> tuple[str, str]:
    """What `dotted` (a TF 1.15 name) is under `run --tf1`. Until the runtime answers it, every such name is
    reported as needing `run --tf1`, with its module."""
    module = dotted.rsplit(".", 1)[0] if "." in dotted else dotted
    return "unknown", f"a TensorFlow 1.15 name (module {module}); run the script with `run --tf1`"


def classify_tf1_name(dotted: str) -> tuple[str, Severity, str]:
    """(outcome, severity, detail) of a TF 1.15 name."""
    status, detail = tf1_name_status(dotted)
    outcome, severity = _OUTCOMES[status]
    return outcome, severity, detail
