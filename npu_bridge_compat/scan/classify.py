"""From a file's facts to its findings: adapter names, TF 1.15 names, packages, NPU configuration."""

from __future__ import annotations

import os
from typing import Any

from npu_bridge_compat import compat
from npu_bridge_compat.plan import HostFacts
from npu_bridge_compat.scan import names
from npu_bridge_compat.scan.configs import ConfigChecker, Place
from npu_bridge_compat.scan.reader import ADAPTER_ROOTS, Call, FileFacts
from npu_bridge_compat.scan.report import Category, Finding, Outcome, ScriptReport, Severity
from npu_bridge_compat.scan.tf1 import classify_tf1_name, in_tf1_namespace
from npu_bridge_compat.scan.tf26 import classify_tf26_name


class Classifier:
    """Classifies the facts of each file against this host's runtime."""

    def __init__(self, host: HostFacts) -> None:
        self.configs = ConfigChecker(host)
        self.packages = names.Packages()

    def script(self, facts: FileFacts, shown_path: str, project_root: str) -> ScriptReport:
        if facts.error is not None:
            return ScriptReport(
                shown_path,
                (
                    Finding(
                        _error_line(facts.error),
                        Category.SYNTAX,
                        shown_path,
                        Outcome.NOT_PARSED,
                        Severity.BLOCKED,
                        facts.error,
                    ),
                ),
            )
        script_dir = os.path.dirname(os.path.abspath(facts.path))
        names_found = _NameFindings()
        packages = self._imports(facts, script_dir, project_root, names_found)
        self._uses(facts, names_found)
        findings = [*packages, *names_found.findings()]
        if facts.option_sets or facts.calls or facts.tree_option_sets:
            place = Place(shown_path, _folders_up_to(script_dir, project_root))
            findings += self.configs.option_sets(facts.option_sets, place)
            findings += self.configs.tree_option_sets(facts.tree_option_sets, place)
            findings += self.configs.calls(facts.calls, [self._callee(facts, call) for call in facts.calls], place)
        findings.sort(key=lambda finding: (finding.line, finding.category, finding.name))
        return ScriptReport(shown_path, tuple(findings))

    # --- imports -------------------------------------------------------------------------------------------

    def _imports(self, facts: FileFacts, script_dir: str, project_root: str, found: _NameFindings) -> list[Finding]:
        packages: dict[str, Finding] = {}
        for imported in facts.imports:
            if imported.level:
                continue  # relative: the script's own package
            top = imported.module.split(".")[0]
            dotted = imported.module if imported.name in (None, "*") else f"{imported.module}.{imported.name}"
            if top in ADAPTER_ROOTS:
                found.adapter(dotted, imported.line, used=False, star=imported.name == "*")
            elif top == "keras" and imported.name != "*":
                found.keras(dotted, imported.line)
            elif top == "tensorflow":
                found.tensorflow([dotted], imported.line)
            elif (
                top not in packages
                and not self.packages.is_available(top)
                and not self.packages.is_local(top, script_dir, project_root, facts.search_paths)
            ):
                severity = Severity.WARNING if imported.optional else Severity.BLOCKED
                why = " (an optional import: the script catches the ImportError)" if imported.optional else ""
                packages[top] = Finding(
                    imported.line,
                    Category.PACKAGE,
                    top,
                    Outcome.NOT_INSTALLED,
                    severity,
                    f"no module named '{top}' here: not installed, and not in the script's folders{why}",
                )
        return list(packages.values())

    # --- uses of imported names ----------------------------------------------------------------------------

    def _uses(self, facts: FileFacts, found: _NameFindings) -> None:
        for (root, attributes), (line, _) in facts.uses.items():
            targets, certain = self._targets(facts, root)
            dotted = [".".join((target, *attributes)) for target in targets]
            tensorflow = [name for name in dotted if name.split(".")[0] == "tensorflow"]
            adapter = [name for name in dotted if name.split(".")[0] in ADAPTER_ROOTS]
            if tensorflow and len(tensorflow) == len(dotted):
                found.tensorflow(tensorflow, line)
            elif dotted and all(name.split(".")[0] == "keras" for name in dotted):
                found.keras(dotted[0], line)
            elif adapter:
                found.adapter(adapter[0], line, used=True, certain=certain)

    @staticmethod
    def _targets(facts: FileFacts, root: str) -> tuple[tuple[str, ...], bool]:
        """What a variable names: its imports, else the star-imported adapter module that provides it (the last
        star import providing a name wins). The flag is False when a later star import of a module the scan does
        not read may provide the name instead."""
        targets = facts.aliases.get(root)
        if targets:
            return targets, True
        certain = True
        for module in reversed(facts.star_modules):
            if module.split(".")[0] not in ADAPTER_ROOTS:
                certain = False
            elif root in names.star_names(module):
                return (f"{module}.{root}",), certain
        return (), certain

    def _callee(self, facts: FileFacts, call: Call) -> Any:
        for target in self._targets(facts, call.root)[0]:
            if target.split(".")[0] in ADAPTER_ROOTS:
                resolved = names.resolve_adapter(".".join((target, *call.attributes)))
                if resolved.missing is None and resolved.tensorflow_rest is None:
                    return resolved.obj
        return None


