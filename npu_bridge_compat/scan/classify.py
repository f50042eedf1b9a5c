"""From a file's facts to its findings: adapter names, TF 1.15 and TF 2.6 names, the NumPy and Python names of the
ports' era, packages, NPU configuration."""

from __future__ import annotations

import functools
import os
from typing import Any

from npu_bridge_compat import compat
from npu_bridge_compat.imports.world import Status
from npu_bridge_compat.legacy.modelarts import MODELARTS, STORAGE
from npu_bridge_compat.legacy.modelarts.storage import ObjectStorageError
from npu_bridge_compat.plan import HostFacts
from npu_bridge_compat.scan import names, outcomes
from npu_bridge_compat.scan.configs import ConfigChecker, Place
from npu_bridge_compat.scan.era import (
    EraName,
    classify_era_name,
    era_category,
    is_served_module,
    str_enum_values_findings,
)
from npu_bridge_compat.scan.reader import ADAPTER_ROOTS, AT_IMPORT, IN_FUNCTION, Call, FileFacts, read_file
from npu_bridge_compat.scan.report import Category, Finding, Outcome, ScriptReport, Severity
from npu_bridge_compat.scan.run_decision import (
    ProgramFile,
    Sign,
    WorldDecision,
    adapter_sign,
    decide,
    local_modules,
    reached_files,
    tensorflow_signs,
)
from npu_bridge_compat.scan.tf1 import classify_tf1_name, in_tf1_namespace
from npu_bridge_compat.scan.tf26 import classify_keras2_name, classify_tf26_name


