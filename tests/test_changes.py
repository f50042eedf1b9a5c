"""The one registry of changes: every door's changes listed and undone, the process as it was before."""

import contextlib
import json
import logging
import os
import subprocess
import sys
import types
import warnings
from pathlib import Path

import pytest

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.cli import main
from npu_bridge_compat.errors import NpuCompatWarning

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
            changes.ChangeConflict,
            match="^library.function: Estimator door set it to 'ours'; session door asked for 'theirs'. Both cannot",
        ):
            changes.replace_attribute(module, "function", "theirs", owner=Owner.SESSION_DOOR, reason="why")
    assert module.function == "original" and not hasattr(module, "added")
    assert "method" not in Derived.__dict__ and Derived().method() == "base"  # inherited again, not copied
    assert "method" not in vars(user_object) and user_object.method() == "base"
    assert not changes.is_replaced(Derived, "method")


def test_what_a_library_rewrote_while_loaded_is_recorded_and_put_back():
    class Hook:
        def __init__(self):
            self.made = "original"

    class Pair(tuple):
        pass

    before = {
        (Hook, "__init__"): Hook.__dict__.get("__init__", changes.NOTHING),
        (Pair, "__new__"): Pair.__dict__.get("__new__", changes.NOTHING),
    }
    original = Hook.__init__

    def deprecated(self):  # what a library's own decorator leaves in the class while it loads
        original(self)
        self.made = "deprecated"

    with changes.undone_after():
        Hook.__init__ = deprecated
        made = changes.record_library_rewrites(before, owner=Owner.ESTIMATOR_LIBRARY, reason="why")
        assert [change.target for change in made] == [f"{__name__}.{Hook.__qualname__}.__init__"]
        assert Hook().made == "deprecated" and changes.is_replaced(Hook, "__init__")
    assert Hook.__init__ is original and Hook().made == "original" and "__new__" not in Pair.__dict__


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


def test_an_untracked_change_passes_the_classs_own_setattr_both_ways():
    class Tracking:  # as a Keras model tracks what it holds
        def __init__(self):
            object.__setattr__(self, "seen", [])
            self.function = "own"

        def __setattr__(self, name, value):
            self.seen.append(("set", name))
            object.__setattr__(self, name, value)

        def __delattr__(self, name):
            self.seen.append(("delete", name))
            object.__delattr__(self, name)

        def step(self):
            return "own step"

    model = Tracking()
    model.seen.clear()
    with changes.undone_after():
        for name, value in (("function", "ours"), ("step", lambda: "our step")):
            changes.replace_attribute(model, name, value, owner=Owner.KERAS_CALL, reason="why", untracked=True)
        assert (model.function, model.step()) == ("ours", "our step")
    assert (model.function, model.step(), "step" in vars(model)) == ("own", "own step", False)
    assert model.seen == []
    with changes.undone_after():
        changes.replace_attribute(model, "function", "ours", owner=Owner.KERAS_CALL, reason="why")
    assert model.seen == [("set", "function"), ("set", "function")]


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
    changes.set_environment("NPU_BRIDGE_COMPAT_TEST_SET", "ours", owner=Owner.PLAN_ENVIRONMENT, reason="why")
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
    assert "NPU_BRIDGE_COMPAT_TEST_NEW" not in os.environ and os.environ["NPU_BRIDGE_COMPAT_TEST_SET"] == "ours"
    changes.undo(since=start)
    assert os.environ["NPU_BRIDGE_COMPAT_TEST_SET"] == "user's" and finder not in sys.meta_path
    assert events == ["on", "off"]


def test_a_setting_is_written_through_its_own_writer_and_another_value_is_a_conflict():
    switch = {"on": False}
    written = []

    def write(value):
        written.append(value)
        switch["on"] = value

    with changes.undone_after():
        first = changes.change_setting(
            "a switch", True, read=lambda: switch["on"], write=write, owner=Owner.PLAN_SETTINGS, reason="why"
        )
        again = changes.change_setting(
            "a switch", True, read=lambda: switch["on"], write=write, owner=Owner.PLAN_SETTINGS, reason="why"
        )
        assert again is first and written == [True] and first.kind is changes.ChangeKind.SETTING
        with pytest.raises(
            changes.ChangeConflict,
            match=r"a switch: plan \(process settings\) set it to True; plan \(process settings\) asked for False",
        ):
            changes.change_setting(
                "a switch", False, read=lambda: switch["on"], write=write, owner=Owner.PLAN_SETTINGS, reason="why"
            )
        with pytest.raises(changes.ChangeConflict, match="a context: run set it to 1; scan asked for 2"):
            changes.enter(contextlib.nullcontext(), "a context", owner=Owner.RUN, reason="why", value=1)
            changes.enter(contextlib.nullcontext(), "a context", owner=Owner.SCAN, reason="why", value=2)
    assert switch == {"on": False} and written == [True, False]


