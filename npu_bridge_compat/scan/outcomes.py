"""What a name's status in a world (imports/world.py's `Status`) means in `scan`'s report: one table for every world,
said with the command that serves the world (`run`, or `run --tf1`)."""

from __future__ import annotations

from npu_bridge_compat.imports.world import Status
from npu_bridge_compat.scan.report import Severity

RUN, RUN_TF1 = "run", "run --tf1"

OUTCOMES = {
    Status.WORKS: ("works under {run}", Severity.READY),
    Status.DIFFERS: ("differs under {run}", Severity.WARNING),  # its counterpart, with a warning at the program's line
    Status.MISSING: ("missing under {run}", Severity.BLOCKED),  # imports; raises when used, naming what replaces it
    Status.UNKNOWN: ("needs {run}", Severity.WARNING),  # a name only that world has, which its table does not map
}
FINDINGS = (Status.WORKS, Status.DIFFERS, Status.MISSING)  # the statuses of a name the world serves


def outcome(status: Status, run: str) -> tuple[str, Severity]:
    """(the finding's outcome, its severity) of a name with `status` in the world `run` serves."""
    text, severity = OUTCOMES[status]
    return text.format(run=run), severity