def _is_private_keras(dotted: str) -> bool:
    """A name under `tensorflow.python.keras` (TF 2.6's tf.keras) in the scanned code."""
    return dotted.split(".")[:3] == ["tensorflow", "python", "keras"]


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
        _names(facts, names_found)
        findings = [
            *self._packages(facts, script_dir, project_root),
            *names_found.findings(),
            *str_enum_values_findings(facts.str_enum_values),
            *object_url_findings(facts.object_urls),
        ]
        if facts.option_sets or facts.calls or facts.tree_option_sets:
            place = Place(shown_path, _folders_up_to(script_dir, project_root))
            findings += self.configs.option_sets(facts.option_sets, place)
            findings += self.configs.tree_option_sets(facts.tree_option_sets, place)
            findings += self.configs.calls(facts.calls, [self._callee(facts, call) for call in facts.calls], place)
        findings.sort(key=lambda finding: (finding.line, finding.category, finding.name))
        return ScriptReport(shown_path, tuple(findings), names_found.world_signs(facts))

    # --- imports of packages ------------------------------------------------------------------------------

    def _packages(self, facts: FileFacts, script_dir: str, project_root: str) -> list[Finding]:
        packages: dict[str, Finding] = {}
        for imported in facts.imports:
            served = is_served_module(imported.module) or MODELARTS.in_tree(imported.module, MODELARTS.roots)
            if imported.level or served:
                continue  # relative: the script's own package; imp, distutils, moxing: their names say what they become
            top = imported.module.split(".")[0]
            if (
                top not in _NAMED_ROOTS
                and top not in packages
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

    def _callee(self, facts: FileFacts, call: Call) -> Any:
        for target in _targets(facts, call.root)[0]:
            if target.split(".")[0] in ADAPTER_ROOTS:
                resolved = names.resolve_adapter(".".join((target, *call.attributes)))
                if resolved.missing is None and resolved.tensorflow_rest is None:
                    return resolved.obj
        return None


_NAMED_ROOTS = ADAPTER_ROOTS | {"keras", "tensorflow"}  # imports whose names are classified one by one


def file_signs(facts: FileFacts) -> tuple[Sign, ...]:
    """The signs of the world a file was written for (world.py), found as `scan` finds its names but without
    classifying them for the report; `tensorflow.python.keras` is never looked up (nor imported)."""
    if facts.error is not None:
        return ()
    found = _NameFindings(report=False)
    _names(facts, found)
    return found.world_signs(facts)


def _names(facts: FileFacts, found: _NameFindings) -> None:
    """Every adapter, Keras, TensorFlow and NumPy / Python era name a file imports or uses, into `found`."""
    for imported in facts.imports:
        if imported.level:
            continue
        top = imported.module.split(".")[0]
        dotted = imported.module if imported.name in (None, "*") else f"{imported.module}.{imported.name}"
        if top in ADAPTER_ROOTS:
            found.adapter(dotted, imported.line, used=False, star=imported.name == "*", place=imported.place)
        elif top == "keras" and imported.name != "*":
            found.keras(dotted, imported.line, imported.place)
        elif top == "tensorflow":
            found.tensorflow([dotted], imported.line, imported.place)
        elif top in MODELARTS.roots:
            found.modelarts(dotted, imported.line)
        elif era_category(dotted) is not None:
            found.era(dotted, imported.line)
    for (root, attributes), (line, _, place) in facts.uses.items():
        targets, certain = _targets(facts, root)
        dotted = [".".join((target, *attributes)) for target in targets]
        tensorflow = [name for name in dotted if name.split(".")[0] == "tensorflow"]
        adapter = [name for name in dotted if name.split(".")[0] in ADAPTER_ROOTS]
        if tensorflow and len(tensorflow) == len(dotted):
            found.tensorflow(tensorflow, line, place)
        elif dotted and all(name.split(".")[0] == "keras" for name in dotted):
            found.keras(dotted[0], line, place)
        elif adapter:
            found.adapter(adapter[0], line, used=True, certain=certain, place=place)
        elif dotted and all(name.split(".")[0] in MODELARTS.roots for name in dotted):
            found.modelarts(dotted[0], line)
        elif dotted and all(era_category(name) is not None for name in dotted):
            found.era(dotted[0], line)


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


class _NameFindings:
    """One finding per distinct adapter or TensorFlow name of a file, at its first line, and the signs of the
    world the file was written for (`report=False`: the signs only)."""

    def __init__(self, report: bool = True) -> None:
        self._report = report
        self._adapter: dict[str, tuple[int, names.Resolved, bool, bool]] = {}  # name -> (line, resolved, used, star)
        self._tensorflow: dict[str, int] = {}
        self._tf26: dict[str, tuple[int, tuple[str, Severity, str]]] = {}  # name -> (line, its classification)
        self._keras2: dict[str, tuple[int, tuple[str, Severity, str]]] = {}  # (alike)
        self._era: dict[str, tuple[int, EraName]] = {}  # name -> (line, its classification)
        self._modelarts: dict[str, int] = {}  # moxing name -> first line
        self._signs: list[Sign] = []

    def adapter(
        self, dotted: str, line: int, used: bool, star: bool = False, certain: bool = True, place: int = AT_IMPORT
    ) -> None:
        """An adapter name; an uncertain one (a later star import may shadow it) is reported only if it exists."""
        resolved = names.resolve_adapter(dotted)
        if resolved.missing is not None and not certain:
            return
        if resolved.tensorflow_rest is not None:  # npu_init's `tf`: the rest is a TensorFlow name
            self.tensorflow(["tensorflow." + resolved.tensorflow_rest], line, place)
            return
        sign = adapter_sign(dotted, line, place)
        if sign is not None:
            self._signs.append(sign)
        key = resolved.missing or resolved.name
        seen = self._adapter.get(key)
        if seen is None:
            self._adapter[key] = (line, resolved, used, star)
        else:
            self._adapter[key] = (min(seen[0], line), resolved, seen[2] or used, seen[3] or star)

    def tensorflow(self, candidates: list[str], line: int, place: int = AT_IMPORT) -> None:
        """A TensorFlow name, under each name its variable may stand for (`tf` rebound to tf.compat.v1): a TF 1.15
        name when none of them exists in this TensorFlow. `tensorflow.python.keras` is the Keras 2 of this line
        in both worlds: a TF 2.6 name where the TF 2.6 world maps it, never a TF 1.15 one."""
        name = candidates[0]
        if _is_private_keras(name):
            if self._report:
                self.keras(name, line, place)
            return
        if any(not in_tf1_namespace(name) and names.tensorflow_has(name) for name in candidates):
            self._signs.extend(tensorflow_signs(candidates, line, place))
        elif not self.keras(name, line, place):  # (a TF 2.6 name is a sign of its own)
            self._signs.extend(tensorflow_signs(candidates, line, place))
            self._tensorflow[name] = min(line, self._tensorflow.get(name, line))

    def keras(self, dotted: str, line: int, place: int = AT_IMPORT) -> bool:
        """A `keras.` or `tensorflow.` name that TF 2.6 had and this line lacks as it is (the TF 2.6 world maps
        it); whether it is one."""
        classified = classify_tf26_name(dotted)
        # standalone Keras 2.2's, as `run --tf1` serves it: no sign of either world, so read for the report alone (it
        # imports Keras, which `run` deciding a program's world must not do before the world serves `keras`)
        keras2 = classify_keras2_name(dotted) if self._report else None
        if keras2 is not None:
            seen = self._keras2.get(dotted)
            self._keras2[dotted] = (min(line, seen[0]) if seen else line, keras2)
        if classified is None:
            return False
        seen = self._tf26.get(dotted)
        self._tf26[dotted] = (min(line, seen[0]) if seen else line, classified)
        if dotted.split(".")[:2] != ["tensorflow", "python"]:  # private modules TF 1.15 had too: no sign
            self._signs.append(Sign("TF 2.6 name", dotted.replace("tensorflow.", "tf.", 1), line, place))
        return True

    def era(self, dotted: str, line: int) -> None:
        """A NumPy or Python name of the ports' era that this host lacks (no sign of a TensorFlow world)."""
        if not self._report:
            return
        classified = classify_era_name(dotted)
        if classified is not None:
            seen = self._era.get(classified.name)
            self._era[classified.name] = (min(line, seen[0]) if seen else line, classified)

    def modelarts(self, dotted: str, line: int) -> None:
        """A name of ModelArts' moxing, which `run` serves in both worlds (no sign of either)."""
        if self._report:
            self._modelarts[dotted] = min(line, self._modelarts.get(dotted, line))

    def world_signs(self, facts: FileFacts) -> tuple[Sign, ...]:
        """The file's signs of its world, NPU options written into a session config included."""
        options = [
            Sign("session config", f"{opt.base}.parameter_map", opt.line, IN_FUNCTION if opt.scope else AT_IMPORT)
            for opt in facts.option_sets
        ]
        return tuple(sorted([*self._signs, *options], key=lambda sign: sign.line))

    def findings(self) -> list[Finding]:
        findings = [self._adapter_finding(key, *seen) for key, seen in self._adapter.items()]
        for name, line in self._tensorflow.items():
            outcome, severity, detail = classify_tf1_name(name)
            findings.append(Finding(line, Category.TENSORFLOW, name, outcome, severity, detail))
        for name, (line, (outcome, severity, detail)) in self._tf26.items():
            findings.append(Finding(line, Category.TF26, name, outcome, severity, detail))
        for name, (line, (outcome, severity, detail)) in self._keras2.items():
            findings.append(Finding(line, Category.KERAS2, name, outcome, severity, detail))
        for name, (line, era) in self._era.items():
            findings.append(Finding(line, era.category, name, era.outcome, era.severity, era.detail))
        for name, line in self._modelarts.items():
            status = MODELARTS.name_status(name)
            known = status.status if status.status in outcomes.FINDINGS else Status.MISSING  # unknown: it raises
            shown, severity = outcomes.outcome(known, outcomes.RUN)
            findings.append(Finding(line, Category.MODELARTS, name, shown, severity, status.detail))
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


def object_url_findings(urls: tuple[tuple[int, str], ...]) -> list[Finding]:
    """Where each obs:// or s3:// literal of a file goes on this host under `run` (as `run` would say it)."""
    findings = []
    for line, url in urls:
        try:
            where = STORAGE.locate(url)
        except ObjectStorageError as error:
            findings.append(Finding(line, Category.OBJECT_URL, url, Outcome.INVALID, Severity.BLOCKED, str(error)))
            continue
        detail = STORAGE.describe() + "; `run --obs-root DIR` makes it DIR/" + f"{where.bucket}/{where.key}"
        severity = Severity.READY if STORAGE.endpoint() else Severity.WARNING
        findings.append(Finding(line, Category.OBJECT_URL, url, Outcome.AT_RUN_TIME, severity, detail))
    return findings


def _folders_up_to(directory: str, root: str) -> tuple[str, ...]:
    folders = [directory]
    while directory != root and os.path.dirname(directory) != directory:
        directory = os.path.dirname(directory)
        folders.append(directory)
    return tuple(folders)


def _error_line(error: str) -> int:
    head = error.split(":", 1)[0]
    return int(head[5:]) if head.startswith("line ") and head[5:].isdigit() else 0


def decide_program(script: str) -> WorldDecision:
    """The world of the program `script` starts, from its file and the project modules it imports: found in its
    folder, in the folders on PYTHONPATH and in literal folders it adds to sys.path, as at run time (read, never
    run). Imports TensorFlow to look names up."""
    path = os.path.abspath(script)
    folder = os.path.dirname(path)
    python_path = [os.path.abspath(entry) for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    facts = functools.cache(read_file)
    files = reached_files(path, lambda file: local_modules(facts(file), folder, [folder, *python_path]))
    return decide(ProgramFile(os.path.relpath(file, folder), place, file_signs(facts(file))) for file, place in files)