def test_an_irreversible_change_is_listed_and_left_in_force():
    registry = changes.Registry()  # a registry of its own: the change it makes stays in force
    applied = []
    change = registry.change_irreversibly(
        "TensorFlow's test devices", ("GPU:0",), lambda: applied.append(1), owner=Owner.RANKS, reason="fixed at start"
    )
    again = registry.change_irreversibly(
        "TensorFlow's test devices", ("GPU:0",), lambda: applied.append(2), owner=Owner.RANKS, reason="again"
    )
    assert again is change and change.irreversible and applied == [1]
    with pytest.raises(changes.ChangeConflict, match=r"TensorFlow's test devices: ranks set it to \('GPU:0',\)"):
        registry.change_irreversibly("TensorFlow's test devices", (), applied.clear, owner=Owner.RANKS, reason="")
    registry.set_environment("NPU_BRIDGE_COMPAT_TEST_REVERSIBLE", "1", owner=Owner.RUN, reason="why")
    assert [undone.target for undone in registry.undo()] == ["$NPU_BRIDGE_COMPAT_TEST_REVERSIBLE"]
    assert registry.in_force() == [change] and applied == [1] and change not in changes.in_force()
    assert "NPU_BRIDGE_COMPAT_TEST_REVERSIBLE" not in os.environ
    assert registry.describe() == (
        "npu_bridge_compat changes in this process (1; npu_bridge_compat.changes.undo() undoes 0 of them, the rest "
        "are irreversible):\n  ranks:\n    TensorFlow's test devices (irreversible): fixed at start"
    )


_MODULE = types.ModuleType("library")
_FINDER = types.SimpleNamespace(find_spec=lambda *args: None)
_LOG_FILTER = logging.Filter()
_LOGGER = logging.getLogger("npu_bridge_compat.test_changes.one_rule")


def _exit_handler() -> None:
    pass


def _request(registry: changes.Registry, kind: changes.ChangeKind, owner: Owner, value: str) -> changes.Change:
    """A request of `kind` by `owner`, for `value` where the kind takes one (else for one object or path)."""
    requests = {
        changes.ChangeKind.ATTRIBUTE: lambda: registry.replace_attribute(
            _MODULE, "name", value, owner=owner, reason=""
        ),
        changes.ChangeKind.ENVIRONMENT: lambda: registry.set_environment(
            "NPU_BRIDGE_COMPAT_TEST_ONE_RULE", value, owner=owner, reason=""
        ),
        changes.ChangeKind.ENVIRONMENT_LIST: lambda: registry.add_to_environment_list(
            "NPU_BRIDGE_COMPAT_TEST_ONE_RULE", [value], owner=owner, reason=""
        ),
        changes.ChangeKind.CONTEXT: lambda: registry.enter(
            contextlib.nullcontext(), "a context", owner=owner, reason="", value=value
        ),
        changes.ChangeKind.SETTING: lambda: registry.change_setting(
            "a setting", value, read=lambda: None, write=lambda _: None, owner=owner, reason=""
        ),
        changes.ChangeKind.IRREVERSIBLE: lambda: registry.change_irreversibly(
            "a fixed setting", value, lambda: None, owner=owner, reason=""
        ),
        changes.ChangeKind.IMPORT_FINDER: lambda: registry.add_import_finder(_FINDER, owner=owner, reason=""),
        changes.ChangeKind.EXIT_HANDLER: lambda: registry.add_exit_handler(
            _exit_handler, owner=owner, reason="", label=""
        ),
        changes.ChangeKind.SYS_PATH: lambda: registry.add_to_sys_path("/nonexistent/one_rule", owner=owner, reason=""),
        changes.ChangeKind.LOGGING_FILTER: lambda: registry.add_logging_filter(
            _LOGGER, _LOG_FILTER, owner=owner, reason="", label=""
        ),
        changes.ChangeKind.WARNINGS_FILTER: lambda: registry.filter_warnings(
            "ignore", message="one rule", owner=owner, reason=""
        ),
    }
    return requests[kind]()


