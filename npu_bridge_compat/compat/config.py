"""TensorFlow's process switches whose public API only turns them on, and TF1 behaviour as one registered switch.
Checked on TensorFlow 2.15 and 2.21."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner

V2_BEHAVIOUR = "TensorFlow 2 behaviour"


def disable_op_determinism() -> None:
    """Undo `tf.config.experimental.enable_op_determinism()` (TensorFlow's own tests do it so)."""
    from tensorflow.python.framework import config

    config.disable_op_determinism()


def enable_v2_behavior_again() -> None:
    """Undo `tf.compat.v1.disable_v2_behavior()`: `enable_v2_behavior` refuses once TF1's global default graph was
    used, so that graph is let go first (graphs a program still holds stay usable); and it swaps the function
    `context.context` for its twin `context_safe`, which is put back."""
    import tensorflow as tf
    from tensorflow.python.eager import context
    from tensorflow.python.framework import ops

    context_function = context.context
    ops._default_graph_stack._global_default_graph = None
    tf.compat.v1.enable_v2_behavior()
    context.context = context_function


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


def disable_v2_behaviour(owner: Owner, reason: str) -> changes.Change:
    """TF1 behaviour from now on (`tf.compat.v1.disable_v2_behavior()`: graphs and sessions, v1 control flow and
    variables), through the changes registry: the TF 1.15 world and the TF2 adapter's `enable_v1` ask for this one
    switch, so it has an owner of its own (TF1_BEHAVIOUR) and the reason names the part that asked first
    (`owner`); undoing it gives TF2 behaviour back."""
    return changes.enter(
        _tf1_behaviour(), V2_BEHAVIOUR, owner=Owner.TF1_BEHAVIOUR, reason=f"{reason} (for {owner})", value=False
    )


@contextlib.contextmanager
def _tf1_behaviour() -> Iterator[None]:
    import tensorflow as tf

    tensorflow_logger = logging.getLogger("tensorflow")
    level = tensorflow_logger.level
    tensorflow_logger.setLevel(logging.ERROR)  # its "non-resource variables are not supported" is our own doing
    try:
        tf.compat.v1.disable_v2_behavior()
    finally:
        tensorflow_logger.setLevel(level)
    yield
    enable_v2_behavior_again()
