"""TensorFlow's process switches whose public API only turns them on. Checked on TensorFlow 2.15 and 2.21."""

from __future__ import annotations


def disable_op_determinism() -> None:
    """Undo `tf.config.experimental.enable_op_determinism()` (TensorFlow's own tests do it so)."""
    from tensorflow.python.framework import config

    config.disable_op_determinism()


def enable_v2_behavior_again() -> None:
    """Undo `tf.compat.v1.disable_v2_behavior()`: `enable_v2_behavior` refuses once TF1's global default graph was
    used, so that graph is let go first (graphs a program still holds stay usable)."""
    import tensorflow as tf
    from tensorflow.python.framework import ops

    ops._default_graph_stack._global_default_graph = None
    tf.compat.v1.enable_v2_behavior()


def op_determinism_enabled() -> bool:
    """Whether `tf.config.experimental.enable_op_determinism()` is in force (no public reader)."""
    from tensorflow.python.framework import config

    return config.is_op_determinism_enabled()


def set_op_determinism(enabled: bool) -> None:
    """Turn op determinism on or off."""
    import tensorflow as tf

    if enabled:
        tf.config.experimental.enable_op_determinism()
    else:
        disable_op_determinism()
