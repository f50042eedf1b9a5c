"""No test reaches into a private name to set the package up: tests build what they need through public means
(facts passed in, `fresh_state` for the process-wide state kept in the registry, the arguments a function takes).
Read statically: every monkeypatch.setattr / delattr, unittest.mock.patch / patch.object and setattr call in
tests/ that names a private attribute (one leading underscore) fails here, with where it is."""

import ast
from pathlib import Path

TESTS = Path(__file__).parents[1]
PATCHERS = {"setattr", "delattr", "patch", "object"}  # monkeypatch.setattr, mock.patch, mock.patch.object, ...


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_patches(source: str) -> list[tuple[int, str]]:
    """(line, attribute) of each patch of a private attribute in a test module's source."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
        if name not in PATCHERS or not node.args:
            continue
        strings = [arg.value for arg in node.args[:2] if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
        for text in strings:
            attribute = text.rsplit(".", 1)[-1]
            if _private(attribute):
                found.append((node.lineno, text))
    return found


def test_the_check_finds_each_form_of_private_patch():
    source = (
        "monkeypatch.setattr(doors, '_unmeasured', set())\n"
        "monkeypatch.setattr('npu_bridge_compat.runtime.doors._warned', set())\n"
        "monkeypatch.delattr(module, '_cache')\n"
        "mock.patch.object(trial, '_installed', lambda m: False)\n"
        "mock.patch('npu_bridge_compat.scan.trial._installed')\n"
        "setattr(estimator, '_master', target)\n"
        "monkeypatch.setattr(TimedTrial, 'RUN_SECONDS', 0.0)\n"  # public: not found
        "monkeypatch.setattr(model, '__call__', call)\n"  # a dunder: Python's own protocol, not found
    )
    assert [line for line, _ in private_patches(source)] == [1, 2, 3, 4, 5, 6]


def test_no_test_patches_a_private_name():
    found = [
        f"{path.relative_to(TESTS)}:{line}: {attribute}"
        for path in sorted(TESTS.rglob("*.py"))
        if "data" not in path.relative_to(TESTS).parts and path.name != Path(__file__).name
        for line, attribute in private_patches(path.read_text(encoding="utf-8"))
    ]
    assert not found, "tests patch private names (build what the test needs instead):\n" + "\n".join(found)
