"""TensorFlow's internals stay in npu_bridge_compat/compat/ (and the changes registry, which restores what it
replaced), checked as an allow-list: outside them no module names a private TensorFlow, Keras or Estimator module
(`tensorflow.python`, `keras.src`, `tf_keras.src`, `tensorflow_estimator.python`) in an import or a string, and no
module reaches a private attribute (`_name`) that the package does not define itself outside compat/, whether by
name, through getattr / setattr / hasattr / delattr, or through an object's `__dict__` or `vars()`. A class of the
package that subclasses a foreign one (a Session, a Keras layer, a thread) does not touch its bases' private names
on itself either: they are the base's, reached through compat/ too. A new reach belongs in compat/ behind a
function named for what it does."""

import ast
import functools
import importlib
import importlib.util
import inspect
import textwrap
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[2] / "npu_bridge_compat"
ALLOWED = (PACKAGE / "compat", PACKAGE / "changes.py")
PRIVATE_MODULES = ("tensorflow.python", "tensorflow_estimator.python", "keras.src", "tf_keras.src")
# The TF 1.15 and TF 2.6 worlds' name tables hold the module paths of those versions as data: the worlds' import
# finders read them to resolve a ported program's imports, and no code of the package imports them itself.
# The finders (world.py) resolve them.
WORLDS = (PACKAGE / "legacy" / "tf1", PACKAGE / "legacy" / "tf26", PACKAGE / "legacy" / "era")
NAME_TABLES = frozenset(world / name for world in WORLDS for name in ("table.py", "world.py")) | {
    PACKAGE / "imports" / "world.py"  # the one engine the worlds' tables are read by
}
REACHING_BUILTINS = ("getattr", "setattr", "hasattr", "delattr")
# Python's own documented names that begin with an underscore (namedtuple's API, os._exit, sys._getframe).
PYTHON_DOCUMENTED = frozenset({"_exit", "_getframe", "_asdict", "_fields", "_replace", "_make", "_field_defaults"})
# The methods TensorFlow's v1 Optimizer leaves to its subclasses ("relies on the subclass implementing ...
# _create_slots(), _prepare(), _apply_dense(), and _apply_sparse()", and their resource-variable forms).
SUBCLASS_HOOKS = frozenset(
    {"_create_slots", "_prepare", "_apply_dense", "_apply_sparse", "_resource_apply_dense", "_resource_apply_sparse"}
)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined_names(paths) -> frozenset[str]:
    """Every private name the package defines: functions, classes, module names, assignment targets, attributes
    it sets on its own objects, keyword arguments and parameters."""
    names = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[-1])
            elif isinstance(node, ast.Call) and _call_name(node) in ("setattr", "__setattr__") and len(node.args) > 1:
                if isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
                    names.add(node.args[1].value)  # object.__setattr__(self, "_path", ...) in a frozen class
        names.add(path.stem)
    return frozenset(name for name in names if _is_private(name)) | PYTHON_DOCUMENTED


def _call_name(call: ast.Call) -> str | None:
    function = call.func
    return function.id if isinstance(function, ast.Name) else getattr(function, "attr", None)


