"""Value checks and grammars of NPU options.

Each check turns the raw option value into a parsed value (or raises `GrammarError` with a message that
explains what is wrong and shows a correct example, in the adapter's words where it has any). The option table
attaches one check to each option that has one; the readers run it, and the host plan reads the parsed value.

`describe()` is what the docs and error messages show as "allowed"; `examples()` gives one valid and one
invalid value, which the table-driven tests use.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from npu_bridge_compat.errors import ConfigurationAdvice, UnknownOptionWarning, closest_name, did_you_mean, warn

GIB = 1024**3


class GrammarError(ValueError):
    """A value does not follow its option's grammar; the readers re-raise it naming the option."""


def _exists(path: Path) -> bool:
    """Whether `path` exists; a name the file system refuses (too long, say) is a grammar error."""
    try:
        return path.exists()
    except OSError as error:
        raise GrammarError(f"the path {str(path)[:80]!r} is invalid ({error.strerror})") from None


class Check:
    """Base of the value checks: parse a raw value, describe what is allowed, give examples."""

    def parse(self, value: Any) -> Any:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def examples(self, workdir: Path) -> tuple[Any, Any]:
        """A valid and an invalid value (files they name are created under `workdir`)."""
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class Choice(Check):
    values: tuple[Any, ...]

    def parse(self, value: Any) -> Any:
        if value not in self.values:
            raise GrammarError(f"it should be one of the list:[{', '.join(map(str, self.values))}]")
        return value

    def describe(self) -> str:
        return " | ".join(map(str, self.values))

    def examples(self, workdir: Path) -> tuple[Any, Any]:
        invalid: Any = max(self.values) + 1 if isinstance(self.values[0], int) else "not_a_mode"
        return self.values[-1], invalid


@dataclasses.dataclass(frozen=True)
class IntRange(Check):
    low: int
    high: int | None = None

    def parse(self, value: int) -> int:
        if value < self.low or (self.high is not None and value > self.high):
            raise GrammarError(f"it must be {'in ' if self.high is not None else ''}{self.describe()}")
        return value

    def describe(self) -> str:
        return f"[{self.low}, {self.high}]" if self.high is not None else f">= {self.low}"

    def examples(self, workdir: Path) -> tuple[Any, Any]:
        return self.low, self.low - 1


@dataclasses.dataclass(frozen=True)
class Pattern(Check):
    """A string matching a regular expression (comma lists and the like)."""

    regex: str
    example: str
    message: str = ""

    def parse(self, value: str) -> str:
        if not re.fullmatch(self.regex, value):
            raise GrammarError(self.message or f"style is invalid, example:'{self.example}'")
        return value

    def describe(self) -> str:
        return f"like '{self.example}'"

    def examples(self, workdir: Path) -> tuple[Any, Any]:
        return self.example, "?? not valid ??"


@dataclasses.dataclass(frozen=True)
class ClampedRange(Check):
    """An integer the adapter clamps into [low, high] with a warning rather than refusing (input_fusion_size)."""

    low: int
    high: int
    unit: str = ""

    def parse(self, value: int) -> int:
        clamped = min(max(value, self.low), self.high)
        if clamped != value:
            bound = "larger than" if value > self.high else "less than"
            warn(
                f"the value {value} should not be {bound} {clamped}{self.unit}; the adapter uses {clamped}",
                ConfigurationAdvice,
            )
        return clamped

    def describe(self) -> str:
        return f"[{self.low}, {self.high}]{self.unit} (values outside are clamped, with a warning)"

    def examples(self, workdir: Path) -> tuple[Any, Any]:
        return self.high, str(self.high)  # a text value is of the wrong kind


@dataclasses.dataclass(frozen=True)
class CoreCounts(Check):
    """`aicore_num`: 'cube|vector', the most Cube and Vector cores operators may use, both positive."""

    def parse(self, value: str) -> tuple[int, int]:
        match = re.fullmatch(r"(\d+)\|(\d+)", value.strip())
        if not match:
            raise GrammarError("it must be 'Integer1|Integer2' (Cube cores|Vector cores), e.g. '2|4'")
        cube, vector = int(match.group(1)), int(match.group(2))
        if cube == 0 or vector == 0:
            raise GrammarError("both core counts must be greater than 0")
        return cube, vector

    def describe(self) -> str:
        return "'cube|vector' core counts, both > 0, e.g. '2|4'"

    def examples(self, workdir: Path) -> tuple[Any, Any]:
        return "2|4", "2,4"


