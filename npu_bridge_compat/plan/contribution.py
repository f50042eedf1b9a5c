"""What one concern's planner contributes to the host plan."""

from __future__ import annotations

import dataclasses

from npu_bridge_compat.options.spec import Effect
from npu_bridge_compat.plan.features import Feature


@dataclasses.dataclass
class Contribution:
    features: list[Feature] = dataclasses.field(default_factory=list)
    # What an option does on this host, where it differs from the table's general statement.
    entries: dict[str, tuple[Effect, str]] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)

    def say(self, key: str, effect: Effect, how: str) -> None:
        self.entries[key] = (effect, how)
