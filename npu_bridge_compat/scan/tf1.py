"""TensorFlow 1.15 names: the one place the scan decides what a TF1-only name becomes on this host.

A TF 1.15 name is one TensorFlow 2.15 lacks: names in the trees TensorFlow 2 dropped (`tensorflow.contrib`,
`tensorflow.python.keras`, `tensorflow.examples`), and top-level names such as `tf.Session` or `tf.app.flags`.
Scripts that use them run with `python -m npu_bridge_compat run --tf1`, where `import tensorflow` gives
`tf.compat.v1`.

The dropped trees are answered by `npu_bridge_compat.legacy.tf1_name_status`, from the same table that serves
them at run time, so the report cannot drift from what `run --tf1` does.
"""

from __future__ import annotations

from npu_bridge_compat import legacy
from npu_bridge_compat.imports.world import NameStatus, Status
from npu_bridge_compat.legacy.tf1.table import TF1_NAMESPACES
from npu_bridge_compat.scan.names import tensorflow_has
from npu_bridge_compat.scan.outcomes import RUN_TF1, outcome
from npu_bridge_compat.scan.report import Severity


def in_tf1_namespace(dotted: str) -> bool:
    return any(dotted == namespace or dotted.startswith(namespace + ".") for namespace in TF1_NAMESPACES)


def tf1_name_status(dotted: str) -> NameStatus:
    """What a `tensorflow.` name that TensorFlow 2.15 lacks becomes under `run --tf1`."""
    if in_tf1_namespace(dotted):
        return legacy.tf1_name_status(dotted)
    rest = dotted.partition(".")[2]
    if tensorflow_has(f"tensorflow.compat.v1.{rest}"):
        return NameStatus(
            Status.WORKS, f"tf.{rest} is tf.compat.v1.{rest} under `run --tf1` (TensorFlow 2.15 has no tf.{rest})"
        )
    parts = dotted.split(".")
    found = next(cut for cut in range(len(parts) - 1, 0, -1) if tensorflow_has(".".join(parts[:cut])))
    return NameStatus(
        Status.MISSING,
        f"no {parts[found]} in {'.'.join(parts[:found])} (TensorFlow 2.15), nor under `run --tf1` (tf.compat.v1)",
    )


def classify_tf1_name(dotted: str) -> tuple[str, Severity, str]:
    """(outcome, severity, detail) of a TF 1.15 name: every TF1 name is classified here."""
    status = tf1_name_status(dotted)
    return *outcome(status.status, RUN_TF1), status.detail


def tf1_hint(error: AttributeError) -> str | None:
    """What to tell a user whose script, run without `--tf1`, stopped on a TF 1.15 name (`tf.ConfigProto`,
    `tf.train.SessionRunHook`, ...); None when the missing attribute is not a TensorFlow 1.15 name."""
    module, name = getattr(error, "obj", None), getattr(error, "name", None)
    module_name = getattr(module, "__name__", "")
    if not name or not module_name.startswith("tensorflow"):
        return None
    public = module_name.replace("tensorflow._api.v2.", "tensorflow.", 1).replace("tensorflow._api.v2", "tensorflow")
    dotted = f"{public}.{name}"
    status = tf1_name_status(dotted)
    if status.status not in (Status.WORKS, Status.DIFFERS):
        return None
    return f"{dotted.replace('tensorflow.', 'tf.', 1)} is TensorFlow 1.15 API: {status.detail}"