TAKE_A_VALUE = (
    changes.ChangeKind.ATTRIBUTE,
    changes.ChangeKind.ENVIRONMENT,
    changes.ChangeKind.ENVIRONMENT_LIST,
    changes.ChangeKind.CONTEXT,
    changes.ChangeKind.SETTING,
    changes.ChangeKind.IRREVERSIBLE,
)


@pytest.mark.parametrize("kind", list(changes.ChangeKind), ids=str)
def test_one_rule_for_a_repeated_request_in_every_kind(kind):
    """The same owner and value give back the change made; another value (where the kind takes one) or another
    owner is a conflict naming both owners and both values; undoing puts back what was there."""
    registry = changes.Registry()
    first = _request(registry, kind, Owner.RUN, "a")
    assert first.kind is kind and first.owner is Owner.RUN
    assert _request(registry, kind, Owner.RUN, "a") is first
    if kind in TAKE_A_VALUE:
        with pytest.raises(changes.ChangeConflict, match=r"^.*: run set it to .*'a'.*; run asked for .*'b'"):
            _request(registry, kind, Owner.RUN, "b")
    if kind is not changes.ChangeKind.ENVIRONMENT_LIST:  # one several owners add to (below)
        with pytest.raises(changes.ChangeConflict, match=r"^.*: run set it to .*; scan asked for "):
            _request(registry, kind, Owner.SCAN, "a")
    assert registry.in_force() == [first]
    registry.undo()
    assert registry.in_force() == ([first] if kind is changes.ChangeKind.IRREVERSIBLE else [])
    assert "name" not in vars(_MODULE) and "NPU_BRIDGE_COMPAT_TEST_ONE_RULE" not in os.environ
    assert "/nonexistent/one_rule" not in sys.path and _FINDER not in sys.meta_path and not _LOGGER.filters


def test_a_change_for_a_call_nests_over_a_lasting_one_and_gives_its_value_back(monkeypatch):
    monkeypatch.setenv("NPU_BRIDGE_COMPAT_TEST_NESTED", "user's")
    module = types.ModuleType("library")
    registry = changes.Registry()
    lasting = registry.set_environment(
        "NPU_BRIDGE_COMPAT_TEST_NESTED", "plan's", owner=Owner.PLAN_ENVIRONMENT, reason=""
    )
    with registry.for_the_call(
        registry.set_environment, "NPU_BRIDGE_COMPAT_TEST_NESTED", "trial's", owner=Owner.PRECISION, reason="trial"
    ) as nested:
        assert os.environ["NPU_BRIDGE_COMPAT_TEST_NESTED"] == "trial's" and nested is not lasting and nested.nested
        assert registry.in_force() == [lasting, nested]
        with registry.for_the_call(registry.replace_attribute, module, "name", 1, owner=Owner.PRECISION, reason=""):
            assert module.name == 1 and registry.is_replaced(module, "name")
        assert "name" not in vars(module) and not registry.is_replaced(module, "name")
        with pytest.raises(
            changes.ChangeConflict, match="^library.name: run set it to 1 for the length of a call; run asked for 2"
        ):
            with registry.for_the_call(registry.replace_attribute, module, "name", 1, owner=Owner.RUN, reason=""):
                registry.replace_attribute(module, "name", 2, owner=Owner.RUN, reason="")
    assert os.environ["NPU_BRIDGE_COMPAT_TEST_NESTED"] == "plan's" and registry.in_force() == [lasting]
    with registry.for_the_call(
        registry.set_environment, "NPU_BRIDGE_COMPAT_TEST_NESTED", "trial's", owner=Owner.PRECISION, reason="trial"
    ):
        registry.undo(owner=Owner.PLAN_ENVIRONMENT)  # the lasting change takes the one over it with it
        assert os.environ["NPU_BRIDGE_COMPAT_TEST_NESTED"] == "user's" and registry.in_force() == []
    assert os.environ["NPU_BRIDGE_COMPAT_TEST_NESTED"] == "user's"
    with pytest.raises(TypeError, match="this registry's own methods"):
        with changes.for_the_call(
            registry.set_environment, "NPU_BRIDGE_COMPAT_TEST_NESTED", "", owner=Owner.RUN, reason=""
        ):
            pass


