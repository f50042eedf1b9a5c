"""Layers that only look down: no module imports one of a layer above its own (docs/architecture.md, "Layers").

Bottom to top: the registry, the errors, logging and compat/ (TensorFlow's internals); distributed/ (the ranks,
the cluster, the collectives: TensorFlow-level machinery that reads no option, and whose rank facts the planner
reads); options/; fused/ (Ascend's kernels, which read the options' grammars); plan/ (with the package's own
__init__, which exports options and plan); runtime/; the doors (estimator/, session.py, keras.py, tf2/, and the
adapter's helper modules beside them: scope.py, util.py, ops.py, loss_scale.py, onnx_graph.py); legacy/ (the
adapter's import paths and the TF 1.15 / TF 2.6 worlds, over the doors); scan/ (the static report, which answers
a script's names from legacy's tables, as `run` would serve them); runner.py (`run`); scan's trials (the child that
runs a script through the runner); the CLI. A layer may import its own and those below; the doors also stand side
by side (test_compat_boundary.py: no door imports another).
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "npu_bridge_compat"
ROOT = "npu_bridge_compat"
LAYERS = (
    ("the registry, errors, logs and compat/", ("changes", "errors", "logs", "compat")),
    ("distributed/", ("distributed",)),
    ("options/", ("options",)),
    ("fused/", ("fused",)),
    ("plan/", ("plan", "")),  # "": the package's __init__
    ("runtime/", ("runtime",)),
    ("the doors", ("estimator", "session", "keras", "tf2", "scope", "util", "ops", "loss_scale", "onnx_graph")),
    ("legacy/", ("legacy",)),
    ("scan/", ("scan",)),
    ("runner.py", ("runner",)),
    ("scan's trials", ("scan.trial_child",)),
    ("the CLI", ("cli", "__main__")),
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


def imported_modules(source: str, is_module) -> list[tuple[int, str]]:
    """(line, module) for each of the package's modules `source` imports; `from package import name` counts as
    importing the submodule `name` where `is_module` says it is one, else the package."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.split(".")[0] == ROOT]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == ROOT:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.append((node.lineno, submodule if is_module(submodule) else node.module))
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
