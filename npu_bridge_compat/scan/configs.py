"""NPU configuration found in a script, checked by the runtime's own table, readers, rules and planner.

Three kinds of sites carry NPU options:
- `custom_op.parameter_map["key"].<field> = value` statements (grouped per optimizer entry and function): each
  literal value is written into a real ConfigProto and read back by the runtime's reader, so a value in the wrong
  field or of the wrong type fails exactly as it does under `run`;
- calls of NPURunConfig, its holders (DumpConfig, ProfilingConfig, ...) and NPUCallback: their literal keywords
  go through the very code that builds options at run time (NPURunConfig's argument mapping and the holders'
  `npu_options()`, options/run_config.py), holders written inline or assigned to a variable once are followed;
- `npu_device.global_options().<path> = value` statements (TF2 scripts; through a variable holding the tree too):
  checked by the option tree itself, planned per function as `open()` plans them, named as the script names them.

Literal values are validated with the runtime's errors; where every value of a site is literal, the cross-option
rules run too and the host plan says what each option becomes here. Values computed by the script (flags,
variables) are known only when it runs: their options are classified by the table, and `run` checks them.

This module reads the options and the plan only (no door): the configuration callables a script calls come
resolved by the classifier, and are recognised by their bases in options/run_config.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.errors import NpuCompatWarning, NpuConfigError, closest_name
from npu_bridge_compat.options import OPTIONS, closest_option, options_from_kwargs
from npu_bridge_compat.options import run_config as run_config_arguments
from npu_bridge_compat.options import tf2_tree as tf2_options
from npu_bridge_compat.options.readers import NPU_OPTIMIZER, config_proto_values, parsed_value, typed_value
from npu_bridge_compat.plan import HostFacts, build_plan
from npu_bridge_compat.scan.reader import Call, OptionSet, TreeOptionSet, Value
from npu_bridge_compat.scan.report import Category, Finding, Outcome, Severity

_EFFECT_SEVERITY = {
    Outcome.TRANSLATED: Severity.READY,
    Outcome.APPROXIMATED: Severity.READY,
    Outcome.NOT_NEEDED: Severity.READY,
    Outcome.IGNORED: Severity.READY,
    Outcome.NO_EQUIVALENT: Severity.WARNING,
}
_FIELD_SAMPLES = {"b": False, "i": 0, "f": 0.0, "s": b""}  # stands for a computed value when checking the field


class RuntimeValue:
    """A value only the running script knows (a flag, a variable); shown as its source text."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _is_runtime(value: Any) -> bool:
    return isinstance(value, RuntimeValue)


@contextlib.contextmanager
def _in_directory(directory: str) -> Iterator[None]:
    """Checks from `directory`: the grammars resolve relative paths (dump_path, modify_mixlist) from the working
    directory, as the script does when it runs; changed through the changes registry, and put back at once."""
    change = changes.change_setting(
        "the working directory",
        directory,
        read=os.getcwd,
        write=os.chdir,
        owner=Owner.SCAN,
        reason="relative paths in a script's option values are checked from the folders it may be started in",
    )
    try:
        yield
    finally:
        changes.undo(changes=[change])


T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Place:
    """The script being checked: its path as shown, and the folders it may be started from (its own, then those
    above it up to the scanned root), from which relative paths in option values (dump_path, modify_mixlist)
    are looked up."""

    path: str
    directories: tuple[str, ...]

    def first_passing(self, check: Callable[[], T]) -> T:
        """`check()` from the first folder where it raises no NpuConfigError; else the error from the script's."""
        failure: NpuConfigError | None = None
        for directory in self.directories:
            with _in_directory(directory):
                try:
                    return check()
                except NpuConfigError as error:
                    failure = failure or error
        raise failure


class Site:
    """Where options come from: the source named in messages (e.g. "NPURunConfig at train.py:40")."""

    def __init__(self, label: str, place: Place, line: int) -> None:
        self.source = f"{label} at {place.path}:{line}"
        self.place = place
        self.line = line