@dataclasses.dataclass(frozen=True)
class MultistreamMode(Check):
    """`auto_multistream_parallel_mode`: 'cv', or 'LoadBalance:n' / 'MainStream:n' with n streams in [1, 64].

    Parses to (mode, streams); 'cv' has no stream count, a bare 'LoadBalance' means 8 streams.
    """

    MAX_STREAMS = 64

    def parse(self, value: str) -> tuple[str, int | None]:
        if value == "cv":
            return value, None
        if value == "LoadBalance":
            return value, 8
        match = re.fullmatch(r"(LoadBalance|MainStream):(\d+)", value)
        if not match:
            close = closest_name(value.partition(":")[0], ("cv", "LoadBalance", "MainStream"))
            hint = f" (did you mean '{close}'?)" if close else ""
            raise GrammarError(f"it must be 'cv', 'LoadBalance:n' or 'MainStream:n', e.g. 'MainStream:4'{hint}")
        streams = int(match.group(2))
        if not 1 <= streams <= self.MAX_STREAMS:
            raise GrammarError(f"the stream count n must be in [1, {self.MAX_STREAMS}], got {streams}")
        return match.group(1), streams

    def describe(self) -> str:
        return f"cv | LoadBalance:n | MainStream:n (n in [1, {self.MAX_STREAMS}])"

    def examples(self, workdir: Path) -> tuple[Any, Any]:
        return "MainStream:4", "MainStream:65"


@dataclasses.dataclass(frozen=True)
class ByteSize(Check):
    """A decimal number of bytes in [0, 256 GiB], as graph_memory_max_size and variable_memory_max_size take."""

    def parse(self, value: str) -> int:
        if not re.fullmatch(r"\d+", value.strip()):
            raise GrammarError("it must be a decimal number of bytes, e.g. str(26 * 1024**3)")
        size = int(value)
        if size > 256 * GIB:
            raise GrammarError(f"it must be in [0, {256 * GIB}] bytes (256 GiB)")
        return size

    def describe(self) -> str:
        return "bytes as a decimal string, 0 to 274877906944 (256 GiB)"

    def examples(self, workdir: Path) -> tuple[Any, Any]:
        return str(5 * GIB), str(300 * GIB)


@dataclasses.dataclass(frozen=True)
class Directory(Check):
    """An existing directory that can be read and written (dump_path, work_path)."""

    def parse(self, value: str) -> str:
        if not value:
            raise GrammarError("it must name an existing directory")
        path = Path(value)
        if not _exists(path):
            raise GrammarError(f"the path {value} is invalid (it does not exist; create it first, as on the NPU)")
        if not path.is_dir():
            raise GrammarError(f"the path {value} is not directory.")
        if not os.access(path, os.R_OK | os.W_OK):
            raise GrammarError(f"the path {value} does't have read, write permissions.")
        return str(path)

    def describe(self) -> str:
        return "an existing directory with read and write permission"

    def examples(self, workdir: Path) -> tuple[Any, Any]:
        return str(workdir), str(workdir / "missing")


@dataclasses.dataclass(frozen=True)
class DumpSteps(Check):
    """`dump_step`: groups joined by '|', each a step N or an inclusive range A-B with A < B; at most 100."""

    EXAMPLE = "0|5|10|50-100"

    def parse(self, value: str) -> tuple[tuple[int, int], ...]:
        groups = value.split("|")
        if groups and groups[-1] == "":
            groups.pop()  # the newest adapter tolerates a trailing '|'
        if len(groups) > 100:
            raise GrammarError("dump_step only support dump <= 100 sets of data")
        steps = []
        for group in groups:
            match = re.fullmatch(r"(\d*)-(\d+)|(\d+)", group.strip())
            if not match:
                raise GrammarError(f"dump_step string style is error, correct example:'{self.EXAMPLE}'")
            if match.group(3) is not None:
                steps.append((int(match.group(3)), int(match.group(3))))
                continue
            first, second = int(match.group(1) or 0), int(match.group(2))  # "-3" reads as 0-3, as on the NPU
            if first >= second:
                raise GrammarError(
                    f"in range steps, the first step is >= second step ({group}), correct example:'0|5|10-20'"
                )
            steps.append((first, second))
        return tuple(steps)

    def describe(self) -> str:
        return f"steps and ranges joined by '|', e.g. '{self.EXAMPLE}' (empty: every step)"

    def examples(self, workdir: Path) -> tuple[Any, Any]:
        return "0|3-5|10", "0|5-3"


