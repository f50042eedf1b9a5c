"""The porting report and `scan --try`'s report, for people (text) and for tools (JSON)."""

from __future__ import annotations

import json

from npu_bridge_compat.scan.report import Category, Finding, ScanReport, ScriptReport, Severity
from npu_bridge_compat.scan.trial import TrialOutcome, TrialReport

_LISTED_TF1_NAMES = 6  # per script; the JSON has them all


def render_json(report: ScanReport) -> str:
    return json.dumps(report.as_json(), indent=1, ensure_ascii=False)


def render_text(report: ScanReport) -> str:
    """Scripts with something to say (blocked first), then the totals; scripts without findings are counted."""
    listed = sorted(
        (script for script in report.scripts if script.findings), key=lambda script: (-script.status, script.path)
    )
    blocks = [_script_text(script) for script in listed]
    return "\n\n".join([*blocks, _totals_text(report)])


def _script_text(script: ScriptReport) -> str:
    lines = [f"{script.status.label:<8} {script.path}"]
    if script.world is not None and script.world.has_signs:
        flag = "run --tf1" if script.world.world == "tf1" else "run"
        lines.append(f"  {'':>5}  world: {script.world.summary(limit=2)}: {flag}")
    served = [f.name for f in script.findings if f.category is Category.ADAPTER and f.severity is Severity.READY]
    tf1 = [f for f in script.findings if f.category is Category.TENSORFLOW]
    for finding in script.findings:
        if finding in tf1 or (finding.category is Category.ADAPTER and finding.severity is Severity.READY):
            continue
        lines.append(_finding_text(finding))
    for outcome in sorted({f.outcome for f in tf1}):
        group = [f for f in tf1 if f.outcome == outcome]
        names = ", ".join(f"{f.name} (line {f.line})" for f in group[:_LISTED_TF1_NAMES])
        more = f", and {len(group) - _LISTED_TF1_NAMES} more" if len(group) > _LISTED_TF1_NAMES else ""
        severity = "" if group[0].severity is Severity.READY else f" [{group[0].severity.label}]"
        lines.append(f"  {'':>5}  TF 1.15 names, {outcome}{severity}: {names}{more}")
    if served:
        lines.append(f"  {'':>5}  adapter names served on this host: {', '.join(served)}")
    return "\n".join(lines)


def _finding_text(finding: Finding) -> str:
    subject = f"{finding.category} {finding.name}" + (f"={finding.value}" if finding.value is not None else "")
    severity = "" if finding.severity is Severity.READY else f" [{finding.severity.label}]"
    return f"  {finding.line:>5}  {subject}: {finding.outcome}{severity}: {finding.detail}"


def _totals_text(report: ScanReport) -> str:
    totals = report.totals()
    quiet = totals["scripts"] - sum(bool(script.findings) for script in report.scripts)
    lines = [
        f"{totals['scripts']} Python files on this host ({report.host}): {totals['ready']} ready, "
        f"{totals['warning']} with warnings, {totals['blocked']} blocked"
        + (f"; {quiet} without anything to port" if quiet else "")
    ]
    if totals["blocked_by"]:
        lines.append(
            "  blocked by: " + ", ".join(f"{outcome} ({count})" for outcome, count in totals["blocked_by"].items())
        )
    if totals["not_installed"]:
        lines.append(
            "  not installed here: " + ", ".join(f"{name} ({count})" for name, count in totals["not_installed"].items())
        )
    worlds = totals["worlds"]
    if worlds["tf1"] or worlds["tf2"]:
        lines.append(
            f"  worlds: TF 1.15 {worlds['tf1']} (`run` starts them with --tf1), TF2 {worlds['tf2']}; "
            f"{worlds['weighed']} of them decided by weighing their signs"
        )
    return "\n".join(lines)


_EXAMPLES = 3  # scripts named per cause in the text; the JSON has them all


def render_trial_json(report: TrialReport) -> str:
    return json.dumps(report.as_json(), indent=1, ensure_ascii=False)


def render_trial_text(report: TrialReport) -> str:
    """`scan --try` for people: per outcome (the failures first), its causes, most common first, with a few of
    their scripts; then the totals."""
    blocks = []
    groups = report.by_outcome()
    for outcome, trials in groups.items():
        if outcome is TrialOutcome.STARTED:
            continue
        lines = [f"{outcome}: {len(trials)} script{'s' * (len(trials) != 1)}"]
        for cause, group in report.by_cause(trials).items():
            named = ", ".join(trial.path + (" (--tf1)" if trial.tf1 else "") for trial in group[:_EXAMPLES])
            more = f", and {len(group) - _EXAMPLES} more" if len(group) > _EXAMPLES else ""
            lines.append(f"  {len(group):>5}  {cause}: {named}{more}")
            if len(group) == 1:
                lines.append(f"  {'':>5}    {group[0].detail}" + (f" ({group[0].where})" if group[0].where else ""))
                if group[0].command:
                    lines.append(f"  {'':>5}    launch script, started from its folder as: {group[0].command}")
        blocks.append("\n".join(lines))
    totals = report.totals()
    minutes, seconds = divmod(round(report.seconds), 60)
    launches = totals["launch_scripts"]
    summary = [
        f"{totals['scripts'] - launches} entry scripts{f' and {launches} launch scripts' if launches else ''} "
        f"tried in {minutes} min {seconds} s, {report.jobs} at a time, at most "
        f"{report.time_limit_s:g} s each ({totals['with_tf1']} with --tf1; {totals['world_weighed']} of the worlds "
        f"weighed from the signs); {report.isolation}",
        "  " + ", ".join(f"{outcome}: {len(trials)}" for outcome, trials in groups.items()),
    ]
    ended = sum(trial.ended_left_behind for trial in report.trials)
    if ended:
        summary.append(f"  processes the scripts left running, ended: {ended}")
    return "\n\n".join([*blocks, "\n".join(summary)])
