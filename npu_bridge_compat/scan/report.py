"""The porting report: findings per script, each script's status, and the totals over a tree.

Plain data: the text and JSON renderers, `--fail-on` and tools all read these objects.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
from collections.abc import Iterable
from typing import TYPE_CHECKING

from npu_bridge_compat.options.spec import Effect
from npu_bridge_compat.plan.report import IGNORED

if TYPE_CHECKING:
    from npu_bridge_compat.scan.run_decision import Sign, WorldDecision


class Severity(enum.IntEnum):
    """What a finding means for running the script under `python -m npu_bridge_compat run`."""

    READY = 0  # runs, and does what the NPU did or its host equivalent
    WARNING = 1  # runs, but something is dropped, guessed or needs a flag: read it
    BLOCKED = 2  # stops with an error

    @property
    def label(self) -> str:
        return self.name.lower()


class Category(enum.StrEnum):
    ADAPTER = "adapter name"  # npu_bridge.*, hccl.*, npu_bridge_compat.*
    OPTION = "NPU option"
    ARGUMENT = "argument"  # a keyword of NPURunConfig or a holder that is not an NPU option
    TENSORFLOW = "TF 1.15 name"
    TF26 = "TF 2.6 name"  # TensorFlow 2.6 / Keras 2.6 names that `run` maps for TF2 programs
    KERAS2 = "Keras 2.2 name"  # the standalone Keras 2.2 / 2.3 beside TensorFlow 1.15, which `run --tf1` maps
    # names of the ports' era that today's NumPy (1.24 and 2.0's removals alike: NumPy < 1.24 had them all) and
    # Python removed, which `run` serves in both worlds (era.py)
    NUMPY = "NumPy < 1.24 name"
    PYTHON = "Python 3.7 name"
    MODELARTS = "ModelArts name"  # moxing, ModelArts' file library, which `run` serves in both worlds
    OBJECT_URL = "object URL"  # an obs:// or s3:// literal, and where it goes on this host
    PACKAGE = "package"
    SYNTAX = "syntax"


class Outcome(enum.StrEnum):
    """What a finding becomes on this host. Options use the option table's effects (and the report's IGNORED);
    TF 1.15 names use the outcomes of `tf1.py`."""

    TRANSLATED = Effect.TRANSLATED.value
    APPROXIMATED = Effect.APPROXIMATED.value
    NOT_NEEDED = Effect.NOT_NEEDED.value
    NO_EQUIVALENT = Effect.NO_EQUIVALENT.value
    IGNORED = IGNORED
    DEVICE_ONLY = "device-only"
    OTHER_TENSORFLOW = "needs another TensorFlow"  # the Estimator door on TensorFlow 2.16 and later
    UNKNOWN = "unknown"
    INVALID = "invalid"
    NOT_INSTALLED = "not installed"
    NOT_PARSED = "does not parse"
    AT_RUN_TIME = "checked at run time"  # the name or value is computed; `run` checks it


@dataclasses.dataclass(frozen=True)
class Finding:
    line: int
    category: Category
    name: str  # dotted name, option key, keyword or package
    outcome: str  # an Outcome value, or a TF 1.15 outcome
    severity: Severity
    detail: str  # what it becomes on the host, the error, or why
    value: str | None = None  # repr of a literal value; None when it is not a literal
    suggestion: str | None = None  # the closest known name, for an unknown one

    def as_json(self) -> dict:
        return {
            "line": self.line,
            "category": self.category.value,
            "name": self.name,
            "value": self.value,
            "outcome": self.outcome,
            "severity": self.severity.label,
            "detail": self.detail,
            "suggestion": self.suggestion,
        }


@dataclasses.dataclass(frozen=True)
class ScriptReport:
    path: str
    findings: tuple[Finding, ...]
    signs: tuple[Sign, ...] = ()  # of the world this file was written for (world.py)
    world: WorldDecision | None = None  # decided from its signs and those of the project modules it imports

    @property
    def status(self) -> Severity:
        return max((finding.severity for finding in self.findings), default=Severity.READY)

    @property
    def world_name(self) -> str | None:
        return self.world.world if self.world is not None else None

    def blockers(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.severity is Severity.BLOCKED]

    def as_json(self) -> dict:
        return {
            "path": self.path,
            "status": self.status.label,
            "world": self.world.as_json() if self.world is not None else None,
            "findings": [finding.as_json() for finding in self.findings],
        }


@dataclasses.dataclass(frozen=True)
class ScanReport:
    paths: tuple[str, ...]
    host: str
    scripts: tuple[ScriptReport, ...]

    def count(self, status: Severity) -> int:
        return sum(script.status is status for script in self.scripts)

    def blocked_by(self) -> dict[str, int]:
        """Blocked scripts per outcome of their blocking findings (a script counts once per outcome)."""
        return _by_count(
            outcome for script in self.scripts for outcome in {finding.outcome for finding in script.blockers()}
        )

    def missing_packages(self) -> dict[str, int]:
        """Scripts per third-party package that is not installed here (required or optional)."""
        return _by_count(
            name
            for script in self.scripts
            for name in {f.name for f in script.findings if f.outcome == Outcome.NOT_INSTALLED}
        )

    def worlds(self) -> dict[str, int]:
        """Scripts per world (tf1, tf2) among those with signs of one, and how many of them were weighed."""
        decided = [script.world for script in self.scripts if script.world is not None and script.world.has_signs]
        counts = collections.Counter(decision.world for decision in decided)
        return {"tf1": counts["tf1"], "tf2": counts["tf2"], "weighed": sum(d.guessed for d in decided)}

    def totals(self) -> dict:
        return {
            "scripts": len(self.scripts),
            "ready": self.count(Severity.READY),
            "warning": self.count(Severity.WARNING),
            "blocked": self.count(Severity.BLOCKED),
            "worlds": self.worlds(),
            "blocked_by": self.blocked_by(),
            "not_installed": self.missing_packages(),
        }

    def as_json(self) -> dict:
        return {
            "schema": "npu_bridge_compat.scan/2",
            "paths": list(self.paths),
            "host": self.host,
            "totals": self.totals(),
            "scripts": [script.as_json() for script in self.scripts],
        }


def _by_count(items: Iterable[str]) -> dict[str, int]:
    """Occurrences per item, most frequent first (ties by name)."""
    counts = collections.Counter(map(str, items))
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
