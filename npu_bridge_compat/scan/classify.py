"""From a file's facts to its findings: the names of every world `run` serves (the adapter's, TF 1.15's, TF 2.6's,
the standalone Keras', the NumPy and Python names of the ports' era, ModelArts'), packages, NPU configuration.

The worlds answer for their own names (`world.status`, legacy/runs.py's `WORLDS`); what is decided here is which
names to look up, which signs of a TensorFlow world they are, and the report's shape."""

from __future__ import annotations

import functools
import os
from typing import Any

from npu_bridge_compat.imports.world import NameStatus, Status, World
from npu_bridge_compat.legacy.modelarts import STORAGE
from npu_bridge_compat.legacy.modelarts.storage import ObjectStorageError
from npu_bridge_compat.legacy.runs import ONLY_FOR, RunAs, command
from npu_bridge_compat.plan import HostFacts
from npu_bridge_compat.scan import names, outcomes
from npu_bridge_compat.scan.configs import ConfigChecker, Place
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

STR_ENUM_CALL = "absl.flags.DEFINE_enum"  # the call the reader finds given a str as its enum_values


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
            if imported.level or names.served_by_every_run(imported.module):
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
                status = names.status(".".join((target, *call.attributes)))
                if status.status is not Status.UNKNOWN and status.continues_in is None:
                    return status.value
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
        elif top == "tensorflow":
            found.tensorflow([dotted], imported.line, imported.place)
        elif (top != "keras" or imported.name != "*") and names.answering(dotted):  # Keras' star: its names, used
            found.world_name(dotted, imported.line, imported.place)
    for (root, attributes), (line, _, place) in facts.uses.items():
        targets, certain = _targets(facts, root)
        dotted = [".".join((target, *attributes)) for target in targets]
        tensorflow = [name for name in dotted if name.split(".")[0] == "tensorflow"]
        adapter = [name for name in dotted if name.split(".")[0] in ADAPTER_ROOTS]
        if tensorflow and len(tensorflow) == len(dotted):
            found.tensorflow(tensorflow, line, place)
        elif adapter:
            found.adapter(adapter[0], line, used=True, certain=certain, place=place)
        elif dotted and len({name.split(".")[0] for name in dotted}) == 1 and names.answering(dotted[0]):
            found.world_name(dotted[0], line, place)


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
    """One finding per distinct name of a world (the adapter's, TensorFlow's, Keras', the era's, ModelArts') of a
    file, at its first line, and the signs of the world the file was written for (`report=False`: the signs only)."""

    def __init__(self, report: bool = True) -> None:
        self._report = report
        self._adapter: dict[str, tuple[int, NameStatus, bool, bool]] = {}  # name -> (line, status, used, star)
        # (world's name, name) -> (line, world, its status)
        self._worlds: dict[tuple[str, str], tuple[int, World, NameStatus]] = {}
        self._signs: list[Sign] = []

    def adapter(
        self, dotted: str, line: int, used: bool, star: bool = False, certain: bool = True, place: int = AT_IMPORT
    ) -> None:
        """An adapter name; an uncertain one (a later star import may shadow it) is reported only if it exists."""
        status = names.status(dotted)
        if status.status is Status.UNKNOWN and not certain:
            return
        if status.continues_in is not None:  # npu_init's `tf`: the rest is a TensorFlow name
            self.tensorflow([status.continues_in], line, place)
            return
        sign = adapter_sign(dotted, line, place)
        if sign is not None:
            self._signs.append(sign)
        key = status.name or dotted
        seen = self._adapter.get(key)
        if seen is None:
            self._adapter[key] = (line, status, used, star)
        else:
            self._adapter[key] = (min(seen[0], line), status, seen[2] or used, seen[3] or star)

    def tensorflow(self, candidates: list[str], line: int, place: int = AT_IMPORT) -> None:
        """A TensorFlow name, under each name its variable may stand for (`tf` rebound to tf.compat.v1): no world's
        finding when one of them is this TensorFlow's as it is. `tensorflow.python.keras` is the Keras 2 of this
        line in both worlds: only the worlds answering for that tree are asked (a TF 2.6 name where the TF 2.6
        world maps it, never a TF 1.15 one)."""
        name = candidates[0]
        if _is_private_keras(name):
            if self._report:
                self.world_name(name, line, place, first_tree_only=True)
            return
        if any(names.todays(candidate) for candidate in candidates):
            self._signs.extend(tensorflow_signs(candidates, line, place))
        elif not self.world_name(name, line, place):  # (a name of a world of TF2 programs is a sign of its own)
            self._signs.extend(tensorflow_signs(candidates, line, place))

    def world_name(self, dotted: str, line: int, place: int = AT_IMPORT, first_tree_only: bool = False) -> bool:
        """A name of the worlds' trees, asked of the worlds answering for it, the most specific tree first: the
        first tree with a world's finding reports it (each of its worlds' findings; a name two of them answer
        alike is reported once, by the world `run` serves). Reading for the signs alone, only the worlds served
        to TF2 programs alone are asked (their names are signs of that world; asking others could import Keras
        before `run` serves it). Whether a world of TF2 programs reported it."""
        for tree in names.answering(dotted):
            asked = [world for world in tree if self._report or _tf2_only(world)]
            reported = [(world, status) for world in asked if _shown(world, status := world.status(dotted))]
            for world, status in reported:
                if command(world) != outcomes.RUN and any(
                    command(other) == outcomes.RUN and _shown(other, found) is _shown(world, status)
                    for other, found in reported
                ):
                    continue  # said by the world `run` serves
                key = status.name or dotted
                seen = self._worlds.get((world.name, key))
                self._worlds[(world.name, key)] = (min(line, seen[0]) if seen else line, world, status)
            if reported:
                signs = [world for world, _ in reported if _tf2_only(world)]
                if signs and dotted.split(".")[:2] != ["tensorflow", "python"]:  # TF 1.15 had those modules too
                    self._signs.append(Sign(signs[0].category, dotted.replace("tensorflow.", "tf.", 1), line, place))
                return bool(signs)
            if first_tree_only:
                break
        return False

    def world_signs(self, facts: FileFacts) -> tuple[Sign, ...]:
        """The file's signs of its world, NPU options written into a session config included."""
        options = [
            Sign("session config", f"{opt.base}.parameter_map", opt.line, IN_FUNCTION if opt.scope else AT_IMPORT)
            for opt in facts.option_sets
        ]
        return tuple(sorted([*self._signs, *options], key=lambda sign: sign.line))

    def findings(self) -> list[Finding]:
        findings = [self._adapter_finding(key, *seen) for key, seen in self._adapter.items()]
        for (_, name), (line, world, status) in self._worlds.items():
            findings.append(world_finding(world, name, line, status))
        return findings

    @staticmethod
    def _adapter_finding(key: str, line: int, status: NameStatus, used: bool, star: bool) -> Finding:
        shown = f"{key}.*" if star else key
        if status.status is Status.UNKNOWN:
            return Finding(
                line,
                Category.ADAPTER,
                shown,
                Outcome.UNKNOWN,
                Severity.BLOCKED,
                status.detail,
                suggestion=status.suggestion,
            )
        if status.device_only:
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
                f"{status.detail} ({when})",
            )
        if status.status is Status.MISSING:  # a class of a door this TensorFlow lacks
            return Finding(
                line,
                Category.ADAPTER,
                shown,
                Outcome.OTHER_TENSORFLOW,
                Severity.BLOCKED if used else Severity.WARNING,
                status.detail,
            )
        return Finding(line, Category.ADAPTER, shown, Outcome.TRANSLATED, Severity.READY, f"served by {status.detail}")


def _tf2_only(world: World) -> bool:
    """A world only TF2 programs get (TF 2.6's names): its names are signs of that world."""
    return ONLY_FOR.get(world.name) is RunAs.TF2


def _shown(world: World, status: NameStatus) -> Status | None:
    """The status `scan` reports for a name the world answers `status` for; None for no finding."""
    if status.status in outcomes.FINDINGS:
        return status.status
    return world.unknown_reported_as if status.status is Status.UNKNOWN else None


def world_finding(world: World, name: str, line: int, status: NameStatus) -> Finding:
    """The finding of a name a world answers for: under the world's category, said with the command serving it."""
    said, severity = outcomes.outcome(_shown(world, status), command(world))
    return Finding(line, Category(world.category_of(name)), name, said, severity, status.detail)


def str_enum_values_findings(lines: tuple[int, ...]) -> list[Finding]:
    """The `DEFINE_enum` calls at `lines` given a str as `enum_values`: a finding where the world that answers for
    the call serves it differently from this absl-py (as absl-py < 2.0 took it)."""
    if not lines:
        return []
    world, status = names.serving(STR_ENUM_CALL)
    if world is None:
        return []
    return [world_finding(world, STR_ENUM_CALL, line, status) for line in lines]


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
