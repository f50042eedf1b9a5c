"""The translation report: for every option a configuration set, what it does on this host.

It is plain data (tools and tests read `entries`), prints as a readable table, and is logged once per distinct
configuration through absl logging (printed as a block on stderr where logging would not show it; see logs.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.logs import log_report
from npu_bridge_compat.options.spec import Concern, Effect

IGNORED = "ignored, as on the NPU"  # the effect label of an option whose prerequisite is off

_SECTION_ORDER = (
    Effect.TRANSLATED.value,
    Effect.APPROXIMATED.value,
    Effect.NOT_NEEDED.value,
    Effect.NO_EQUIVALENT.value,
    IGNORED,
)


@dataclasses.dataclass(frozen=True)
class ReportEntry:
    key: str
    value: Any
    concern: Concern
    effect: str  # an Effect value, or IGNORED
    how: str


@dataclasses.dataclass(frozen=True)
class Report:
    source: str
    host: str
    entries: tuple[ReportEntry, ...]
    notes: tuple[str, ...] = ()
    names: Mapping[str, str] = dataclasses.field(default_factory=dict)  # key -> the name the configuration used

    def entry(self, key: str) -> ReportEntry:
        for entry in self.entries:
            if entry.key == key:
                return entry
        raise KeyError(f"the report has no entry for {key!r} (it lists only the options that were set)")

    def __str__(self) -> str:
        lines = [f"NPU options from {self.source}, on this host ({self.host}):"]
        if not self.entries:
            lines.append("  no NPU option is set; TensorFlow runs with its own defaults")
        for section in _SECTION_ORDER:
            entries = [e for e in self.entries if e.effect == section]
            if entries:
                lines.append(f"  {section}:")
                shown = [f"{self.names.get(e.key, e.key)}={e.value!r}" for e in entries]
                width = max(map(len, shown))
                lines.extend(f"    {text:<{width}}  {e.how}" for text, e in zip(shown, entries))
        if self.notes:
            lines.append("  notes:")
            lines.extend(f"    - {note}" for note in self.notes)
        return "\n".join(lines)


LOGGED_REPORTS = changes.ProcessState("the translation reports logged", Owner.LOGGING, set)


def log_once(report: Report) -> bool:
    """Log the report unless this process already logged the same one; return whether it was logged."""
    text = str(report)
    logged = changes.state(LOGGED_REPORTS)
    if text in logged:
        return False
    logged.add(text)
    log_report(text)
    return True