class ConfigChecker:
    """Turns option sites and configuration calls into findings for one host."""

    def __init__(self, host: HostFacts) -> None:
        self.host = host
        self.holders = frozenset(run_config_arguments.HOLDER_CLASSES)

    def handler(self, obj: Any) -> Callable | None:
        """How a call of `obj` is checked: NPURunConfig (and a script's subclass of it), a holder, a callable
        whose keywords are options (NPUCallback); None for any other callable."""
        if not inspect.isclass(obj):
            return None
        if issubclass(obj, run_config_arguments.RunConfigArguments):
            return self._run_config_call
        if obj in self.holders:
            return self._holder_call
        if issubclass(obj, run_config_arguments.OptionKeywords):
            return self._keyword_call
        return None

    # --- parameter_map writes ------------------------------------------------------------------------------

    def option_sets(self, option_sets: tuple[OptionSet, ...], place: Place) -> list[Finding]:
        groups: dict[tuple[int, str], list[OptionSet]] = {}
        for option_set in option_sets:
            groups.setdefault((option_set.scope, option_set.base), []).append(option_set)
        findings: list[Finding] = []
        for (_, base), sets in groups.items():
            site = Site(f"{base}.parameter_map", place, sets[0].line)
            values: dict[str, Any] = {}
            lines: dict[str, int] = {}
            for option_set in sets:
                key = option_set.key
                if key.kind != "literal" or not isinstance(key.data, str):
                    findings.append(
                        Finding(
                            option_set.line,
                            Category.OPTION,
                            f"{base}.parameter_map[{key.data}]",
                            Outcome.AT_RUN_TIME,
                            Severity.READY,
                            "the option name is computed; `run` checks it",
                        )
                    )
                    continue
                value, error = self._attr_value(key.data, option_set, site)
                if error is not None:
                    findings.append(error)
                    values.pop(key.data, None)
                    continue
                values[key.data] = value
                lines[key.data] = option_set.line
            findings += self.options(values, lines, site)
        return findings

    def _attr_value(self, key: str, option_set: OptionSet, site: Site) -> tuple[Any, Finding | None]:
        """Write the value into a real NpuOptimizer entry and read it back as the runtime does."""
        from tensorflow.core.protobuf import config_pb2

        value = option_set.value
        literal = value.kind == "literal"
        config = config_pb2.ConfigProto()
        entry = config.graph_options.rewrite_options.custom_optimizers.add()
        entry.name = NPU_OPTIMIZER
        sample = value.data if literal else _FIELD_SAMPLES.get(option_set.field)
        shown = repr(value.data) if literal else None
        try:
            setattr(entry.parameter_map[key], option_set.field, sample)
        except (AttributeError, TypeError, ValueError) as error:
            return None, Finding(
                option_set.line,
                Category.OPTION,
                key,
                Outcome.INVALID,
                Severity.BLOCKED,
                f".parameter_map[{key!r}].{option_set.field} = {shown or value.data}: {error}",
                value=shown,
            )
        if key not in OPTIONS:
            return (value.data if literal else RuntimeValue(str(value.data))), None
        try:
            typed = config_proto_values(config, source=site.source)[key]
        except NpuConfigError as error:
            return None, Finding(
                option_set.line, Category.OPTION, key, Outcome.INVALID, Severity.BLOCKED, str(error), value=shown
            )
        return (typed if literal else RuntimeValue(str(value.data))), None

    # --- npu_device.global_options() assignments ---------------------------------------------------------

    def tree_option_sets(self, option_sets: tuple[TreeOptionSet, ...], place: Place) -> list[Finding]:
        """Each assignment checked as the option tree checks it, then each scope's options planned as open()
        plans them, reported under the names the script used."""
        scopes: dict[int, list[TreeOptionSet]] = {}
        for option_set in option_sets:
            scopes.setdefault(option_set.scope, []).append(option_set)
        findings: list[Finding] = []
        for sets in scopes.values():
            site = Site(tf2_options.SOURCE, place, sets[0].line)
            tree = tf2_options.OptionGroup("")
            values: dict[str, Any] = {}
            lines: dict[str, int] = {}
            names: dict[str, str] = {}
            for option_set in sets:
                leaf, error = _tree_leaf(tree, option_set)
                if error is not None:
                    findings.append(error)
                elif leaf.spec is not None:  # recompute goes to the graph, not the plan
                    literal = option_set.value.kind == "literal"
                    values[leaf.spec.key] = leaf.typed if literal else RuntimeValue(str(option_set.value.data))
                    lines[leaf.spec.key] = option_set.line
                    names[leaf.spec.key] = option_set.path
            findings += [
                dataclasses.replace(finding, name=names.get(finding.name, finding.name))
                for finding in self.options(values, lines, site)
            ]
        return findings

    # --- configuration calls -------------------------------------------------------------------------------

    def calls(self, calls: tuple[Call, ...], callees: list[Any], place: Place) -> list[Finding]:
        """Findings of every configuration call; holders written inside another call (or assigned to a variable
        it reads) are checked as part of it."""
        context = _CallContext(self, calls, callees, place)
        for index, callee in enumerate(callees):
            if self.handler(callee) == self._run_config_call:
                context.mark_nested(index)
        findings: list[Finding] = []
        for index, callee in enumerate(callees):
            handler = self.handler(callee)
            if index not in context.nested and handler is not None:
                findings += handler(context, index)
        return findings + context.nested_findings

    def _run_config_call(self, context: _CallContext, index: int) -> list[Finding]:
        call = context.calls[index]
        run_config = context.callees[index]
        site = Site("NPURunConfig", context.place, call.line)
        arguments, lines, findings = context.bind(index, run_config)
        if arguments is None:
            return findings
        for name in run_config_arguments.HOLDERS:
            if _is_runtime(arguments[name]):
                arguments[name] = None  # a holder built where we cannot follow it; its own call is checked there
        parameters = inspect.signature(run_config).parameters
        defaults = {name: parameter.default for name, parameter in parameters.items()}
        literal_only = {name: defaults[name] if _is_runtime(value) else value for name, value in arguments.items()}
        try:
            run_config_arguments.check_holders(literal_only)
        except NpuConfigError as error:
            name = _first_key_named(str(error), arguments)
            return findings + [
                Finding(
                    lines.get(name, call.line), Category.ARGUMENT, name, Outcome.INVALID, Severity.BLOCKED, str(error)
                )
            ]
        for name in run_config_arguments.NO_HOST_MEANING:
            if arguments[name] not in (None, False):
                findings.append(
                    Finding(
                        lines.get(name, call.line),
                        Category.ARGUMENT,
                        name,
                        Outcome.NO_EQUIVALENT,
                        Severity.WARNING,
                        f"NPURunConfig({name}=...) has no host equivalent; it is ignored",
                        value=_shown(arguments[name]),
                    )
                )
        values = run_config_arguments.npu_values(arguments)
        option_lines = {}
        for key in values:
            holder = next(
                (
                    name
                    for name in run_config_arguments.HOLDERS
                    if arguments[name] is not None and key in arguments[name].npu_options()
                ),
                None,
            )
            option_lines[key] = lines.get(key, lines.get(holder, call.line))
        return findings + self.options(values, option_lines, site)

    def _holder_call(self, context: _CallContext, index: int) -> list[Finding]:
        call = context.calls[index]
        holder, findings = context.construct(index)
        if holder is None or not hasattr(holder, "npu_options"):
            return findings
        site = Site(type(holder).__name__, context.place, call.line)
        keyword_lines = {name: line for name, _, line in call.keywords if name}
        values = holder.npu_options()
        return findings + self.options(values, {key: keyword_lines.get(key, call.line) for key in values}, site)

    def _keyword_call(self, context: _CallContext, index: int) -> list[Finding]:
        call = context.calls[index]
        site = Site(".".join((call.root, *call.attributes)), context.place, call.line)
        values = {name: context.evaluate(value) for name, value, _ in call.keywords if name}
        return self.options(values, {name: line for name, _, line in call.keywords if name}, site)

    # --- options: the table, the readers' checks, the rules, the plan --------------------------------------

    def options(self, values: Mapping[str, Any], lines: Mapping[str, int], site: Site) -> list[Finding]:
        findings: list[Finding] = []
        known: dict[str, Any] = {}
        for key, value in values.items():
            if key in OPTIONS:
                known[key] = value
                continue
            suggestion = closest_option(key)
            hint = f"; did you mean '{suggestion}'?" if suggestion else ""
            findings.append(
                Finding(
                    lines.get(key, site.line),
                    Category.OPTION,
                    key,
                    Outcome.UNKNOWN,
                    Severity.WARNING,
                    f"not an option the adapter reads: ignored, as on the NPU{hint}",
                    value=_shown(value),
                    suggestion=suggestion,
                )
            )
        errors = {
            key: error
            for key in known
            if (error := self._check_value(key, known, lines.get(key, site.line), site)) is not None
        }
        literal = {key: value for key, value in known.items() if not _is_runtime(value)}
        if errors:
            return findings + [
                errors.get(key) or self._by_table(key, value, lines.get(key, site.line)) for key, value in known.items()
            ]
        if len(literal) == len(known):  # the whole configuration is known: the rules run, as at run time
            try:
                return findings + self._planned(literal, lines, site)
            except NpuConfigError as error:
                key = _first_key_named(str(error), known)
                return (
                    findings
                    + [
                        Finding(
                            lines.get(key, site.line),
                            Category.OPTION,
                            key,
                            Outcome.INVALID,
                            Severity.BLOCKED,
                            str(error),
                            value=_shown(known[key]),
                        )
                    ]
                    + [
                        self._by_table(other, value, lines.get(other, site.line))
                        for other, value in known.items()
                        if other != key
                    ]
                )
        try:  # what the literal part becomes on this host; the values set at run time go by the table
            planned = {finding.name: finding for finding in self._planned(literal, lines, site)}
        except NpuConfigError:  # a rule that needs the values set at run time: `run` checks it
            planned = {}
        return findings + [
            planned.get(key) or self._by_table(key, value, lines.get(key, site.line)) for key, value in known.items()
        ]

    def _check_value(self, key: str, known: Mapping[str, Any], line: int, site: Site) -> Finding | None:
        """The reader's type and grammar check of one literal value (no cross-option rule yet)."""
        value = known[key]
        if _is_runtime(value):
            return None
        spec = OPTIONS[key]
        requirements = [known.get(other, OPTIONS[other].default) for other in spec.requires]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NpuCompatWarning)  # an inactive option's bad value: the plan says so
            try:
                typed = typed_value(spec, value, site.source)
                if spec.check is not None:
                    active = not spec.requires or any(requirements)
                    site.place.first_passing(lambda: parsed_value(spec, typed, active, site.source))
            except NpuConfigError as error:
                severity = Severity.WARNING if any(map(_is_runtime, requirements)) else Severity.BLOCKED
                detail = str(error) + (
                    " (an error if " + " / ".join(spec.requires) + " is on when it runs)"
                    if severity is Severity.WARNING
                    else ""
                )
                return Finding(line, Category.OPTION, key, Outcome.INVALID, severity, detail, value=_shown(value))
        return None

    def _by_table(self, key: str, value: Any, line: int) -> Finding:
        spec = OPTIONS[key]
        outcome = Outcome(spec.host.effect.value)
        detail = spec.host.how + (f" (value set when the script runs: {value.text})" if _is_runtime(value) else "")
        return Finding(line, Category.OPTION, key, outcome, _EFFECT_SEVERITY[outcome], detail, value=_shown(value))

    def _planned(self, values: dict[str, Any], lines: Mapping[str, int], site: Site) -> list[Finding]:
        """Validate the configuration and plan it for this host, as the doors do: the report's entry for every
        option, with the warnings the readers and planners give about it."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            plan = site.place.first_passing(
                lambda: build_plan(options_from_kwargs(values, source=site.source), self.host)
            )
        notes = [str(warning.message) for warning in caught if issubclass(warning.category, NpuCompatWarning)]
        findings = []
        for entry in plan.report.entries:
            outcome = Outcome(entry.effect)
            remarks = [note for note in notes if _first_key_named(note, values) == entry.key]
            severity = max(_EFFECT_SEVERITY[outcome], Severity.WARNING if remarks else Severity.READY)
            findings.append(
                Finding(
                    lines.get(entry.key, site.line),
                    Category.OPTION,
                    entry.key,
                    outcome,
                    severity,
                    " ".join([entry.how, *remarks]),
                    value=_shown(entry.value),
                )
            )
        return findings


class _CallContext:
    """The calls of one file while their arguments are evaluated into Python values."""

    def __init__(self, checker: ConfigChecker, calls: tuple[Call, ...], callees: list[Any], place: Place) -> None:
        self.checker = checker
        self.calls = calls
        self.callees = callees
        self.place = place
        self.nested: set[int] = set()
        self.nested_findings: list[Finding] = []  # what the holders built inside other calls say
        self._assigned = {call.bound_to: index for index, call in enumerate(calls) if call.bound_to}

    def _holder_index(self, value: Value) -> int | None:
        index = value.data if value.kind == "call" else self._assigned.get(value.data) if value.kind == "name" else None
        return index if index is not None and self.callees[index] in self.checker.holders else None

    def mark_nested(self, index: int) -> None:
        call = self.calls[index]
        for value in (*call.args, *(value for _, value, _ in call.keywords)):
            nested = self._holder_index(value)
            if nested is not None and nested not in self.nested:
                self.nested.add(nested)
                self.mark_nested(nested)

    def evaluate(self, value: Value) -> Any:
        if value.kind == "literal":
            return value.data
        nested = self._holder_index(value)
        if nested is not None:
            holder, findings = self.construct(nested)
            self.nested_findings += findings
            if holder is not None:
                return holder
        if value.kind == "call":
            call = self.calls[value.data]
            return RuntimeValue(".".join((call.root, *call.attributes)) + "(...)")
        return RuntimeValue(str(value.data))

    def bind(self, index: int, cls: type) -> tuple[dict[str, Any] | None, dict[str, int], list[Finding]]:
        """The call's arguments over the class's defaults, as Python binds them; an unknown keyword is a finding
        (a TypeError when the script runs), with the closest parameter."""
        call = self.calls[index]
        signature = inspect.signature(cls)
        parameters = list(signature.parameters)
        accepts_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())
        findings: list[Finding] = []
        keywords: dict[str, Any] = {}
        lines: dict[str, int] = {}
        for keyword, value, line in call.keywords:
            if keyword is None:
                findings.append(
                    Finding(
                        line,
                        Category.ARGUMENT,
                        "**",
                        Outcome.AT_RUN_TIME,
                        Severity.READY,
                        f"keywords of {cls.__name__}() passed from a mapping; `run` checks them",
                    )
                )
            elif keyword not in parameters and not accepts_any:
                close = closest_name(keyword, parameters)
                hint = f" Did you mean '{close}'?" if close else ""
                findings.append(
                    Finding(
                        line,
                        Category.ARGUMENT,
                        keyword,
                        Outcome.UNKNOWN,
                        Severity.BLOCKED,
                        f"{cls.__name__}() got an unexpected keyword argument '{keyword}'.{hint}",
                        suggestion=close,
                    )
                )
            else:
                keywords[keyword] = self.evaluate(value)
                lines[keyword] = line
        if call.star_args:
            findings.append(
                Finding(
                    call.line,
                    Category.ARGUMENT,
                    "*",
                    Outcome.AT_RUN_TIME,
                    Severity.READY,
                    f"positional arguments of {cls.__name__}() passed from a sequence; `run` checks them",
                )
            )
            return None, lines, findings
        try:
            bound = signature.bind(*map(self.evaluate, call.args), **keywords)
        except TypeError as error:
            return (
                None,
                lines,
                findings
                + [
                    Finding(
                        call.line,
                        Category.ARGUMENT,
                        cls.__name__,
                        Outcome.INVALID,
                        Severity.BLOCKED,
                        f"{cls.__name__}(): {error}",
                    )
                ],
            )
        defaults = {
            name: parameter.default
            for name, parameter in signature.parameters.items()
            if parameter.default is not inspect.Parameter.empty
        }
        return {**defaults, **bound.arguments}, lines, findings

    def construct(self, index: int) -> tuple[Any, list[Finding]]:
        """Build a holder from its literal arguments (holders only store values); computed values stand in as
        RuntimeValue, and are dropped again if the holder refuses them."""
        cls = self.callees[index]
        call = self.calls[index]
        arguments, _, findings = self.bind(index, cls)
        if arguments is None or any(f.severity is Severity.BLOCKED for f in findings):
            return None, findings
        literal = {name: value for name, value in arguments.items() if not _is_runtime(value)}
        for attempt in (arguments, literal) if len(literal) < len(arguments) else (arguments,):
            try:
                return cls(**attempt), findings
            except (NpuConfigError, TypeError, ValueError) as error:
                failure = error
        return None, findings + [
            Finding(call.line, Category.ARGUMENT, cls.__name__, Outcome.INVALID, Severity.BLOCKED, str(failure))
        ]


def _tree_leaf(tree, option_set: TreeOptionSet):
    """(the tree's leaf the assignment names, None), or (None, the finding of the error the tree raises)."""
    *groups, name = option_set.path.split(".")
    try:
        target = tree
        for group in groups:
            target = getattr(target, group)
        if option_set.value.kind == "literal":
            setattr(target, name, option_set.value.data)
        return getattr(target, name), None
    except (AttributeError, NpuConfigError) as error:
        shown = repr(option_set.value.data) if option_set.value.kind == "literal" else None
        return None, Finding(
            option_set.line, Category.OPTION, option_set.path, Outcome.INVALID, Severity.BLOCKED, str(error), shown
        )


def _shown(value: Any) -> str | None:
    if _is_runtime(value) or value is None:
        return None
    return repr(value)


def _first_key_named(message: str, keys: Mapping[str, Any]) -> str:
    """The option a runtime message is about: the first of `keys` it names."""
    positions = {
        key: match.start() for key in keys if (match := re.search(rf"(?<![\w]){re.escape(key)}(?![\w])", message))
    }
    return min(positions, key=positions.get) if positions else next(iter(keys))