def _docstrings(tree) -> set[int]:
    """The string constants that are docstrings or other bare strings (prose, not names the code uses)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }


SOURCES = sorted(path for path in PACKAGE.rglob("*.py") if not any(a == path or a in path.parents for a in ALLOWED))
OWN_PRIVATE_NAMES = _defined_names(SOURCES)  # what compat/ writes on TensorFlow's objects is not the package's own


def _private_reaches(path: Path, own: frozenset[str] = OWN_PRIVATE_NAMES) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    prose = _docstrings(tree)
    own_modules = {
        (alias.asname or alias.name).split(".")[-1]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("npu_bridge_compat")
        for alias in node.names
    }
    found = []

    def reach(node, what: str) -> None:
        found.append(f"line {node.lineno}: {what}")

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            modules = []
        for module in modules:
            if module.startswith(PRIVATE_MODULES):
                reach(node, f"import of {module}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and path not in NAME_TABLES:
            if id(node) not in prose and any(
                f"{module}." in node.value or node.value == module for module in PRIVATE_MODULES
            ):
                reach(node, f"module path in a string: {node.value[:60]!r}")
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            if _is_private(node.attr) and node.attr not in own:
                reach(node, f"private attribute {node.attr}")
            if node.attr == "__dict__" and not _own_object(node.value, own_modules):
                reach(node, "an object's __dict__")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            if node.func.id in REACHING_BUILTINS and len(node.args) >= 2:
                name = node.args[1]
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    if _is_private(name.value) and name.value not in own:
                        reach(node, f"{node.func.id} of private attribute {name.value}")
                elif isinstance(name, ast.JoinedStr) and name.values:
                    head = name.values[0]
                    if isinstance(head, ast.Constant) and str(head.value).startswith("_"):
                        reach(node, f"{node.func.id} of a private attribute named by an f-string")
            if node.func.id == "vars" and not _own_object(node.args[0], own_modules):
                reach(node, "vars() of an object")
    return sorted(found, key=lambda line: int(line.split()[1].rstrip(":")))


def _own_object(node, own_modules: set[str]) -> bool:
    """`self`, `cls`, or a module of this package imported by name: what the package may look inside."""
    return isinstance(node, ast.Name) and (node.id in ("self", "cls") or node.id in own_modules)


def test_the_boundary_check_finds_private_reaches_made_any_way(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from tensorflow.python.eager import context\n"
        "import keras.src.utils\n"
        "graph._unsafe_unfinalize()\n"
        "config = session._config\n"
        "counter = getattr(model, '_train_counter')\n"
        "setattr(estimator, '_master', target)\n"
        "importlib.import_module('tf_keras.src.engine')\n"
        "state = model.__dict__\n"
        "step = getattr(model, f'_{mode}_counter')\n"
        "self._own = 1\n"
        "value = other._own\n"
        "table = vars(module)\n"
    )
    assert _private_reaches(sample, own=frozenset({"_own"})) == [
        "line 1: import of tensorflow.python.eager",
        "line 2: import of keras.src.utils",
        "line 3: private attribute _unsafe_unfinalize",
        "line 4: private attribute _config",
        "line 5: getattr of private attribute _train_counter",
        "line 6: setattr of private attribute _master",
        "line 7: module path in a string: 'tf_keras.src.engine'",
        "line 8: an object's __dict__",
        "line 9: getattr of a private attribute named by an f-string",
        "line 12: vars() of an object",
    ]


@functools.cache
def _privates_of(cls: type) -> frozenset[str]:
    """The private names a class defines: in its namespace, and those its source sets on `self`."""
    names = {name for name in vars(cls) if _is_private(name)}
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):  # a class without Python source (an extension type): its namespace says it all
        return frozenset(names)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _is_private(node.attr):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                names.add(node.attr)
    return frozenset(names)


def _inherited_reaches(path: Path, module=None) -> list[str]:
    """`self._name` / `cls._name` / `super()._name` in a class of `path` where a foreign base class (one of
    TensorFlow, Keras, Python's) defines `_name`. Imports the module (`module`, when given) to know its classes'
    bases."""
    tree = ast.parse(path.read_text(), filename=str(path))
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.bases]
    if not classes:
        return []
    if module is None:
        try:
            module = importlib.import_module(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        except ImportError:  # a module this line cannot load (TPUEstimator without tf.estimator): checked on 2.15
            return []
    found = []
    for node in classes:
        cls = vars(module).get(node.name)
        if not isinstance(cls, type):
            continue
        foreign = [base for base in cls.__mro__[1:] if base is not object and not _is_packages(base)]
        inherited = frozenset().union(*map(_privates_of, foreign)) - PYTHON_DOCUMENTED - SUBCLASS_HOOKS
        for reach in ast.walk(node):
            if not (isinstance(reach, ast.Attribute) and reach.attr in inherited):
                continue
            on_self = isinstance(reach.value, ast.Name) and reach.value.id in ("self", "cls")
            on_super = isinstance(reach.value, ast.Call) and _call_name(reach.value) == "super"
            if on_self or on_super:
                owner = next(base for base in foreign if reach.attr in _privates_of(base))
                found.append(f"line {reach.lineno}: {node.name} reaches {owner.__qualname__}'s {reach.attr}")
    return found


def _is_packages(cls: type) -> bool:
    return cls.__module__ == "npu_bridge_compat" or cls.__module__.startswith("npu_bridge_compat.")


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(PACKAGE)))
def test_no_private_tensorflow_reach_outside_compat(path):
    assert _private_reaches(path) + _inherited_reaches(path) == []


def test_the_boundary_check_finds_a_subclass_reaching_its_bases_privates(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import threading\n"
        "import tensorflow as tf\n"
        "class Checked(tf.compat.v1.Session):\n"
        "    def version(self):\n"
        "        return self._graph.version\n"
        "    def own(self):\n"
        "        self._mine = 1\n"
        "        return self.graph.version\n"
        "class Watchdog(threading.Thread):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self._stop = threading.Event()\n"
    )
    spec = importlib.util.spec_from_file_location("boundary_sample", sample)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert _inherited_reaches(sample, module) == [
        "line 5: Checked reaches BaseSession's _graph",
        "line 12: Watchdog reaches Thread's _stop",
    ]


DOORS = {
    "estimator": "npu_bridge_compat.estimator",
    "session.py": "npu_bridge_compat.session",
    "keras.py": "npu_bridge_compat.keras",
    "tf2": "npu_bridge_compat.tf2",
}


def _imported_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


@pytest.mark.parametrize("door", DOORS)
def test_no_door_imports_another(door):
    """The four doors stand side by side over the run-time core: what two share lives in runtime/."""
    files = [PACKAGE / door] if door.endswith(".py") else sorted((PACKAGE / door).rglob("*.py"))
    others = tuple(module for name, module in DOORS.items() if name != door)
    reached = {
        f"{path.relative_to(PACKAGE)} imports {module}"
        for path in files
        for module in _imported_modules(path)
        if any(module == other or module.startswith(other + ".") for other in others)
    }
    assert reached == set()
