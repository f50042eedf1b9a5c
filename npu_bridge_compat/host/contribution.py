"""What one concern's planner contributes to the host plan."""

from __future__ import annotations

import dataclasses
from typing import Any

from npu_bridge_compat.host.features import Feature
from npu_bridge_compat.options.spec import Effect


@dataclasses.dataclass
class Contribution:
    config: dict[str, Any] = dataclasses.field(default_factory=dict)  # dotted ConfigProto field -> value
    environment: dict[str, str] = dataclasses.field(default_factory=dict)
    features: list[Feature] = dataclasses.field(default_factory=list)
    # What an option does on this host, where it differs from the table's general statement.
    entries: dict[str, tuple[Effect, str]] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)

    def say(self, key: str, effect: Effect, how: str) -> None:
        self.entries[key] = (effect, how)
