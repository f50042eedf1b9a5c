"""The one registry of changes: every door's changes listed and undone, the process as it was before."""

import ast
import contextlib
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.cli import main

ROOT = Path(__file__).parent.parent
PACKAGE = ROOT / "npu_bridge_compat"


def test_attributes_are_replaced_once_and_restored_as_they_were():
    module = types.ModuleType("library")
    module.function = "original"

    class Base:
        def method(self):
            return "base"

    class Derived(Base):
        pass

    user_object = Derived()
    with changes.undone_after():
        first = changes.replace_attribute(module, "function", "ours", owner=Owner.ESTIMATOR_DOOR, reason="why")
        assert changes.replace_attribute(module, "function", "ours", owner=Owner.ESTIMATOR_DOOR, reason="why") is first
        changes.replace_attribute(module, "added", 1, owner=Owner.ESTIMATOR_DOOR, reason="why")
        changes.replace_attribute(Derived, "method", lambda self: "ours", owner=Owner.ESTIMATOR_DOOR, reason="why")
        changes.replace_attribute(user_object, "method", lambda: "instance", owner=Owner.ESTIMATOR_DOOR, reason="why")
        assert (module.function, module.added, Derived().method(), user_object.method()) == (
            "ours",
            1,
            "ours",
            "instance",
        )
        assert changes.original(module, "function") == "original" and changes.is_replaced(Derived, "method")
        with pytest.raises(
            RuntimeError, match="library.function was already replaced by Estimator door; session door asked"
        ):
            changes.replace_attribute(module, "function", "theirs", owner=Owner.SESSION_DOOR, reason="why")
    assert module.function == "original" and not hasattr(module, "added")
    assert "method" not in Derived.__dict__ and Derived().method() == "base"  # inherited again, not copied
    assert "method" not in vars(user_object) and user_object.method() == "base"
    assert not changes.is_replaced(Derived, "method")


def test_a_property_and_an_objects_class_are_set_back():
    class Model:
        def __init__(self):
            self._jit = True

        @property
        def jit_compile(self):
            return self._jit

        @jit_compile.setter
        def jit_compile(self, value):
            self._jit = value

    class Checked(Model):
        pass

    model = Model()
    with changes.undone_after():
        changes.replace_attribute(model, "jit_compile", False, owner=Owner.KERAS_CALL, reason="why")
        changes.replace_attribute(model, "__class__", Checked, owner=Owner.ESTIMATOR_DOOR, reason="why")
        assert model.jit_compile is False and type(model) is Checked
    assert model.jit_compile is True and type(model) is Model


def test_environment_finders_and_contexts_are_undone_newest_first(monkeypatch):
    monkeypatch.setenv("NPU_BRIDGE_COMPAT_TEST_SET", "user's")
    monkeypatch.delenv("NPU_BRIDGE_COMPAT_TEST_NEW", raising=False)
    finder = types.SimpleNamespace(find_spec=lambda *args: None)
    events = []

    @contextlib.contextmanager
    def switch():
        events.append("on")
        yield
        events.append("off")

    start = changes.mark()
    changes.set_environment("NPU_BRIDGE_COMPAT_TEST_SET", "ours", owner=Owner.PLAN_ENVIRONMENT, reason="why")
    changes.set_environment("NPU_BRIDGE_COMPAT_TEST_SET", "ours again", owner=Owner.PLAN_ENVIRONMENT, reason="why")
    changes.set_environment("NPU_BRIDGE_COMPAT_TEST_NEW", "1", owner=Owner.RUN, reason="why")
    changes.add_import_finder(finder, owner=Owner.TF1_WORLD, reason="why")
    changes.add_import_finder(finder, owner=Owner.TF1_WORLD, reason="why")
    changes.enter(switch(), "a switch", owner=Owner.PLAN_ENVIRONMENT, reason="why")
    changes.enter(switch(), "a switch", owner=Owner.PLAN_ENVIRONMENT, reason="why")
    assert sys.meta_path[0] is finder and sys.meta_path.count(finder) == 1 and events == ["on"]
    assert [change.target for change in changes.in_force()[-4:]] == [
        "$NPU_BRIDGE_COMPAT_TEST_SET",
        "$NPU_BRIDGE_COMPAT_TEST_NEW",
        "sys.meta_path[SimpleNamespace]",
        "a switch",
    ]
    assert [change.target for change in changes.undo(owner=Owner.RUN, since=start)] == ["$NPU_BRIDGE_COMPAT_TEST_NEW"]
    assert "NPU_BRIDGE_COMPAT_TEST_NEW" not in os.environ and os.environ["NPU_BRIDGE_COMPAT_TEST_SET"] == "ours again"
    changes.undo(since=start)
    assert os.environ["NPU_BRIDGE_COMPAT_TEST_SET"] == "user's" and finder not in sys.meta_path
    assert events == ["on", "off"]


