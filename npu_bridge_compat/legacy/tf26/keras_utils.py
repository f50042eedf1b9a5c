"""Keras 2.6 utilities that later Keras removed and ported layers still call."""

from __future__ import annotations

from typing import Any


def object_list_uid(objects: Any) -> str:
    """A key naming a (nested) list of objects by identity, as Keras 2.6's generic_utils.object_list_uid gave
    custom layers for caching per input."""
    import tensorflow as tf

    return ", ".join(str(abs(id(item))) for item in tf.nest.flatten(objects))
