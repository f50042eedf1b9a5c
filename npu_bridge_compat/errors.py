"""The exceptions and warnings npu_bridge_compat raises on user input.

Every configuration problem is an `NpuConfigError`; the concrete classes are also a `ValueError` or a
`TypeError`, so code written against the adapter's plain exceptions keeps working.
"""

from __future__ import annotations

import difflib
import os
import sys
import warnings
from collections.abc import Iterable


class NpuConfigError(Exception):
    """Base of every error raised for an invalid NPU configuration."""


class NpuOptionValueError(NpuConfigError, ValueError):
    """An option has a value outside what the adapter allows, or two options contradict each other."""


class NpuOptionTypeError(NpuConfigError, TypeError):
    """An option was given a value of the wrong type (or in the wrong `AttrValue` field)."""


class DeviceOnlyFeatureError(NpuConfigError, RuntimeError):
    """A feature that needs an Ascend device or its runtime (RDMA pools, shared device memory, variable addresses,
    the embedding service, saturation mode): nothing on a host can stand in for it."""


def device_only(feature: str, alternative: str | None = None):
    """A stand-in for an Ascend-only function: importable, and a clear error when called, naming the host
    alternative where there is one."""
    message = f"{feature} needs Ascend hardware and its runtime; a host cannot run it."
    if alternative:
        message += f" On a host, {alternative}."

    def unavailable(*args, **kwargs):
        raise DeviceOnlyFeatureError(message)

    unavailable.__name__ = feature.rsplit(".", 1)[-1]
    unavailable.__doc__ = f"{feature}: Ascend-only; raises DeviceOnlyFeatureError on a host. {message}"
    return unavailable


def is_device_only(obj: object) -> bool:
    """Whether `obj` is a stand-in made by `device_only` (every one runs the same code object)."""
    return getattr(obj, "__code__", None) is _DEVICE_ONLY_CODE


_DEVICE_ONLY_CODE = device_only("probe").__code__


class TensorFlowVersionError(RuntimeError):
    """A door or API that the installed TensorFlow lacks (the Estimator door from TensorFlow 2.16 on); the
    message names the TensorFlow it needs and the doors that run here."""


class NonFiniteValueError(RuntimeError):
    """A numeric check (enable_dump_debug, enable_exception_dump) found Inf or NaN in an op's output."""


class NpuCompatWarning(UserWarning):
    """Base of the warnings npu_bridge_compat emits about a configuration."""


class UnknownOptionWarning(NpuCompatWarning):
    """An option name the option table lacks (a typo, most often); it is not validated and has no host effect."""


class IgnoredOptionWarning(NpuCompatWarning):
    """An option is set but has no effect, on the NPU as on this host (its prerequisite is off)."""


class UnknownOpTypeWarning(NpuCompatWarning):
    """An operator type (in an op list) that TensorFlow does not have; it is ignored on this host."""


class ConfigurationAdvice(NpuCompatWarning):
    """A configuration the adapter accepts but its documentation advises against."""


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def warn(message: str, category: type[Warning], *, libraries: tuple[str, ...] = ()) -> None:
    """Warn with the location of the user's code: the first caller outside this package (and outside the
    `libraries` directories, for a warning raised from a library's call into this package)."""
    skipped = (_PACKAGE_DIR, *libraries)
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(skipped):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def closest_name(name: str, known: Iterable[str]) -> str | None:
    """The known name nearest to `name`, for "did you mean" hints on bad input; None when none is close."""
    matches = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return matches[0] if matches else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """ " Did you mean 'x'?" for the known name nearest to `name`, or "" when none is close."""
    close = closest_name(name, known)
    return f" Did you mean '{close}'?" if close else ""
