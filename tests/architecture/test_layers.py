"""Layers that only look down: no module imports one of a layer above its own (docs/architecture.md, "Layers").

Bottom to top: the registry, the errors, logging, compat/ (TensorFlow's internals) and imports/ (the engine that
serves a program's imports from worlds' tables), compat/ never importing imports/; the Estimator library
(estimator_library.py: tensorflow-estimator 2.15 served as a world on TensorFlow 2.16 and later, and tf.estimator as
the doors get it on any line); distributed/
(the ranks, the cluster, the collectives: TensorFlow-level machinery that reads no option, and whose rank facts the
planner reads); options/; fused/ (Ascend's kernels, which read the options' grammars); plan/ (with the package's
own __init__, which exports options and plan); runtime/; the doors (estimator/, session.py, keras.py, tf2/, and the
adapter's helper modules beside them: scope.py, util.py, ops.py, loss_scale.py, onnx_graph.py); legacy/ (the
adapter's import paths and the TF 1.15 / TF 2.6 worlds, over the doors); a command's processes (`run` of a command
and its process-start hook, which scan's trials of launch scripts start too); scan/ (the static report, which answers
a script's names from legacy's tables, as `run` would serve them); runner.py (`run`); scan's trials (the child that
runs a script through the runner); the CLI;
a script of a command (started by the hook through the CLI's `run`). A layer may import its own and those below;
the doors also stand side by side (test_compat_boundary.py: no door imports another).
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[2] / "npu_bridge_compat"
ROOT = "npu_bridge_compat"
LAYERS = (
    ("the registry, errors, logs, compat/ and imports/", ("changes", "errors", "logs", "compat", "imports")),
    ("the Estimator library", ("estimator_library",)),
    ("distributed/", ("distributed",)),
    ("options/", ("options",)),
    ("fused/", ("fused",)),
    ("plan/", ("plan", "")),  # "": the package's __init__
    ("runtime/", ("runtime",)),
    ("the doors", ("estimator", "session", "keras", "tf2", "scope", "util", "ops", "loss_scale", "onnx_graph")),
    ("legacy/", ("legacy",)),
    ("a command's processes", ("processes",)),
    ("scan/", ("scan",)),
    ("runner.py", ("runner",)),
    ("scan's trials", ("scan.trial_child",)),
    ("the CLI", ("cli", "__main__")),
    ("a script of a command", ("processes.child", "processes.__main__")),
)


def layer_of(module: str) -> int:
    """The index in LAYERS of `module` (a dotted name below npu_bridge_compat, "" for the package itself): the
    layer whose entry is the longest prefix of it."""
    relative = module.removeprefix(ROOT).removeprefix(".")
    matches = [
        (len(entry), index)
        for index, (_, entries) in enumerate(LAYERS)
        for entry in entries
        if relative == entry or relative.startswith(entry + ".") or (entry == "" and relative == "")
    ]
    if not matches:
        raise LookupError(f"{module} belongs to no layer: add it to LAYERS (and docs/architecture.md)")
    return max(matches)[1]


def imported_modules(source: str, is_module, package: str | None = None) -> list[tuple[int, str]]:
    """(line, module) for each of the package's modules `source` imports, anywhere in it (inside functions too);
    `from package import name` counts as importing the submodule `name` where `is_module` says it is one, else the
    package. Relative imports count where `package` (the one `source` is in) is given."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.split(".")[0] == ROOT]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            elif package is not None:
                base = ".".join([package.rsplit(".", node.level - 1)[0], *filter(None, [node.module])])
            else:
                continue
            if base.split(".")[0] != ROOT:
                continue
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.append((node.lineno, submodule if is_module(submodule) else base))
    return found


def _is_package_module(module: str) -> bool:
    path = PACKAGE.parent.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def upward_imports(module: str, source: str, is_module=_is_package_module) -> list[str]:
    own = layer_of(module)
    return [
        f"line {line}: imports {target} ({LAYERS[layer_of(target)][0]}, above {LAYERS[own][0]})"
        for line, target in imported_modules(source, is_module)
        if layer_of(target) > own
    ]


MODULES = {
    ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): path
    for path in sorted(PACKAGE.rglob("*.py"))
}


def parent_packages(target: str, importer: str) -> list[str]:
    """The packages whose `__init__` importing `target` runs first, besides those already running for `importer`
    (its own parents): `compat.keras` brings `compat`'s `__init__` to a module outside compat/. The package
    itself (`npu_bridge_compat`) is left out: it is loaded before any of its modules, by every one of them."""
    parts = target.split(".")
    parents = (".".join(parts[:cut]) for cut in range(2, len(parts)))
    return [parent for parent in parents if not (importer == parent or importer.startswith(parent + "."))]


def import_graph(modules: dict[str, Path], is_module=_is_package_module) -> dict[str, dict[str, int]]:
    """module -> {module it imports: the first line that does}, for the package's modules; importing a module also
    imports its parent packages (parent_packages), whose `__init__` may import more."""
    graph = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        imports: dict[str, int] = {}
        for line, target in sorted(imported_modules(path.read_text(), is_module, package)):
            for imported in (*parent_packages(target, module), target):
                if imported != module:
                    imports.setdefault(imported, line)
        graph[module] = imports
    return graph