class _NameFindings:
    """One finding per distinct adapter or TensorFlow name of a file, at its first line."""

    def __init__(self) -> None:
        self._adapter: dict[str, tuple[int, names.Resolved, bool, bool]] = {}  # name -> (line, resolved, used, star)
        self._tensorflow: dict[str, int] = {}
        self._tf26: dict[str, tuple[int, tuple[str, Severity, str]]] = {}  # name -> (line, its classification)

    def adapter(self, dotted: str, line: int, used: bool, star: bool = False, certain: bool = True) -> None:
        """An adapter name; an uncertain one (a later star import may shadow it) is reported only if it exists."""
        resolved = names.resolve_adapter(dotted)
        if resolved.missing is not None and not certain:
            return
        if resolved.tensorflow_rest is not None:  # npu_init's `tf`: the rest is a TensorFlow name
            self.tensorflow(["tensorflow." + resolved.tensorflow_rest], line)
            return
        key = resolved.missing or resolved.name
        seen = self._adapter.get(key)
        if seen is None:
            self._adapter[key] = (line, resolved, used, star)
        else:
            self._adapter[key] = (min(seen[0], line), resolved, seen[2] or used, seen[3] or star)

    def tensorflow(self, candidates: list[str], line: int) -> None:
        """A TensorFlow name, under each name its variable may stand for (`tf` rebound to tf.compat.v1): a TF 1.15
        name when none of them exists in this TensorFlow."""
        if any(not in_tf1_namespace(name) and names.tensorflow_has(name) for name in candidates):
            return
        name = candidates[0]
        if not self.keras(name, line):
            self._tensorflow[name] = min(line, self._tensorflow.get(name, line))

    def keras(self, dotted: str, line: int) -> bool:
        """A `keras.` or `tensorflow.` name that TF 2.6 had and this line lacks as it is (the TF 2.6 world maps
        it); whether it is one."""
        classified = classify_tf26_name(dotted)
        if classified is None:
            return False
        seen = self._tf26.get(dotted)
        self._tf26[dotted] = (min(line, seen[0]) if seen else line, classified)
        return True

    def findings(self) -> list[Finding]:
        findings = [self._adapter_finding(key, *seen) for key, seen in self._adapter.items()]
        for name, line in self._tensorflow.items():
            outcome, severity, detail = classify_tf1_name(name)
            findings.append(Finding(line, Category.TENSORFLOW, name, outcome, severity, detail))
        for name, (line, (outcome, severity, detail)) in self._tf26.items():
            findings.append(Finding(line, Category.TF26, name, outcome, severity, detail))
        return findings

    @staticmethod
    def _adapter_finding(key: str, line: int, resolved: names.Resolved, used: bool, star: bool) -> Finding:
        shown = f"{key}.*" if star else key
        if resolved.missing is not None:
            hint = f"; did you mean {resolved.suggestion}?" if resolved.suggestion else ""
            return Finding(
                line,
                Category.ADAPTER,
                shown,
                Outcome.UNKNOWN,
                Severity.BLOCKED,
                f"{resolved.name} has no '{resolved.missing.rsplit('.', 1)[-1]}' under `run`: the "
                f"import or attribute fails{hint}",
                suggestion=resolved.suggestion,
            )
        if names.is_device_only(resolved.obj):
            severity = Severity.BLOCKED if used else Severity.WARNING
            when = (
                "used here: it raises DeviceOnlyFeatureError"
                if used
                else "imported only; it raises DeviceOnlyFeatureError when called"
            )
            return Finding(
                line,
                Category.ADAPTER,
                shown,
                Outcome.DEVICE_ONLY,
                severity,
                f"Ascend-only, no host equivalent ({when})",
            )
        reason = compat.unavailable_reason(resolved.obj)
        if reason is not None:
            return Finding(
                line,
                Category.ADAPTER,
                shown,
                Outcome.OTHER_TENSORFLOW,
                Severity.BLOCKED if used else Severity.WARNING,
                reason,
            )
        return Finding(
            line,
            Category.ADAPTER,
            shown,
            Outcome.TRANSLATED,
            Severity.READY,
            f"served by {names.describe_adapter(resolved.obj)}",
        )


def _folders_up_to(directory: str, root: str) -> tuple[str, ...]:
    folders = [directory]
    while directory != root and os.path.dirname(directory) != directory:
        directory = os.path.dirname(directory)
        folders.append(directory)
    return tuple(folders)


def _error_line(error: str) -> int:
    head = error.split(":", 1)[0]
    return int(head[5:]) if head.startswith("line ") and head[5:].isdigit() else 0
