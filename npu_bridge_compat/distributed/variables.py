"""Reading the job's environment variables: integers with errors that name the variable, and the error type of
every rank environment that cannot describe a job."""

from __future__ import annotations

import os
from collections.abc import Mapping

from npu_bridge_compat.errors import NpuConfigError


class RankConfigError(NpuConfigError, ValueError):
    """The rank environment (RANK_ID, RANK_SIZE, device ids, CM_*, rank table, a scheduler's variables) is
    inconsistent."""


def integer(name: str, minimum: int = 0, environment: Mapping[str, str] | None = None) -> int | None:
    """The integer value of environment variable `name`, None when it is unset or empty."""
    value = (os.environ if environment is None else environment).get(name, "").strip()
    if not value:
        return None
    try:
        number = int(value)
    except ValueError:
        raise RankConfigError(f"{name} is invalid, should be int, such as 0, 1, 2 (got {name}={value!r})") from None
    if number < minimum:
        raise RankConfigError(f"{name} should be >= {minimum} (got {name}={value!r})")
    return number