@dataclasses.dataclass(frozen=True)
class InOutPair:
    """One mixed-compute region: its first (input) and last (output) nodes."""

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class InOutPairs(Check):
    """`in_out_pair`: the text of a nested list `[[[in, ...], [out, ...]], ...]` (Python's `str(list)`).

    Read as the adapter reads it: brackets nest, commas separate, blanks and single quotes are dropped.
    """

    def parse(self, value: str) -> tuple[InOutPair, ...]:
        tree = self._nest(value)
        if not isinstance(tree, list) or not tree:
            raise GrammarError(f"in_out_pair: {value} is invalid. Expected e.g. \"[[['in1', 'in2'], ['out1']]]\"")
        pairs = []
        for pair in tree:
            lists = [item for item in pair if isinstance(item, list)] if isinstance(pair, list) else []
            if len(lists) < 2 or any(not all(isinstance(name, str) for name in names) for names in lists[:2]):
                raise GrammarError(f"in_out_pair: {value} is invalid. Each pair is [[input nodes], [output nodes]]")
            if not lists[0] or not lists[1]:
                raise GrammarError(f"in_out_pair: {value} is invalid. A pair has no input or no output node")
            pairs.append(InOutPair(tuple(lists[0]), tuple(lists[1])))
        return tuple(pairs)

    @staticmethod
    def _nest(text: str) -> Any:
        stack: list[list[Any]] = [[]]
        name = ""
        for char in text:
            if char in " \t'\n":
                continue
            if char == "[":
                stack.append([])
            elif char in ",]":
                if name:
                    stack[-1].append(name)
                    name = ""
                if char == "]":
                    if len(stack) == 1:
                        raise GrammarError(f"in_out_pair: {text} is invalid. Unbalanced ']'")
                    closed = stack.pop()
                    stack[-1].append(closed)
            else:
                name += char
        if len(stack) != 1 or name:
            raise GrammarError(f"in_out_pair: {text} is invalid. Unbalanced '[' or text outside the list")
        return stack[0][0] if len(stack[0]) == 1 else None

    def describe(self) -> str:
        return "str() of [[[input node names], [output node names]], ...]"

    def examples(self, workdir: Path) -> tuple[Any, Any]:
        return str([[["conv1/Conv2D"], ["dense/BiasAdd"]]]), "[[conv1]"


