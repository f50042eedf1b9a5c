"""TensorFlow's version and what differs between the lines this package runs on (helpers the other compat
modules share). Checked on TensorFlow 2.15 and 2.21."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from typing import Any

from npu_bridge_compat.errors import TensorFlowVersionError

ESTIMATOR_TENSORFLOW = "2.15"  # the last TensorFlow with tf.estimator


def version_tuple(version: str) -> tuple[int, int]:
    """(major, minor) of a version string such as "2.21.0" or "2.16.0rc1"."""
    major, minor = (version.split(".") + ["0"])[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


def distribution_version(name: str) -> str | None:
    """The installed distribution `name`'s version, read without importing it; None when it is not installed."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def tensorflow_version() -> str:
    import tensorflow as tf

    return tf.__version__


def _stand_in(name: str, message: Callable[[str], str]) -> type:
    """A class that others derive from in place of one this TensorFlow lacks: importing works, constructing any
    subclass raises TensorFlowVersionError(message(its name))."""

    def __new__(cls, *args, **kwargs):
        raise TensorFlowVersionError(message(cls.__name__))

    return type(
        name,
        (),
        {"__new__": __new__, "__module__": "npu_bridge_compat.compat", "_unavailable_because": staticmethod(message)},
    )


def unavailable_reason(obj: Any) -> str | None:
    """Why `obj`, a class built on a stand-in (see `_stand_in`), cannot be used with this TensorFlow; None for
    anything that can."""
    because = getattr(obj, "_unavailable_because", None) if isinstance(obj, type) else None
    return because(obj.__name__) if because is not None else None


def is_repeated(field) -> bool:
    """Whether a protobuf field is repeated (protobuf 7, which TensorFlow 2.21 uses, has no `label`)."""
    return field.is_repeated if hasattr(field, "is_repeated") else field.label == field.LABEL_REPEATED