def import_loops(graph: dict[str, dict[str, int]]) -> list[str]:
    """Each set of modules that import each other, directly or through others, as one of its loops:
    'a (line 3) -> b (line 9) -> a'."""
    reach = {}
    for start in graph:
        seen, todo = set(), list(graph[start])
        while todo:
            module = todo.pop()
            if module not in seen:
                seen.add(module)
                todo += graph.get(module, {})
        reach[start] = seen
    loops, placed = [], set()
    for start in sorted(graph):
        if start in placed or start not in reach[start]:
            continue
        members = {module for module in reach[start] if start in reach.get(module, ())}
        placed |= members
        paths, path = {start: [start]}, None
        while path is None:  # the shortest way back to `start`
            for module, way in list(paths.items()):
                for target in graph[module]:
                    if target == start:
                        path = path or way
                    elif target in members and target not in paths:
                        paths[target] = [*way, target]
        steps = [f"{module} (line {graph[module][target]})" for module, target in zip(path, [*path[1:], start])]
        loops.append(" -> ".join([*steps, start]))
    return loops


@pytest.mark.parametrize("module", MODULES)
def test_no_module_imports_a_layer_above_its_own(module):
    assert upward_imports(module, MODULES[module].read_text()) == []


def test_the_layer_check_finds_upward_imports():
    sample = (
        "from npu_bridge_compat import changes, session\n"
        "from npu_bridge_compat.options import OPTIONS\n"
        "import npu_bridge_compat.cli\n"
        "from npu_bridge_compat.estimator.config import NPURunConfig\n"
        "from npu_bridge_compat.plan import build_plan\n"
    )
    assert upward_imports("npu_bridge_compat.plan.sample", sample) == [
        "line 1: imports npu_bridge_compat.session (the doors, above plan/)",
        "line 3: imports npu_bridge_compat.cli (the CLI, above plan/)",
        "line 4: imports npu_bridge_compat.estimator.config (the doors, above plan/)",
    ]


def test_no_module_imports_itself_through_others():
    """No import loop in the package, counting the imports inside functions: a loop makes what a module finds
    at import depend on which of its members was imported first."""
    assert import_loops(import_graph(MODULES)) == []


def written_package_graph(tmp_path, sources: dict[str, str]):
    """The import graph of a package written under tmp_path from {file: source}."""
    package = tmp_path / ROOT
    for name, source in sources.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(source)
    modules = {
        ".".join(path.relative_to(tmp_path).with_suffix("").parts).removesuffix(".__init__"): path
        for path in sorted(package.rglob("*.py"))
    }

    def is_module(module: str) -> bool:
        path = tmp_path.joinpath(*module.split("."))
        return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()

    return import_graph(modules, is_module)


def test_the_loop_check_finds_loops_through_imports_inside_functions(tmp_path):
    package = tmp_path / ROOT
    (package / "sub").mkdir(parents=True)
    sources = {
        "__init__.py": "",
        "a.py": "from npu_bridge_compat import b\n",
        "b.py": "import os\n\n\ndef late():\n    from npu_bridge_compat.sub import c\n",
        "sub/__init__.py": "from . import c\n",
        "sub/c.py": "from .. import a\nfrom npu_bridge_compat.sub import d\n",
        "sub/d.py": "from npu_bridge_compat import changes\n",
        "e.py": "import npu_bridge_compat.e\n",
    }
    assert import_loops(written_package_graph(tmp_path, sources)) == [
        "npu_bridge_compat.a (line 1) -> npu_bridge_compat.b (line 5) -> npu_bridge_compat.sub.c (line 1) -> "
        "npu_bridge_compat.a",
    ]


def test_the_loop_check_follows_the_parent_packages_an_import_runs(tmp_path):
    """Importing `pkg.mod` runs `pkg/__init__.py` first: a loop through a package's `__init__` is a loop (the one
    compat/ and imports/ had: compat's __init__ -> compat.estimator -> compat.estimator_library -> imports.world ->
    compat.keras, which runs compat's __init__)."""
    package = tmp_path / ROOT
    for folder in ("low", "engine"):
        (package / folder).mkdir(parents=True)
    sources = {
        "__init__.py": "",
        "low/__init__.py": "from npu_bridge_compat.low import door\n",
        "low/door.py": "from npu_bridge_compat.engine.world import World\n",
        "low/helpers.py": "",
        "engine/__init__.py": "",
        "engine/world.py": "from npu_bridge_compat.low.helpers import helper\n",
    }
    assert import_loops(written_package_graph(tmp_path, sources)) == [
        "npu_bridge_compat.engine.world (line 1) -> npu_bridge_compat.low (line 1) -> npu_bridge_compat.low.door "
        "(line 1) -> npu_bridge_compat.engine.world",
    ]


def test_compat_never_imports_the_import_engine():
    """compat/ is below the engine that reads its helpers (imports/ imports compat.keras and compat.versions)."""
    assert {
        module: sorted(target for target in graph if target.startswith(f"{ROOT}.imports"))
        for module, graph in import_graph(MODULES).items()
        if module.startswith(f"{ROOT}.compat") and any(target.startswith(f"{ROOT}.imports") for target in graph)
    } == {}


def test_every_part_of_the_package_has_a_layer():
    assert sorted({LAYERS[layer_of(module)][0] for module in MODULES}) == sorted(name for name, _ in LAYERS)


def test_scan_checks_configurations_through_options_and_plan_only():
    """The configuration checks of `scan` read the option table, readers and rules and the planner, never a door:
    what NPURunConfig's arguments mean lives in options/run_config.py."""
    allowed = ("options", "plan", "changes", "errors", "scan.reader", "scan.report")
    imports = imported_modules((PACKAGE / "scan" / "configs.py").read_text(), _is_package_module)
    assert [
        target
        for _, target in imports
        if not any(target == f"{ROOT}.{entry}" or target.startswith(f"{ROOT}.{entry}.") for entry in allowed)
    ] == []