@dataclasses.dataclass(frozen=True)
class InputShape(Check):
    """`input_shape`: `name:d,d,...;name2:...` where -1 marks a dynamic dimension."""

    def parse(self, value: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
        if not value:
            raise GrammarError("input_shape is empty.")
        shapes = []
        for entry in value.split(";"):
            match = re.fullmatch(r"(\w[\w/.]*):(-?\d+(?:,-?\d+)*)", entry.strip())
            if not match:
                raise GrammarError("input_shape string style is invalid, example:'data:1,1,40,-1;label:1,-1'")
            shapes.append((match.group(1), tuple(int(d) for d in match.group(2).split(","))))
        return tuple(shapes)

    def describe(self) -> str:
        return "'name:d,d,...;name2:...' with -1 for a dynamic dimension"

    def examples(self, workdir: Path) -> tuple[Any, Any]:
        return "data:1,1,40,-1;label:1,-1", "data=1,2"


@dataclasses.dataclass(frozen=True)
class DynamicDims(Check):
    """`dynamic_dims`: gears separated by ';', each a comma list of non-negative sizes."""

    def parse(self, value: str) -> tuple[tuple[int, ...], ...]:
        if not value:
            raise GrammarError("dynamic_dims is empty.")
        gears = []
        for gear in value.split(";"):
            if not re.fullmatch(r"\d+(?:,\d+)*", gear.strip()):
                raise GrammarError("dynamic_dims string style is invalid, example:'20,20;40,40;80,60'")
            gears.append(tuple(int(d) for d in gear.split(",")))
        return tuple(gears)

    def describe(self) -> str:
        return "gears separated by ';', each a comma list of sizes, e.g. '20,20;40,40'"

    def examples(self, workdir: Path) -> tuple[Any, Any]:
        return "20,20;40,40", "20,-1"


@dataclasses.dataclass(frozen=True)
class ShapeRanges(Check):
    """`dynamic_inputs_shape_range`: `getnext:[d,...],[d,...];data:[d,...]`, d an int, `a~b` or -1."""

    EXAMPLE = "data:[1,2];getnext:[2,3]"

    def parse(self, value: str) -> Mapping[str, tuple[tuple[Any, ...], ...]]:
        entries = [entry for entry in value.split(";") if entry.strip()]
        if len(entries) > 2:
            raise GrammarError("dynamic_inputs_shape_range style is invalid, more than 2 input styles.")
        ranges: dict[str, tuple[tuple[Any, ...], ...]] = {}
        for entry in entries:
            tag, sep, shapes_text = entry.partition(":")
            tag = tag.strip()
            shapes = re.findall(r"\[([^\[\]]*)\]", shapes_text)
            leftover = re.sub(r"\[[^\[\]]*\]", "", shapes_text).replace(",", "").strip()
            if not sep or ":" in shapes_text or tag not in ("getnext", "data") or tag in ranges or leftover:
                raise GrammarError(f"dynamic_inputs_shape_range style is invalid, example:'{self.EXAMPLE}'")
            ranges[tag] = tuple(self._shape(shape) for shape in shapes)
        return ranges

    def _shape(self, text: str) -> tuple[Any, ...]:
        dims: list[Any] = []
        for dim in (d.strip() for d in text.split(",") if text.strip()):
            if re.fullmatch(r"-1|\d+", dim):
                dims.append(int(dim))
            elif re.fullmatch(r"\d+~\d+", dim):
                low, high = map(int, dim.split("~"))
                dims.append((low, high))
            else:
                raise GrammarError(f"dynamic_inputs_shape_range style is invalid, example:'{self.EXAMPLE}'")
        return tuple(dims)

    def describe(self) -> str:
        return "'getnext:[d,...],[...];data:[...]' with d an int, 'a~b' or -1"

    def examples(self, workdir: Path) -> tuple[Any, Any]:
        return "getnext:[128,3~5,-1];data:[]", "other:[1]"


def strip_json_comments(text: str) -> str:
    """Remove `//` line comments outside strings, as they appear in Ascend's own JSON samples."""
    out, in_string, escaped, i = [], False, False, 0
    while i < len(text):
        char = text[i]
        if in_string:
            out.append(char)
            escaped = char == "\\" and not escaped
            in_string = not (char == '"' and not escaped)
        elif char == '"':
            in_string = True
            out.append(char)
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(char)
        i += 1
    return "".join(out)


def _load_json(text: str, what: str) -> Any:
    try:
        return json.loads(strip_json_comments(text))
    except json.JSONDecodeError as error:
        raise GrammarError(
            f"{what} is not valid JSON ({error.msg} at line {error.lineno} column {error.colno})"
        ) from None


def _read_file(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GrammarError(f"the file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as error:
        raise GrammarError(f"the file {path} cannot be read ({error})") from None


@dataclasses.dataclass(frozen=True)
class MixList:
    """The changes a `modify_mixlist` file makes to the Ascend black/white/gray lists (Ascend op types)."""

    changes: tuple[tuple[str, str, str], ...]  # (list, action, op type), e.g. ("black-list", "to-add", "MatMulV2")

    LISTS = ("black-list", "white-list", "gray-list")
    ACTIONS = ("to-add", "to-remove")

    def ops(self, list_name: str, action: str) -> tuple[str, ...]:
        return tuple(op for lst, act, op in self.changes if (lst, act) == (list_name, action))


@dataclasses.dataclass(frozen=True)
class MixListFile(Check):
    """`modify_mixlist`: path of a JSON file `{"black-list": {"to-add": [...], "to-remove": [...]}, ...}`."""

    def parse(self, value: str) -> MixList:
        document = _load_json(_read_file(value), f"the modify_mixlist file {value}")
        if not isinstance(document, dict):
            raise GrammarError(f"the modify_mixlist file {value} must hold a JSON object")
        changes = []
        for list_name, edits in document.items():
            if list_name not in MixList.LISTS:
                raise GrammarError(
                    f"the modify_mixlist file {value} has an unknown list '{list_name}'; lists are "
                    f"{', '.join(MixList.LISTS)}.{did_you_mean(list_name, MixList.LISTS)}"
                )
            if not isinstance(edits, dict):
                raise GrammarError(f"'{list_name}' in {value} must be an object with 'to-add' / 'to-remove'")
            for action, ops in edits.items():
                if action not in MixList.ACTIONS:
                    raise GrammarError(
                        f"'{list_name}' in {value} has an unknown entry '{action}'; entries are "
                        f"to-add, to-remove.{did_you_mean(action, MixList.ACTIONS)}"
                    )
                if not isinstance(ops, list) or not all(isinstance(op, str) and op for op in ops):
                    raise GrammarError(f"'{list_name}.{action}' in {value} must be a list of operator type names")
                changes.extend((list_name, action, op) for op in ops)
        return MixList(tuple(changes))

    def describe(self) -> str:
        return "path of a JSON file with black-list / white-list / gray-list, each with to-add / to-remove"

    def examples(self, workdir: Path) -> tuple[Any, Any]:
        good, bad = workdir / "ops_info.json", workdir / "bad_ops_info.json"
        good.write_text('{"black-list": {"to-add": ["Exp"]} // keep Exp in float32\n}')
        bad.write_text('{"blacklist": {"to-add": ["Exp"]}}')
        return str(good), str(bad)


@dataclasses.dataclass(frozen=True)
class FusionSwitchFile(Check):
    """`fusion_switch_file`: JSON `{"Switch": {"GraphFusion": {...}, "UBFusion": {...}}}` or `Pass:off` lines.

    Parses to {(section, pass): "on"|"off"}; None when the file is absent from this host (it has no host
    effect beyond the remapper switch, so a path that exists only on the NPU server is not an error).
    """

    def parse(self, value: str) -> Mapping[tuple[str, str], str] | None:
        if not _exists(Path(value)):
            return None
        text = _read_file(value)
        switches: dict[tuple[str, str], str] = {}
        if text.lstrip().startswith("{"):
            document = _load_json(text, f"the fusion_switch_file {value}")
            sections = document.get("Switch") if isinstance(document, dict) else None
            if not isinstance(sections, dict):
                raise GrammarError(f'the fusion_switch_file {value} must hold {{"Switch": {{"GraphFusion": ...}}}}')
            for section, passes in sections.items():
                if section not in ("GraphFusion", "UBFusion") or not isinstance(passes, dict):
                    raise GrammarError(f"the fusion_switch_file {value} has an unknown section '{section}'")
                for name, state in passes.items():
                    switches[(section, name)] = self._state(value, name, state)
        else:
            for line in filter(None, (line.strip() for line in text.splitlines())):
                name, sep, state = line.partition(":")
                if not sep:
                    raise GrammarError(f"the fusion_switch_file {value} has a line '{line}'; expected 'Pass:off'")
                switches[("GraphFusion", name.strip())] = self._state(value, name, state.strip())
        return switches

    @staticmethod
    def _state(path: str, name: str, state: Any) -> str:
        if state not in ("on", "off"):
            raise GrammarError(f"the fusion_switch_file {path} sets '{name}' to {state!r}; use 'on' or 'off'")
        return state

    def describe(self) -> str:
        return 'path of a JSON file {"Switch": {"GraphFusion": {"Pass": "on|off"}, "UBFusion": {...}}}'

    def examples(self, workdir: Path) -> tuple[Any, Any]:
        good, bad = workdir / "fusion_switch.cfg", workdir / "bad_fusion_switch.cfg"
        good.write_text('{"Switch": {"GraphFusion": {"ALL": "off"}, "UBFusion": {"ALL": "off"}}}')
        bad.write_text('{"Switch": {"GraphFusion": {"ALL": "disabled"}}}')
        return str(good), str(bad)


PROFILING_SWITCHES = ("training_trace", "task_trace", "hccl", "aicpu", "l2", "msproftx", "runtime_api", "task_time")
PROFILING_KEYS = PROFILING_SWITCHES + (
    "output",
    "storage_limit",
    "fp_point",
    "bp_point",
    "aic_metrics",
    "sys_hardware_mem_freq",
    "llc_profiling",
    "sys_io_sampling_freq",
    "sys_interconnection_freq",
    "dvpp_freq",
    "host_sys",
    "host_sys_usage",
    "host_sys_usage_freq",
    "instr_profiling_freq",
)
# The AI Core metrics the adapter accepts (tf_adapter/util/profiler.cc, kNpuMetricsMap), for profiling_options'
# aic_metrics and npu_bridge.profiler.Profiler alike.
AIC_METRICS = (
    "ArithmeticUtilization",
    "PipeUtilization",
    "Memory",
    "MemoryL0",
    "MemoryUB",
    "ResourceConflictRatio",
    "L2Cache",
)


@dataclasses.dataclass(frozen=True)
class ProfilingOptions(Check):
    """`profiling_options`: a JSON object (output, training_trace, task_trace, aicpu, fp_point, bp_point, ...)."""

    DEFAULT = {
        "output": "./",
        "training_trace": "on",
        "task_trace": "on",
        "hccl": "on",
        "aicpu": "on",
        "aic_metrics": "PipeUtilization",
        "msproftx": "off",
    }

    def parse(self, value: str) -> Mapping[str, str]:
        if not value.strip():
            return dict(self.DEFAULT)  # the newest adapter's default when profiling is on without options
        document = _load_json(value, "profiling_options")
        if not isinstance(document, dict):
            raise GrammarError('profiling_options must be a JSON object, e.g. \'{"output": "/tmp/profiling"}\'')
        for key, item in document.items():
            if key not in PROFILING_KEYS:
                warn(
                    f"profiling_options has a key '{key}' this package does not know; it is ignored."
                    f"{did_you_mean(key, PROFILING_KEYS)}",
                    UnknownOptionWarning,
                )
            elif not isinstance(item, str):
                raise GrammarError(f"profiling_options '{key}' must be a string, got {item!r}")
        if "storage_limit" in document:
            match = re.fullmatch(r"(\d+)MB", document["storage_limit"])
            if not match or not 200 <= int(match.group(1)) <= 4294967295:
                raise GrammarError("profiling_options 'storage_limit' must be 'NMB' with N in [200, 4294967295]")
        if document.get("aic_metrics", "PipeUtilization") not in AIC_METRICS:
            raise GrammarError(
                f"profiling_options 'aic_metrics' must be one of {', '.join(AIC_METRICS)}, "
                f"got {document['aic_metrics']!r}"
            )
        for switch in PROFILING_SWITCHES:
            if document.get(switch, "off") not in ("on", "off"):
                raise GrammarError(f"profiling_options '{switch}' must be 'on' or 'off', got {document[switch]!r}")
        self._check_output(document.get("output", "./"))
        return document

    @staticmethod
    def _check_output(output: str) -> None:
        """The trace directory must exist writable, or be creatable, before any step runs."""
        path = Path(output).absolute()
        existing = next(p for p in (path, *path.parents) if _exists(p))
        if not existing.is_dir():
            raise GrammarError(f"profiling_options 'output' {output} is not a directory")
        if not os.access(existing, os.W_OK):
            raise GrammarError(f"profiling_options 'output' {output} is not writable ({existing} is read-only)")

    def describe(self) -> str:
        return "JSON object: output, training_trace, task_trace, aicpu, hccl, fp_point, bp_point, aic_metrics, ..."

    def examples(self, workdir: Path) -> tuple[Any, Any]:
        return json.dumps({"output": str(workdir / "prof"), "training_trace": "on"}), '{"output": '
