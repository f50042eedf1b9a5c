"""The static reader: what one Python file imports, names and configures, read from its syntax tree alone.

Nothing here executes or imports the scanned code, nor TensorFlow: the reader runs in worker processes over
large trees, and only turns syntax into plain, picklable facts. What those facts mean on this host is decided
by the classifier (`classify.py`), which knows the runtime.
"""

from __future__ import annotations

import ast
import builtins
import re
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

from npu_bridge_compat.legacy import ALIASED_PACKAGES
from npu_bridge_compat.legacy.era.table import FILLED, MODULES

ADAPTER_ROOTS = frozenset(ALIASED_PACKAGES) | {"npu_bridge_compat"}  # where NPU configuration calls come from
# the modules of the ports' NumPy and Python era, from its table: numpy, collections, time, inspect, imp, distutils, xml
ERA_ROOTS = frozenset(path.split(".")[0] for path in (*FILLED, *MODULES))
# packages whose names the classifier checks one by one (moxing: ModelArts' library, which `run` serves)
RECORDED_ROOTS = ADAPTER_ROOTS | ERA_ROOTS | {"tensorflow", "moxing"}
_BUILTINS = frozenset(dir(builtins)) | {"__file__", "__builtins__", "__cached__", "__annotations__", "__path__"}
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
_NAME_ERRORS = frozenset({"AttributeError", "ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
# `tf.__version__`, `LooseVersion(...)`, `hasattr(tf, ...)`, `tf_version.is_tf2()`, `tf2.enabled()`
_VERSION_TEST = re.compile(r"version|^hasattr$|(^|_)tf[12]($|_)", re.IGNORECASE)
_TEXT_CONVERSIONS = {"as_bytes": str.encode, "as_str": str, "as_text": str, "compat.as_bytes": str.encode}
_NESTED_BODIES = ("body", "orelse", "finalbody")


class Value(NamedTuple):
    """An argument or assigned value: `literal` (data is the Python value), `runtime` (data is its source text),
    `name` (data is the variable it reads) or `call` (data is the index of a recorded `Call`)."""

    kind: str
    data: Any


# Where a name is used or imported: what its use says about the code that runs.
AT_IMPORT = 0  # at module level: runs whenever the file runs or is imported
IN_FUNCTION = 1  # in a function or class body: runs when called
GUARDED = 2  # in a `try:` whose handler catches its absence, or a branch on the library's version: either may run


class Import(NamedTuple):
    line: int
    module: str  # the absolute module, '' for `from . import x`
    name: str | None  # the imported name of a from-import ('*' for a star import), None for `import module`
    level: int  # dots of a relative import
    optional: bool  # inside `try:` with an `except ImportError` (or broader) handler
    place: int = AT_IMPORT  # AT_IMPORT, IN_FUNCTION or GUARDED


class Call(NamedTuple):
    """A call of an adapter name (or of a name a star import may provide), with its arguments."""

    line: int
    root: str  # the variable the callee is reached from
    attributes: tuple[str, ...]  # the attribute path after it
    args: tuple[Value, ...]
    keywords: tuple[tuple[str | None, Value, int], ...]  # (keyword, value, line); keyword None: **mapping
    star_args: bool
    bound_to: str | None  # the variable it is assigned to, when that variable is bound nowhere else


class OptionSet(NamedTuple):
    """`<base>.parameter_map[<key>].<field> = <value>`: one NpuOptimizer option written into a ConfigProto."""

    line: int
    scope: int  # the function (0: the module) the statement is in
    base: str  # source text of the optimizer entry, e.g. custom_op
    key: Value
    field: str
    value: Value


class TreeOptionSet(NamedTuple):
    """`npu_device.global_options().<path> = <value>`, directly or through a variable holding the option tree."""

    line: int
    scope: int  # the function (0: the module) the statement is in
    path: str  # the option's dotted name in the tree, e.g. dump_config.enable_dump
    value: Value


class FileFacts(NamedTuple):
    path: str
    error: str | None = None  # why the file could not be read or parsed
    imports: tuple[Import, ...] = ()
    aliases: dict[str, tuple[str, ...]] = {}  # variable -> dotted names it is bound to (recorded roots only)
    star_modules: tuple[str, ...] = ()  # every module imported with *, in order ('.x' for a relative one)
    # (root, attributes) -> (first line, called, place): the place of its use that runs most surely
    uses: dict[tuple[str, tuple[str, ...]], tuple[int, bool, int]] = {}
    calls: tuple[Call, ...] = ()
    option_sets: tuple[OptionSet, ...] = ()
    tree_option_sets: tuple[TreeOptionSet, ...] = ()
    search_paths: tuple[str, ...] = ()  # literal folders the script adds with sys.path.append / insert
    str_enum_values: tuple[int, ...] = ()  # lines of absl DEFINE_enum calls given a str as enum_values
    object_urls: tuple[tuple[int, str], ...] = ()  # (line, literal) of each obs:// or s3:// string


def read_file(path: str) -> FileFacts:
    """Read and parse `path`; a file that cannot be read or does not parse is a fact, not an error."""
    try:
        with open(path, "rb") as handle:
            source = handle.read()
    except OSError as error:
        return FileFacts(path, error=f"cannot be read: {error.strerror}")
    return read_source(source, path)


def read_source(source: bytes | str, path: str) -> FileFacts:
    try:
        with warnings.catch_warnings():  # the scanned code's own SyntaxWarnings (`'\.'`) are not the scan's to print
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = compile(source, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        return FileFacts(path, error=f"line {error.lineno}: {error.msg}")
    except ValueError as error:  # e.g. null bytes
        return FileFacts(path, error=str(error))
    reader = _Reader()
    reader.statements(tree.body, scope=0, optional=False)
    if reader.aliases or reader.adapter_star:
        reader.expressions(tree)
    return FileFacts(
        path,
        None,
        tuple(reader.imports),
        {k: tuple(v) for k, v in reader.aliases.items()},
        tuple(reader.star_modules),
        reader.uses,
        tuple(reader.calls),
        tuple(reader.option_sets),
        tuple(reader.tree_option_sets),
        tuple(reader.search_paths),
        _str_enum_values(tree) if (b"_enum" if isinstance(source, bytes) else "_enum") in source else (),
        _object_urls(tree) if any(scheme in source for scheme in _URL_MARKS[isinstance(source, bytes)]) else (),
    )


_URL_MARKS = {False: ("obs://", "s3://"), True: (b"obs://", b"s3://")}


def _object_urls(tree: ast.Module) -> tuple[tuple[int, str], ...]:
    """The obs:// and s3:// literals of a file (ModelArts' object-storage URLs), in order, each once."""
    found = {}
    for node in ast.walk(tree):
        if type(node) is ast.Constant and isinstance(node.value, str) and node.value.startswith(("obs://", "s3://")):
            found.setdefault(node.value, node.lineno)
    return tuple(sorted((line, url) for url, line in found.items()))


_ENUM_DEFINES = frozenset({"DEFINE_enum", "DEFINE_multi_enum"})


def _str_enum_values(tree: ast.Module) -> tuple[int, ...]:
    """The lines of absl's `DEFINE_enum` / `DEFINE_multi_enum` calls (also as `tf.flags.`) given a str literal as
    `enum_values`, which absl-py 2.0 refuses (legacy/era/absl_flags.py)."""
    lines = []
    for node in ast.walk(tree):
        if type(node) is not ast.Call:
            continue
        func = node.func
        if (func.attr if type(func) is ast.Attribute else getattr(func, "id", None)) not in _ENUM_DEFINES:
            continue
        values = next((keyword.value for keyword in node.keywords if keyword.arg == "enum_values"), None)
        if values is None and len(node.args) > 2:
            values = node.args[2]
        if type(values) is ast.Constant and isinstance(values.value, str):
            lines.append(node.lineno)
    return tuple(lines)


def literal_value(node: ast.expr) -> Value:
    """The value of a literal the way scripts write option values: constants, signed numbers, and text put
    through `tf.compat.as_bytes` / `as_str` / `.encode()`; anything else is only known at run time."""
    kind = type(node)
    if kind is ast.Constant:
        return Value("literal", node.value)
    if kind is ast.UnaryOp and isinstance(node.op, (ast.USub, ast.UAdd)) and type(node.operand) is ast.Constant:
        number = node.operand.value
        if isinstance(number, (int, float)) and not isinstance(number, bool):
            return Value("literal", -number if isinstance(node.op, ast.USub) else number)
    if kind is ast.Call and len(node.args) == 1 and not node.keywords:
        text = node.args[0]
        function = node.func
        name = function.attr if type(function) is ast.Attribute else getattr(function, "id", None)
        if type(text) is ast.Constant and isinstance(text.value, str) and name in _TEXT_CONVERSIONS:
            return Value("literal", _TEXT_CONVERSIONS[name](text.value))
    if (
        kind is ast.Call
        and type(node.func) is ast.Attribute
        and node.func.attr == "encode"
        and not node.args
        and type(node.func.value) is ast.Constant
        and isinstance(node.func.value.value, str)
    ):
        return Value("literal", node.func.value.value.encode())
    if kind is ast.Name:
        return Value("name", node.id)
    return Value("runtime", _source_text(node))


def _source_text(node: ast.AST, limit: int = 80) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _chain(node: ast.expr) -> tuple[str, tuple[str, ...]] | None:
    """`a.b.c` as ('a', ('b', 'c')); None when the expression is not a dotted name."""
    attributes = []
    while type(node) is ast.Attribute:
        attributes.append(node.attr)
        node = node.value
    if type(node) is not ast.Name:
        return None
    return node.id, tuple(reversed(attributes))


def _catches(handlers: list[ast.ExceptHandler], errors: frozenset[str]) -> bool:
    for handler in handlers:
        caught = handler.type
        names = caught.elts if type(caught) is ast.Tuple else [caught]
        if caught is None or any(getattr(name, "id", getattr(name, "attr", None)) in errors for name in names):
            return True
    return False


def _tests_version(test: ast.expr) -> bool:
    """Whether an `if` chooses by a library's version or by what it has (`tf.__version__`, `hasattr(tf, ...)`)."""
    return any(
        _VERSION_TEST.search(node.attr if type(node) is ast.Attribute else node.id)
        for node in ast.walk(test)
        if type(node) in (ast.Attribute, ast.Name)
    )


class _Reader:
    def __init__(self) -> None:
        self.imports: list[Import] = []
        self.aliases: dict[str, list[str]] = {}
        self.star_modules: list[str] = []
        self.uses: dict[tuple[str, tuple[str, ...]], tuple[int, bool]] = {}
        self.calls: list[Call] = []
        self.option_sets: list[OptionSet] = []
        self.tree_option_sets: list[TreeOptionSet] = []
        self._option_trees: set[str] = set()  # variables holding npu_device.global_options()
        self.search_paths: list[str] = []
        self.adapter_star = False  # a star import of an adapter module: names bound nowhere may come from it
        self._assigned_calls: dict[str, list[int]] = {}  # variable -> id of every call assigned to it
        self._bindings: dict[str, int] = {}  # variable -> how many statements assign or define it
        self._call_variables: dict[int, str] = {}  # id of a call -> the one variable it is assigned to
        self._scopes = 0
        self._function_lines: list[tuple[int, int]] = []  # first and last line of each function body
        self._guarded_lines: list[tuple[int, int]] = []  # of each guarded block (see GUARDED)
        self._places: dict[int, int] = {}  # line -> its place

    # --- statements: imports, option writes, rebindings (scope-aware, never into expressions) -------------

    def statements(self, body: list[ast.stmt], scope: int, optional: bool) -> None:
        for node in body:
            kind = type(node)
            if kind is ast.Import:
                for alias in node.names:
                    self._import(node.lineno, alias.name, None, 0, optional, scope)
                    bound = alias.asname or alias.name.split(".")[0]
                    self._bind(bound, alias.name if alias.asname else bound)
                    self._count_binding(bound)
            elif kind is ast.ImportFrom:
                module = node.module or ""
                for alias in node.names:
                    self._import(node.lineno, module, alias.name, node.level, optional, scope)
                    if alias.name == "*":
                        self.star_modules.append("." * node.level + module)
                        self.adapter_star = self.adapter_star or module.split(".")[0] in ADAPTER_ROOTS
                    elif node.level:
                        self._count_binding(alias.asname or alias.name)
                    else:
                        self._bind(alias.asname or alias.name, f"{module}.{alias.name}")
                        self._count_binding(alias.asname or alias.name)
            elif kind is ast.Assign:
                self._assign(node, scope)
            elif kind is ast.Expr and type(node.value) is ast.Call:
                self._sys_path(node.value)
            elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
                self._count_binding(node.name)
                self._scopes += 1
                if kind is not ast.ClassDef:  # (a class body runs where the class is defined)
                    self._function_lines.append((node.body[0].lineno, node.end_lineno or node.lineno))
                self.statements(node.body, self._scopes, optional=False)
            elif kind in (ast.Try, ast.TryStar):
                if _catches(node.handlers, _NAME_ERRORS):  # the body and its fallbacks: code for either version
                    self._guarded_lines.append((node.body[0].lineno, node.handlers[-1].end_lineno or node.lineno))
                self.statements(node.body, scope, optional or _catches(node.handlers, _IMPORT_ERRORS))
                for handler in node.handlers:
                    self.statements(handler.body, scope, optional)
                self.statements(node.orelse, scope, optional)
                self.statements(node.finalbody, scope, optional)
            elif kind is ast.If and _tests_version(node.test):
                self._guarded_lines.append((node.lineno, node.end_lineno or node.lineno))
                self.statements(node.body, scope, optional)
                self.statements(node.orelse, scope, optional)
            elif kind is ast.Match:
                for case in node.cases:
                    self.statements(case.body, scope, optional)
            else:
                for field in _NESTED_BODIES:
                    nested = getattr(node, field, None)
                    if nested:
                        self.statements(nested, scope, optional)

    def _sys_path(self, call: ast.Call) -> None:
        chain = _chain(call.func)
        if chain and chain[0] == "sys" and chain[1] in (("path", "append"), ("path", "insert")) and call.args:
            folder = literal_value(call.args[-1])
            if folder.kind == "literal" and isinstance(folder.data, str):
                self.search_paths.append(folder.data)

    def _import(self, line: int, module: str, name: str | None, level: int, optional: bool, scope: int) -> None:
        place = GUARDED if optional else self.place(line) if scope == 0 else max(IN_FUNCTION, self.place(line))
        self.imports.append(Import(line, module, name, level, optional, place))

    def place(self, line: int) -> int:
        """AT_IMPORT, IN_FUNCTION or GUARDED, for code on `line` (of the blocks seen so far)."""
        place = self._places.get(line)
        if place is None:
            if any(first <= line <= last for first, last in self._guarded_lines):
                place = GUARDED
            elif any(first <= line <= last for first, last in self._function_lines):
                place = IN_FUNCTION
            else:
                place = AT_IMPORT
            self._places[line] = place
        return place

    def _count_binding(self, variable: str) -> None:
        self._bindings[variable] = self._bindings.get(variable, 0) + 1

    def _bind(self, variable: str, dotted: str) -> None:
        if dotted.split(".")[0] in RECORDED_ROOTS:
            targets = self.aliases.setdefault(variable, [])
            if dotted not in targets:
                targets.append(dotted)

    def _assign(self, node: ast.Assign, scope: int) -> None:
        for target in node.targets:
            if type(target) is ast.Name:
                self._count_binding(target.id)
                if type(node.value) is ast.Call:
                    self._assigned_calls.setdefault(target.id, []).append(id(node.value))
                    if self._is_option_tree(node.value):
                        self._option_trees.add(target.id)
                chain = _chain(node.value)
                if chain and target.id in self.aliases and chain[0] in self.aliases:
                    # `tf = tf.compat.v1`: a rebinding of an imported name keeps it recorded, flow-insensitively
                    for dotted in list(self.aliases[chain[0]]):
                        self._bind(target.id, ".".join((dotted, *chain[1])))
            elif type(target) is ast.Attribute and (path := self._tree_path(target)) is not None:
                self.tree_option_sets.append(TreeOptionSet(node.lineno, scope, path, literal_value(node.value)))
            elif type(target) is ast.Attribute and type(target.value) is ast.Subscript:
                entry = target.value
                if type(entry.value) is ast.Attribute and entry.value.attr == "parameter_map":
                    self.option_sets.append(
                        OptionSet(
                            node.lineno,
                            scope,
                            _source_text(entry.value.value),
                            literal_value(entry.slice),
                            target.attr,
                            literal_value(node.value),
                        )
                    )

    def _is_option_tree(self, call: ast.Call) -> bool:
        """Whether `call` is npu_device's global_options() (or a name imported from npu_device for it)."""
        chain = _chain(call.func)
        if chain is None or (chain[1][-1:] or (chain[0],)) != ("global_options",):
            return False
        return any(target.startswith("npu_device") for target in self.aliases.get(chain[0], ()))

    def _tree_path(self, target: ast.Attribute) -> str | None:
        attributes = []
        node: ast.expr = target
        while type(node) is ast.Attribute:
            attributes.append(node.attr)
            node = node.value
        tree = (type(node) is ast.Name and node.id in self._option_trees) or (
            type(node) is ast.Call and self._is_option_tree(node)
        )
        return ".".join(reversed(attributes)) if tree else None

    # --- expressions: every use of a recorded name, and the calls that may configure the NPU ---------------

    def expressions(self, tree: ast.Module) -> None:
        """One pass over every node (depth first, parents before children): dotted names are taken whole, so
        the nodes inside a chain are never visited on their own."""
        self._bound: set[str] = set(self._bindings)
        self._free: dict[tuple[str, tuple[str, ...]], tuple[int, bool, int]] = {}
        self._call_variables = {
            calls[0]: name
            for name, calls in self._assigned_calls.items()
            if len(calls) == 1 and self._bindings[name] == 1
        }
        recorded: set[int] = set()
        stack: list[ast.AST] = [tree]
        push, pop, use, bound = stack.append, stack.pop, self._use, self._bound
        node_type, attribute, name_type, call_type, arg_type = ast.AST, ast.Attribute, ast.Name, ast.Call, ast.arg
        definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        while stack:
            node = pop()
            kind = type(node)
            if kind is attribute or kind is name_type:
                use(node, False, push)
                continue
            if kind is call_type:
                if id(node) not in recorded:
                    self._call(node, recorded)
                use(node.func, True, push)
                stack.extend(node.args)
                stack.extend(node.keywords)
                continue
            if kind in definitions or kind is ast.ExceptHandler or kind is ast.MatchAs or kind is ast.MatchStar:
                bound.add(node.name)
            elif kind is arg_type:
                bound.add(node.arg)
            elif kind is ast.MatchMapping:
                bound.add(node.rest)
            elif kind is ast.Global or kind is ast.Nonlocal:
                bound.update(node.names)
            for field in node._fields:
                value = getattr(node, field, None)
                if type(value) is list:
                    stack.extend(item for item in value if isinstance(item, node_type))
                elif isinstance(value, node_type):
                    push(value)
        # names the file binds nowhere may come from a star import; the classifier decides
        self.uses.update({key: seen for key, seen in self._free.items() if key[0] not in bound})
        if self.adapter_star:
            self._drop_local_calls(bound)

    def _use(self, node: ast.expr, called: bool, push: Callable[[ast.AST], None]) -> None:
        """Record a dotted name rooted at a recorded (or possibly star-imported) variable; traverse anything
        else the expression holds."""
        attributes = []
        base = node
        while type(base) is ast.Attribute:
            attributes.append(base.attr)
            base = base.value
        if type(base) is not ast.Name:
            push(base)
            return
        if not attributes and type(base.ctx) is not ast.Load:
            self._bound.add(base.id)
            return
        key = (base.id, tuple(reversed(attributes)))
        if base.id in self.aliases:
            uses = self.uses
        elif self.adapter_star and base.id not in _BUILTINS:
            uses = self._free
        else:
            return
        seen = uses.get(key)
        line, place = node.lineno, self.place(node.lineno)
        uses[key] = (min(seen[0], line), seen[1] or called, min(seen[2], place)) if seen else (line, called, place)

    def _drop_local_calls(self, bound: set[str]) -> None:
        """Forget calls of names the file binds itself (loop variables, `with ... as`, arguments)."""
        kept = {
            index: call for index, call in enumerate(self.calls) if call.root in self.aliases or call.root not in bound
        }
        renumbered = {old: new for new, old in enumerate(kept)}

        def renumber(value: Value) -> Value:
            if value.kind != "call":
                return value
            if value.data in renumbered:
                return Value("call", renumbered[value.data])
            dropped = self.calls[value.data]
            return Value("runtime", ".".join((dropped.root, *dropped.attributes)) + "(...)")

        self.calls = [
            call._replace(
                args=tuple(map(renumber, call.args)),
                keywords=tuple((name, renumber(value), line) for name, value, line in call.keywords),
            )
            for call in kept.values()
        ]

    def _recordable(self, root: str) -> bool:
        targets = self.aliases.get(root)
        if targets is not None:
            return any(target.split(".")[0] in ADAPTER_ROOTS for target in targets)
        return self.adapter_star and root not in _BUILTINS and root not in self._bindings

    def _call(self, node: ast.Call, recorded: set[int]) -> int | None:
        chain = _chain(node.func)
        if chain is None or not self._recordable(chain[0]):
            return None
        recorded.add(id(node))
        args = tuple(self._argument(arg, recorded) for arg in node.args if type(arg) is not ast.Starred)
        keywords = tuple(
            (keyword.arg, self._argument(keyword.value, recorded), keyword.value.lineno) for keyword in node.keywords
        )
        self.calls.append(
            Call(
                node.lineno,
                chain[0],
                chain[1],
                args,
                keywords,
                any(type(arg) is ast.Starred for arg in node.args),
                self._call_variables.get(id(node)),
            )
        )
        return len(self.calls) - 1

    def _argument(self, node: ast.expr, recorded: set[int]) -> Value:
        if type(node) is ast.Call:
            index = self._call(node, recorded)
            if index is not None:
                return Value("call", index)
        return literal_value(node)
