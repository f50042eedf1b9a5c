"""The ports' NumPy and Python names: what a name that ported programs, written for NumPy < 1.24 and Python 3.7,
use and today's NumPy or Python removed (`np.float`, `np.NaN`, `collections.Iterable`, `import imp`,
`time.clock`, `inspect.getargspec`) becomes under `run`, which serves them in both worlds; and absl-py < 2.0's
str `enum_values`, which `run` serves too.

Answered by `npu_bridge_compat.legacy.era.era_name_status`, from the table that serves them at run time: a name
this NumPy or Python still has is no finding (so `import imp` is one on Python 3.12, not on 3.11), nor is one the
table does not know.
"""

from __future__ import annotations

from typing import NamedTuple

from npu_bridge_compat.imports.world import NameStatus, Status
from npu_bridge_compat.legacy.era import ERA, era_name_status
from npu_bridge_compat.legacy.era.absl_flags import STR_ENUM_VALUES, refuses_str_enum_values
from npu_bridge_compat.scan.outcomes import FINDINGS, RUN, outcome
from npu_bridge_compat.scan.report import Category, Finding, Severity

ROOTS = ERA.roots  # the modules whose names the era's table knows (numpy, collections, time, inspect, imp, ...)
SERVED_MODULES = tuple(ERA.modules)  # the modules the era world serves where this Python has none (imp, distutils)


def is_served_module(module: str) -> bool:
    """Whether `module` is (in) one the era world serves where this Python has none: a Python name, not a package."""
    return ERA.in_tree(module, SERVED_MODULES)


def era_category(dotted: str) -> Category | None:
    """The category of a name of the era's modules: NumPy's, or Python's; None for a name of any other module."""
    if not ERA.in_tree(dotted, ROOTS):
        return None
    return Category.NUMPY if dotted.split(".")[0] == "numpy" else Category.PYTHON


def _in_the_table(dotted: str) -> bool:
    """Whether the era's table can know `dotted`: a name under a module the era serves, or one it fills into
    today's module (`numpy.float`). Any other name of numpy, collections, time or inspect is today's or nobody's,
    and is not looked up: that would import whatever module of NumPy the scanned code names."""
    if ERA.in_tree(dotted, SERVED_MODULES):
        return True
    for key, spec in ERA.filled.items():
        if dotted.startswith(key + "."):
            name = dotted[len(key) + 1 :].partition(".")[0]
            return name in spec.names or name in spec.missing
    return False


def era_finding(status: NameStatus) -> tuple[str, Severity, str] | None:
    """(outcome, severity, detail) of a name of the era with this status; None for a name this NumPy or Python
    has as it is, or one the table does not map."""
    if status.status not in FINDINGS:
        return None
    return *outcome(status.status, RUN), status.detail


class EraName(NamedTuple):
    name: str  # the part of the dotted name the era's table answers for (`numpy.float` of `np.float.__name__`)
    category: Category
    outcome: str
    severity: Severity
    detail: str


def classify_era_name(dotted: str) -> EraName | None:
    """The NumPy or Python name of the era in `dotted` that this host lacks, and what it becomes under `run`: the
    shortest part served by a counterpart or without one (`imp.load_source`, not `imp`), else the shortest served
    as it was (`imp` on Python 3.12); None when this host has it all, or the table does not know it."""
    category = era_category(dotted)
    if category is None or not _in_the_table(dotted):
        return None
    parts = dotted.split(".")
    served = None
    for cut in range(1, len(parts) + 1):
        name = ".".join(parts[:cut])
        if not ERA.in_tree(name, ROOTS):
            continue  # `xml` and `xml.etree` of `xml.etree.cElementTree`
        status = era_name_status(name)
        if status.status is Status.CURRENT and name in SERVED_MODULES:
            break  # this Python has the module (imp on 3.11): all under it is its own
        if status.status in (Status.DIFFERS, Status.MISSING):
            return EraName(name, category, *era_finding(status))
        if status.status is Status.WORKS:
            served = served or EraName(name, category, *era_finding(status))
        elif status.status is Status.UNKNOWN:
            break
    return served


def str_enum_values_findings(lines: tuple[int, ...]) -> list[Finding]:
    """The `DEFINE_enum` calls at `lines` given a str as `enum_values`, where this absl-py refuses one: served
    under `run` as absl-py < 2.0 took it (a Python-era finding, as the era's names)."""
    if not lines or not refuses_str_enum_values():
        return []
    said, severity = outcome(Status.DIFFERS, RUN)
    return [Finding(line, Category.PYTHON, "absl.flags.DEFINE_enum", said, severity, STR_ENUM_VALUES) for line in lines]