def test_a_list_several_owners_add_to_is_one_change_that_undoes_each_part(monkeypatch):
    monkeypatch.setenv("NPU_BRIDGE_COMPAT_TEST_FLAGS", "--users")
    registry = changes.Registry()
    start = registry.mark()
    fusion = registry.add_to_environment_list(
        "NPU_BRIDGE_COMPAT_TEST_FLAGS", ["--jit", "--fusible"], owner=Owner.GRAPH_KERNEL_FUSION, reason="fusion"
    )
    after_fusion = registry.mark()
    plan = registry.add_to_environment_list(
        "NPU_BRIDGE_COMPAT_TEST_FLAGS", ["--jit", "--plan"], owner=Owner.PLAN_ENVIRONMENT, reason="plan"
    )
    assert plan is fusion and fusion.owners == (Owner.GRAPH_KERNEL_FUSION, Owner.PLAN_ENVIRONMENT)
    assert os.environ["NPU_BRIDGE_COMPAT_TEST_FLAGS"] == "--users --jit --fusible --plan"
    assert registry.in_force(Owner.PLAN_ENVIRONMENT) == registry.in_force(Owner.GRAPH_KERNEL_FUSION) == [fusion]
    assert fusion.describe() == (
        "$NPU_BRIDGE_COMPAT_TEST_FLAGS (environment list, by graph-kernel fusion, plan (environment)): fusion; plan"
    )
    with pytest.raises(changes.ChangeConflict, match=r"plan \(environment\) set it to \('--jit', '--plan'\)"):
        registry.add_to_environment_list(
            "NPU_BRIDGE_COMPAT_TEST_FLAGS", ["--other"], owner=Owner.PLAN_ENVIRONMENT, reason=""
        )
    with pytest.raises(changes.ChangeConflict, match="graph-kernel fusion set it to .*; run asked for '--all'"):
        registry.set_environment("NPU_BRIDGE_COMPAT_TEST_FLAGS", "--all", owner=Owner.RUN, reason="")
    assert registry.undo(owner=Owner.GRAPH_KERNEL_FUSION) == [fusion]
    assert os.environ["NPU_BRIDGE_COMPAT_TEST_FLAGS"] == "--users --jit --plan" and registry.is_in_force(fusion)
    assert fusion.owners == (Owner.PLAN_ENVIRONMENT,) and fusion.owner is Owner.GRAPH_KERNEL_FUSION
    registry.add_to_environment_list(
        "NPU_BRIDGE_COMPAT_TEST_FLAGS", ["--fusible"], owner=Owner.GRAPH_KERNEL_FUSION, reason="fusion"
    )
    assert registry.undo(since=after_fusion) == [fusion]  # both parts were made after that mark
    assert os.environ["NPU_BRIDGE_COMPAT_TEST_FLAGS"] == "--users" and registry.in_force() == []
    assert registry.mark() > start


@pytest.mark.starts_processes
def test_exit_handlers_run_at_exit_unless_undone(tmp_path):
    script = tmp_path / "exits.py"
    script.write_text(
        "import sys\n"
        "from npu_bridge_compat import changes\n"
        "from npu_bridge_compat.changes import Owner\n"
        "kept = changes.add_exit_handler(lambda: print('kept ran'), owner=Owner.RUN, reason='', label='kept')\n"
        "undone = changes.add_exit_handler(lambda: print('undone ran'), owner=Owner.RUN, reason='', label='undone')\n"
        "assert changes.in_force()[-1].target == 'atexit[undone]'\n"
        "changes.undo(changes=[undone])\n"
    )
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "kept ran\n", "")