def test_explain_changes_lists_what_is_in_force(capsys):
    with changes.undone_after():
        changes.set_environment("NPU_BRIDGE_COMPAT_TEST_LISTED", "1", owner=Owner.RUN, reason="fusion")
        assert main(["explain", "--changes"]) == 0
    out = capsys.readouterr().out
    assert "  run:\n    $NPU_BRIDGE_COMPAT_TEST_LISTED (environment): fusion" in out


def test_every_door_lists_its_changes_and_undoing_restores_the_process(tmp_path):
    """Importing changes nothing; after a run of each door (session through npu_init, Keras, Estimator on 2.15,
    npu_device, the TF 1.15 world) every change is listed, and undoing them gives back TensorFlow's and Keras'
    attributes, sys.meta_path, builtins.__import__, sys.excepthook and the environment."""
    result = subprocess.run(
        [
            sys.executable,
            "-W",
            "ignore",
            str(ROOT / "tests" / "scripts" / "changes_round_trip.py"),
            str(tmp_path / "m"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["changed_by_import"] == []
    in_force = set(outcome["in_force"])
    expected = {
        "sys.meta_path[_LegacyFinder]",
        "sys.meta_path[Tf1Finder]",
        "builtins.__import__",
        "tensorflow.function",
        "tensorflow.compat.v1.Session",
        "tensorflow.compat.v1.contrib",
        "tensorflow.python.ops.gen_nn_ops.fused_batch_norm_v3",
        "TensorFlow op determinism",
        "TensorFlow 2 behaviour",
        "the main thread's function-call config",
    }
    assert expected <= in_force, expected - in_force
    assert {f"{name}" for name in in_force if name.endswith(("Model.fit", "Model.evaluate", "Model.predict"))}
    assert "npu_bridge_compat changes in this process" in result.stdout
    assert (outcome["left_after_undo"], outcome["in_force_after_undo"]) == ([], 0)


PROCESS_WRITES = {
    "os.environ item assignment": lambda node: isinstance(node, ast.Subscript) and _dotted(node.value) == "os.environ",
    "sys / builtins attribute assignment": lambda node: (
        isinstance(node, ast.Attribute) and _dotted(node.value) in ("sys", "builtins")
    ),
}


def _dotted(node) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def _process_writes(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
        )
        for target in targets:
            found += [f"line {node.lineno}: {what}" for what, matches in PROCESS_WRITES.items() if matches(target)]
        if isinstance(node, ast.Call) and _dotted(node.func) in (
            "os.environ.setdefault",
            "os.environ.pop",
            "os.environ.update",
            "os.putenv",
            "sys.meta_path.insert",
            "sys.meta_path.append",
        ):
            found.append(f"line {node.lineno}: {_dotted(node.func)}")
    return found


def test_the_process_check_finds_direct_writes(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "os.environ['A'] = '1'\nsys.excepthook = hook\nbuiltins.__import__ = importer\n"
        "sys.meta_path.insert(0, finder)\nos.environ.setdefault('B', '2')\nenv = dict(os.environ)\nenv['C'] = '3'\n"
    )
    assert _process_writes(sample) == [
        "line 1: os.environ item assignment",
        "line 2: sys / builtins attribute assignment",
        "line 3: sys / builtins attribute assignment",
        "line 4: sys.meta_path.insert",
        "line 5: os.environ.setdefault",
    ]


@pytest.mark.parametrize(
    "path",
    sorted(path for path in PACKAGE.rglob("*.py") if path.name != "changes.py"),
    ids=lambda path: str(path.relative_to(PACKAGE)),
)
def test_the_process_is_changed_only_through_the_registry(path):
    assert _process_writes(path) == []
