"""absl-py of the ports' era: before 2.0, `DEFINE_enum` took a str as `enum_values` and kept it as given, so a
value was accepted when it was part of that string. The flags of TensorFlow's official models, copied into many
ModelZoo folders (ResNet, BERT, Transformer, NCF, ...), pass one (`enum_values=("keras', 'graph_rewrite")`), which
absl-py 2.0 refuses while the script defines its flags. Served as absl-py < 2.0 did, warning once at the line that
defined the flag."""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Callable
from typing import Any

from npu_bridge_compat.errors import warn

STR_ENUM_VALUES = (
    "absl-py 2.0 refuses a str as enum_values; absl-py < 2.0 kept it as given, accepting a value that is part of "
    "the string: served so"
)


@functools.cache
def refuses_str_enum_values() -> bool:
    """Whether the installed absl-py refuses a str as `enum_values` (2.0 and later); False without absl."""
    if importlib.util.find_spec("absl") is None:
        return False
    from absl import flags

    try:
        flags.EnumParser("keras")
    except ValueError:
        return True
    return False


def _library_directories() -> tuple[str, ...]:
    """absl's and TensorFlow's directories: `tf.compat.v1.flags` wraps absl's define functions, and the warning
    belongs to the program's line that called either."""
    directories = []
    for name in ("absl", "tensorflow"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            directories.append(os.path.dirname(spec.origin))
    return tuple(directories)


def str_enum_values_init(
    original: Callable[..., None], on_first_use: Callable[[], bool], warning: type[Warning]
) -> Callable[..., None]:
    """`EnumParser.__init__` as absl-py < 2.0 had it for a str `enum_values`; any other value goes to `original`.
    `on_first_use()` says whether to warn, with `warning` (True once per process)."""

    def __init__(self: Any, enum_values: Any, *args: Any, **kwargs: Any) -> None:
        if not isinstance(enum_values, str) or not enum_values:
            original(self, enum_values, *args, **kwargs)
            return
        if on_first_use():
            warn(
                f"enum_values={enum_values!r} of absl.flags.DEFINE_enum: {STR_ENUM_VALUES}.",
                warning,
                libraries=_library_directories(),
            )
        original(self, [enum_values], *args, **kwargs)
        self.enum_values = enum_values  # as given: `value in enum_values` is a substring test, as it was

    return __init__