def test_sys_path_logging_and_warnings_filters_are_taken_off_again():
    class Quiet(logging.Filter):
        def filter(self, record):
            return False

    class ProbeWarning(UserWarning):
        pass

    logger = logging.getLogger("npu_bridge_compat.test_changes")
    log_filter = Quiet()
    with changes.undone_after():
        changes.add_to_sys_path("/nonexistent/scripts", owner=Owner.RUN, reason="why")
        changes.add_to_sys_path("/nonexistent/scripts", owner=Owner.RUN, reason="why")
        changes.add_logging_filter(logger, log_filter, owner=Owner.LOGGING, reason="why", label="test logger")
        changes.filter_warnings("ignore", category=ProbeWarning, owner=Owner.LOGGING, reason="why")
        assert sys.path[0] == "/nonexistent/scripts" and sys.path.count("/nonexistent/scripts") == 1
        assert logger.filters == [log_filter]
        with warnings.catch_warnings(record=True) as caught:
            warnings.warn("hidden", ProbeWarning, stacklevel=1)
        assert caught == []
        assert [change.target for change in changes.in_force()[-3:]] == [
            "sys.path[/nonexistent/scripts]",
            "test logger filter Quiet",
            "warnings filter ignore(category=<class 'test_changes.test_sys_path_logging_and_warnings_filters_are_"
            "taken_off_again.<locals>.ProbeWarning'>)",
        ]
    assert "/nonexistent/scripts" not in sys.path and logger.filters == []
    with warnings.catch_warnings():  # Python's own `ignore::DeprecationWarning`: moved to the front, then back
        warnings.resetwarnings()
        warnings.simplefilter("default")
        warnings.filterwarnings("ignore", category=DeprecationWarning, append=True)
        python_defaults = list(warnings.filters)
        with changes.undone_after():
            changes.filter_warnings("ignore", category=DeprecationWarning, owner=Owner.LOGGING, reason="why")
            assert warnings.filters == [python_defaults[1], python_defaults[0]]
        assert warnings.filters == python_defaults
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        warnings.warn("shown again", ProbeWarning, stacklevel=1)
    assert [str(warning.message) for warning in caught] == ["shown again"]


def test_undo_undoes_everything_it_can_then_names_what_failed(monkeypatch):
    monkeypatch.delenv("NPU_BRIDGE_COMPAT_TEST_AFTER", raising=False)
    module = types.ModuleType("library")
    module.function = "original"

    @contextlib.contextmanager
    def refusing():
        yield
        raise OSError("the device is gone")

    start = changes.mark()
    changes.replace_attribute(module, "function", "ours", owner=Owner.ESTIMATOR_DOOR, reason="why")
    changes.enter(refusing(), "a refusing context", owner=Owner.TF2_DOOR, reason="why")
    changes.set_environment("NPU_BRIDGE_COMPAT_TEST_AFTER", "1", owner=Owner.RUN, reason="why")
    with pytest.raises(changes.UndoError) as raised:
        changes.undo(since=start)
    assert str(raised.value) == (
        "these changes could not be undone (the others were): a refusing context (TF2 door (npu_device)): OSError: "
        "the device is gone"
    )
    assert module.function == "original" and "NPU_BRIDGE_COMPAT_TEST_AFTER" not in os.environ
    assert changes.undo(since=start) == []  # what failed is not retried: it is no longer listed


def test_owners_are_the_enum_not_free_text():
    with pytest.raises(TypeError, match="owner must be a changes.Owner, not 'run --tf1'"):
        changes.set_environment("NPU_BRIDGE_COMPAT_TEST_OWNER", "1", owner="run --tf1", reason="why")
    assert "NPU_BRIDGE_COMPAT_TEST_OWNER" not in os.environ


def test_the_tf2_doors_device_and_loop_size_last_while_their_changes_do(monkeypatch, fresh_state):
    from npu_bridge_compat.tf2 import device

    monkeypatch.delenv(device.LOOP_SIZE_VARIABLE, raising=False)
    fresh_state(device.PROGRAM_OPTIONS)  # a program that has not set global_options() yet
    start = changes.mark()
    handle = device.open()
    assert device.open() is handle and device.global_npu_ctx() is None
    assert handle.as_default() is handle and device.global_npu_ctx() is handle
    device.set_npu_loop_size(4)
    assert device.loop_size() == 4
    with pytest.warns(NpuCompatWarning, match="precision_mode was set after npu_device.open()"):
        device.global_options().precision_mode = "force_fp32"
    changes.undo(since=start)
    assert device.global_npu_ctx() is None and device.loop_size() == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", NpuCompatWarning)  # read again by the next open(): no warning now
        device.global_options().precision_mode = "force_fp32"
    try:
        reopened = device.open()
        assert reopened is not handle and reopened.npu_plan.options.precision_mode == "force_fp32"
    finally:
        changes.undo(since=start)


