"""`scan`: a porting report for a whole code base, read statically (no scanned file is ever executed).

    report = scan(["models/"])             # every .py file, recursively
    print(render_text(report))             # per script: what each adapter name, NPU option and import becomes
    report.totals()                        # ready / with warnings / blocked, and by what

reader.py turns syntax into facts (worker processes, no TensorFlow); classify.py, names.py, configs.py, tf1.py,
tf26.py and era.py give each fact its meaning through the runtime's own option table, readers, rules, host plan,
alias tree and worlds' tables; report.py is the model, render.py its text and JSON.

`scan --try` (trial.py, trial_child.py) starts the entry scripts instead: which would not start here, and why.
"""

from npu_bridge_compat.scan.render import render_json, render_text, render_trial_json, render_trial_text
from npu_bridge_compat.scan.report import Category, Finding, Outcome, ScanReport, ScriptReport, Severity
from npu_bridge_compat.scan.scanner import ScanPathError, scan

__all__ = [
    "Category",
    "Finding",
    "Outcome",
    "ScanPathError",
    "ScanReport",
    "ScriptReport",
    "Severity",
    "render_json",
    "render_text",
    "render_trial_json",
    "render_trial_text",
    "scan",
]
