"""tf_slim (the library behind `tf.contrib.layers` / `slim`) reads names from TensorFlow's private modules that
TensorFlow 2.13 and later moved elsewhere; the TF 1.15 and TF 2.6 worlds give them back. Checked on TensorFlow
2.15 and 2.21 with tf_slim 1.1: every `<module>.<name>` tf_slim's modules use that those lines lack."""

from __future__ import annotations

import importlib
from typing import Any

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner

# private module -> {name tf_slim reads there: the public TensorFlow name of the same object}
_MOVED = {
    "tensorflow.python.framework.ops": {"Tensor": "Tensor", "IndexedSlices": "IndexedSlices"},
    "tensorflow.python.ops.array_ops": {"stack": "stack", "unstack": "unstack"},
    "tensorflow.python.ops.control_flow_ops": {
        "cond": "compat.v1.cond",
        "while_loop": "compat.v1.while_loop",
        "Assert": "compat.v1.Assert",
        "case": "compat.v1.case",
    },
    "tensorflow.python.ops.variable_scope": {"variable": "compat.v1.Variable"},
}


def _public(tf: Any, dotted: str) -> Any:
    value = tf
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def restore_names_tf_slim_uses(owner: Owner) -> list[str]:
    """Put back, through the change registry, the names tf_slim reads from TensorFlow's private modules where
    this TensorFlow lacks them (`ops.Tensor`, `control_flow_ops.cond`, ...); returns the ones restored. Both
    worlds ask for them, so they have an owner of their own (TF_SLIM_NAMES); the reason names the world that
    asked first (`owner`)."""
    import tensorflow as tf

    restored = []
    for module_name, names in _MOVED.items():
        module = importlib.import_module(module_name)
        for name, public in names.items():
            if hasattr(module, name) and not changes.is_replaced(module, name):
                continue
            changes.replace_attribute(
                module,
                name,
                _public(tf, public),
                owner=Owner.TF_SLIM_NAMES,
                reason=f"tf_slim reads {module_name}.{name}, which this TensorFlow keeps as tf.{public} (for {owner})",
            )
            restored.append(f"{module_name}.{name}")
    return restored
