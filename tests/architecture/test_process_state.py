"""The package keeps its process-wide state in the registry (`changes.ProcessState`), where `explain --changes`
lists it and `fresh_state` gives a test a process that has not used it yet: no module starts a mutable collection
of its own at import to fill later. Read statically: a module-level assignment of an empty container (`{}`, `[]`,
`set()`, `dict()`, a weak dictionary, a Counter, a deque, ...) fails here, with where it is. Tables filled at
import (a dict literal with entries) are data, not state, and are not read."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "npu_bridge_compat"
EMPTY_CONTAINERS = {
    "set",
    "list",
    "dict",
    "WeakKeyDictionary",
    "WeakValueDictionary",
    "WeakSet",
    "defaultdict",
    "OrderedDict",
    "Counter",
    "deque",
}

# Tables that start empty and are filled while their module is read (a decorator listing what it decorates): data.
FILLED_AT_IMPORT = {"npu_bridge_compat/options/rules.py: RULES"}  # the cross-option rules, listed by @rule


def _empty_container(value: ast.expr) -> bool:
    if isinstance(value, (ast.List, ast.Set)):
        return not value.elts
    if isinstance(value, ast.Dict):
        return not value.keys
    if not isinstance(value, ast.Call):
        return False
    function = value.func
    called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
    given = len(value.args) + len(value.keywords)
    return called in EMPTY_CONTAINERS and given <= (1 if called == "defaultdict" else 0)  # defaultdict: its factory


def started_state(source: str) -> list[tuple[int, str]]:
    """(line, name) of each module-level name bound to an empty mutable container in a module's source."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if _empty_container(value):
            found += [(node.lineno, ast.unparse(target)) for target in targets]
    return found


def test_the_check_finds_each_form_of_started_state():
    source = (
        "_seen = set()\n"
        "WARNED: set[str] = set()\n"
        "_cache = {}\n"
        "_loops: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()\n"
        "_counts = collections.Counter()\n"
        "_by_key = collections.defaultdict(list)\n"
        "ORDER = ['a', 'b']\n"  # a table: not found
        "TABLE = {'a': 1}\n"  # a table: not found
        "KEY = changes.ProcessState('what', Owner.RUN, set)\n"  # the registry's: not found
        "def f():\n    local = []\n"  # not module level: not found
    )
    assert [line for line, _ in started_state(source)] == [1, 2, 3, 4, 5, 6]


def test_no_module_starts_state_of_its_own():
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, name in started_state(path.read_text(encoding="utf-8"))
        if f"{path.relative_to(PACKAGE.parent)}: {name}" not in FILLED_AT_IMPORT
    ]
    assert not found, "module-level state outside the registry (use changes.ProcessState):\n" + "\n".join(found)