def test_graph_kernel_fusion_and_a_plan_add_their_xla_flags_to_one_change(monkeypatch):
    """TF_XLA_FLAGS: the user's flags, fusion's (reserved before TensorFlow reads them) and a plan's (its compile
    cache), one change naming both owners; restoring the plan's environment takes off its flag alone."""
    from npu_bridge_compat.compat import xla
    from npu_bridge_compat.runtime import process

    registry = changes.Registry()  # a process of its own: this one's fusion flags may be reserved already
    for name in ("add_to_environment_list", "set_environment", "undo"):
        monkeypatch.setattr(changes, name, getattr(registry, name))
    monkeypatch.setenv("TF_XLA_FLAGS", "--user_flag")
    cache = "--tf_xla_persistent_cache_directory=/nonexistent/cache"
    plan = types.SimpleNamespace(
        environment={"TF_XLA_FLAGS": cache}, options=types.SimpleNamespace(source="a test"), mixed_precision=None
    )
    xla.reserve_fusion_flags(tensorflow_read_flags=False)
    process.apply_environment(plan)
    process.apply_environment(plan)
    assert os.environ["TF_XLA_FLAGS"].split() == ["--user_flag", *xla.FUSION_FLAGS, cache]
    [change] = registry.in_force()
    assert change.target == "$TF_XLA_FLAGS" and change.owners == (Owner.GRAPH_KERNEL_FUSION, Owner.PLAN_ENVIRONMENT)
    process.restore_environment()
    assert os.environ["TF_XLA_FLAGS"].split() == ["--user_flag", *xla.FUSION_FLAGS]
    assert change.owners == (Owner.GRAPH_KERNEL_FUSION,) and xla.fusion_flags_problem() is None
    registry.undo()
    assert os.environ["TF_XLA_FLAGS"] == "--user_flag"


def test_an_owner_that_keeps_a_value_current_sets_it_anew(monkeypatch):
    """The adapter's progress hook exports each step's values, and set_npu_loop_size may be called again: each
    undoes its own change before the next, so the user's value comes back at the end."""
    from npu_bridge_compat.legacy.hooks import TellMeStepOrLossHook
    from npu_bridge_compat.tf2 import device

    monkeypatch.setenv("STEP_NOW", "the user's")
    monkeypatch.delenv(device.LOOP_SIZE_VARIABLE, raising=False)
    with changes.undone_after():
        hook = TellMeStepOrLossHook(step="step", total_step=3)
        for step in (1, 2):
            hook.after_run(None, types.SimpleNamespace(results={"step": step}))
        TellMeStepOrLossHook(total_step=5)
        device.set_npu_loop_size(4)
        device.set_npu_loop_size(2)
        assert (os.environ["STEP_NOW"], os.environ["TOTAL_STEP"], device.loop_size()) == ("2", "5", 2)
        assert [change.target for change in changes.in_force(Owner.ADAPTER_HOOKS)] == ["$STEP_NOW", "$TOTAL_STEP"]
    assert os.environ["STEP_NOW"] == "the user's" and "TOTAL_STEP" not in os.environ
    assert device.LOOP_SIZE_VARIABLE not in os.environ


@pytest.mark.starts_processes
def test_a_functions_class_swapped_twice_by_its_owner_does_both_and_comes_back():
    """Numeric checks after each call, then calls through the forms first runs decide: one change of the
    tf.function's class, whose subclass does both, and undoing it gives back the tf.function's own class."""
    import tensorflow as tf

    from npu_bridge_compat.compat.eager import calls_through, checked_after_calls

    @tf.function
    def double(x):
        return 2 * x

    own = type(double)
    events = []

    def call(run, args, kwargs):
        events.append("called")
        return run(*args, **kwargs)

    with changes.undone_after():
        checked_after_calls(double, lambda: events.append("checked"), owner=Owner.TF2_DOOR)
        calls_through(double, call, owner=Owner.TF2_DOOR)
        assert double(tf.constant(2.0)).numpy() == 4.0 and events == ["called", "checked"]
        assert isinstance(double, own) and type(double) is not own
        [change] = [change for change in changes.in_force() if change.target == "<tf.function double>.__class__"]
        assert change.reason.startswith("checked after each call") and "first runs decide" in change.reason
        with pytest.raises(changes.ChangeConflict, match=r"<tf.function double>.__class__: TF2 door .* scan asked"):
            calls_through(double, call, owner=Owner.SCAN)
    assert type(double) is own


