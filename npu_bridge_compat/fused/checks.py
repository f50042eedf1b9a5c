"""Argument checks the fused ops share, with the adapter's wording where it has one."""

from __future__ import annotations

import numbers

import tensorflow as tf

from npu_bridge_compat.errors import NpuOptionTypeError, NpuOptionValueError


def graph_mode_only(api: str) -> None:
    """The adapter builds these ops only into graphs (a TF1 graph or a tf.function); so does the host."""
    if tf.executing_eagerly():
        raise RuntimeError(f"tf.{api}() is not compatible with eager execution.")


def check_keep_prob(keep_prob) -> None:
    if isinstance(keep_prob, numbers.Real) and not 0 < keep_prob <= 1.0:
        raise NpuOptionValueError(
            f"keep_prob must be a float value or a scalar tensor in the range (0, 1], got {keep_prob:g}"
        )


def check_choice(argument: str, value, allowed: tuple, why: str = "") -> None:
    if value not in allowed:
        choices = " or ".join(repr(choice) for choice in allowed)
        raise NpuOptionValueError(f"{argument} must be {choices}{why}, got {value!r}")


def check_int(argument: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise NpuOptionValueError(f"{argument} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_int_list(argument: str, value, length: int, minimum: int) -> list[int]:
    if not isinstance(value, (list, tuple)) or len(value) != length:
        raise NpuOptionValueError(f"{argument} must be a list of {length} integers, got {value!r}")
    return [check_int(f"{argument}[{index}]", item, minimum) for index, item in enumerate(value)]


def variables(api: str, **arguments) -> list[tf.Variable]:
    """The arguments an `*_assign` kernel writes its results into: they must be variables, as on the NPU, where the
    kernel updates them in place."""
    wrong = [
        f"{name} ({type(value).__name__})" for name, value in arguments.items() if not isinstance(value, tf.Variable)
    ]
    if wrong:
        raise NpuOptionTypeError(
            f"{api} writes its results into {', '.join(arguments)}: pass the variables "
            f"themselves, not tensors; got {', '.join(wrong)}"
        )
    return list(arguments.values())