def test_a_switch_two_parts_ask_for_has_an_owner_of_its_own():
    """The TF 1.15 world and npu_device.compat.enable_v1 both ask for TF1 behaviour: one change, held by the
    switch's own owner, which undoing turns back to TF2 behaviour."""
    from tensorflow.python import tf2

    from npu_bridge_compat.compat.config import disable_v2_behaviour

    with changes.undone_after():
        first = disable_v2_behaviour(owner=Owner.TF1_WORLD, reason="the world")
        assert disable_v2_behaviour(owner=Owner.TF2_DOOR, reason="enable_v1") is first and not tf2.enabled()
        assert first.owner is Owner.TF1_BEHAVIOUR and first.reason == "the world (for the TF 1.15 world)"
    assert tf2.enabled()


def test_explain_changes_lists_what_is_in_force(capsys):
    with changes.undone_after():
        changes.set_environment("NPU_BRIDGE_COMPAT_TEST_LISTED", "1", owner=Owner.RUN, reason="fusion")
        assert main(["explain", "--changes"]) == 0
    out = capsys.readouterr().out
    assert "  run:\n    $NPU_BRIDGE_COMPAT_TEST_LISTED (environment): fusion" in out


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory) -> dict:
    """tests/scripts/changes_round_trip.py's outcome: every door used in one process, then undone."""
    folder = tmp_path_factory.mktemp("round_trip")
    result = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "scripts" / "changes_round_trip.py"), str(folder / "m")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=folder,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "npu_bridge_compat changes in this process" in result.stdout
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.starts_processes
def test_importing_the_package_and_its_doors_changes_nothing(round_trip):
    """Every door but the Estimator's changes nothing when imported; the Estimator door's NPURunConfig derives from
    tf.estimator's RunConfig, which from TensorFlow 2.16 is tensorflow-estimator 2.15 served through the registry
    (listed, and undone with the rest)."""
    assert round_trip["changed_by_import"] == []
    served = round_trip["served_by_importing_the_estimator_door"]
    if round_trip["estimator_in_tensorflow"]:
        assert served == []
    else:
        assert served and all(target in round_trip["in_force"] for target in served)


@pytest.mark.starts_processes
def test_every_door_lists_its_changes_and_undoing_restores_the_process(round_trip):
    """After the session door through npu_init (mixed precision, fusion, determinism, the N-step loop, a horizon),
    NPUCallback, NPUEstimator and a plain Estimator, npu_device with fit and tf.function, the TF
    2.6 and TF 1.15 worlds and graph-mode Keras on an NPU session, each change is listed, and undoing them gives
    back the libraries' functions, classes and methods, the sys hooks, the environment, logging, warnings, the exit
    handlers and TensorFlow's switches, as they were."""
    in_force = set(round_trip["in_force"])
    expected = {
        "$NPU_BRIDGE_COMPAT_GRAPH_KERNEL",
        "logger 'tensorflow' filter _NotDeprecation",
        "warnings filter ignore(category=<class 'DeprecationWarning'>)",
        "logger 'tensorflow' filter _DeferBeforeEachRecord",
        "TensorFlow's console handler filter _DeferToRootHandlers",
        "sys.meta_path[WorldFinder]",  # the adapter's, the TF 2.6 and the TF 1.15 worlds' finders
        "builtins.__import__",
        "tensorflow.function",
        "<tf.function double>.__class__",
        "tensorflow.compat.v1.Session",
        "tensorflow.compat.v1.contrib",
        "tensorflow.python.ops.gen_nn_ops.fused_batch_norm_v3",  # the session's graph asked for an old horizon
        "TensorFlow op determinism",
        "TensorFlow 2 behaviour",
        "the main thread's function-call config",
        "npu_device.open()",
        "$NPU_LOOP_SIZE",
        "Keras' global session",
    }
    assert expected <= in_force, expected - in_force
    assert {name for name in in_force if name.endswith(("Model.fit", "Model.evaluate", "Model.predict"))}
    assert round_trip["irreversible"] == []  # on one CPU process: no device or rank setting was asked for
    assert round_trip["in_force_after_undo"] == []
    assert round_trip["left_after_undo"] == []  # the worlds' served modules forgotten too
