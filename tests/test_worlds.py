"""The worlds ported programs were written in, on one engine (imports/world.py): one Keras per process under `run`,
the ports' NumPy and Python era, and every world's changes undone by the registry."""

import ast
import builtins
import collections
import importlib
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from absl import flags as absl_flags
from test_legacy import run

from npu_bridge_compat import changes
from npu_bridge_compat.imports.world import NoCounterpartError, World, WorldFinder
from npu_bridge_compat.legacy.era import ERA, EraNameWarning, install_era_world
from npu_bridge_compat.legacy.runs import WORLDS, RunAs

HERE = Path(__file__).parent
MIXED = {"PYTHONPATH": os.pathsep.join([str(HERE / "fixtures" / "mixed_keras"), os.environ.get("PYTHONPATH", "")])}


def last_json(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


# --- one Keras ---------------------------------------------------------------------------------------------------


@pytest.mark.starts_processes
@pytest.mark.parametrize("arguments", [("graph",), ("eager",), ("--tf1", "graph")], ids=["graph", "eager", "tf1"])
def test_a_model_mixing_tensorflow_python_keras_and_tf_keras_trains(arguments):
    """Its library subclasses tensorflow.python.keras's Layer and applies tf.keras layers in `call` (TensorFlow's
    stale Keras copy gave `FailedPreconditionError: Could not find variable dnn/bias0` in graph mode)."""
    *flags, mode = arguments
    report = last_json(run(*flags, str(HERE / "scripts" / "mixed_keras_port.py"), mode, env=MIXED))
    assert report["one_layer_class"] and report["isinstance"] and report["one_model_class"]
    assert report["eager"] == (mode == "eager")
    assert report.get("one_session", True)  # graph mode: one backend session for Keras and the program
    first, last = report["first_losses"]
    assert last < 0.5 * first  # the compat.v1 session's (or GradientTape's) steps trained the mixed model
    assert report["fit_losses"][1] < report["fit_losses"][0] and report["accuracy"] > 0.9


# --- the ports' NumPy and Python era -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def era_port(tmp_path_factory):
    result = run(str(HERE / "scripts" / "era_port.py"), str(tmp_path_factory.mktemp("era")))
    return last_json(result), result.stderr


@pytest.mark.starts_processes
def test_a_port_using_removed_numpy_and_python_names_trains(era_port):
    report, _ = era_port
    assert report["types"] == [True] * 4 and report["counts"] == [0, 2, 0]
    assert report["numpy_2_names"] == [6.0, True, True, True] and report["asscalar"] == 7
    assert report["fp16_implementation"] == "graph_rewrite"  # absl-py < 2.0 took the str enum_values
    assert report["argspec"] == ["features", "labels", "size"] and report["elapsed"]
    assert report["loose_version"] and report["settings"] == [0.1, True]  # imp.load_source ran the file
    assert report["losses"][1] < report["losses"][0]
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        assert report["no_counterpart"] == (
            f"numpy.find_common_type has no counterpart on NumPy {np.__version__}: removed in NumPy 2.0; "
            "np.result_type or np.promote_types replace it (their arguments differ)."
        )


@pytest.mark.starts_processes
def test_each_era_name_warns_once_at_the_line_that_used_it(era_port):
    _, stderr = era_port
    script = str(HERE / "scripts" / "era_port.py")
    # np.float is used on lines 30 (each batch) and 34; line 34 runs first
    assert stderr.count("EraNameWarning: numpy.float on NumPy") == 1
    assert f"{script}:34: EraNameWarning: numpy.float on NumPy {np.__version__}: NumPy 1.24 removed np.float" in stderr
    assert f"{script}:28: EraNameWarning: collections.Iterable on Python" in stderr
    assert stderr.count("EraNameWarning: numpy.int on") == 1
    assert (
        f"{script}:44: EraNameWarning: enum_values=\"keras', 'graph_rewrite\" of absl.flags.DEFINE_enum: absl-py 2.0 "
        "refuses a str" in stderr
    )


@pytest.mark.parametrize(
    "name, status, detail",
    [
        ("numpy.float", "differs", "NumPy 1.24 removed np.float, which was Python's float: served as float"),
        ("numpy.object", "differs", "served as object"),
        ("collections.Iterable", "differs", "collections.abc.Iterable"),
        ("time.clock", "differs", "time.perf_counter"),
        ("inspect.getargspec", "differs", "inspect.getfullargspec"),
        ("numpy.float32", "current", "same name"),
        ("collections.OrderedDict", "current", "same name"),
        ("numpy.no_such_name", "unknown", "not a NumPy < 1.24 / Python 3.7 name"),
    ],
)
def test_era_status(name, status, detail):
    found = ERA.status(name)
    assert (found.status, detail in found.detail) == (status, True), found


def test_era_names_of_this_numpy_and_python():
    """What this NumPy and Python removed is served (or says why not); what they still have is current."""
    numpy_2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
    assert ERA.status("numpy.NaN").status == ("differs" if numpy_2 else "current")
    assert ERA.status("numpy.find_common_type").status == ("missing" if numpy_2 else "current")
    assert ERA.status("imp.load_source").status == ("differs" if sys.version_info >= (3, 12) else "current")


def test_the_era_world_serves_names_without_writing_them_into_numpy_and_undoes_cleanly():
    own_getattr = inspect.getattr_static(np, "__getattr__", None)  # NumPy's own (it has one)
    before = changes.mark()
    install_era_world()
    with pytest.warns(EraNameWarning, match=r"numpy\.object on NumPy .*served as object"):
        assert np.object is object
    assert collections.Sequence is collections.abc.Sequence
    assert "object" not in dir(np) or inspect.getattr_static(np, "object", None) is None  # nothing cached
    assert inspect.getattr_static(collections, "Sequence", None) is None
    with pytest.raises(NoCounterpartError, match=r"numpy\.typeDict has no counterpart on NumPy .*np\.sctypeDict"):
        np.typeDict()
    with pytest.raises(AttributeError, match="no_such_name"):
        np.no_such_name  # noqa: B018 - NumPy's own error, as before
    with pytest.warns(EraNameWarning, match="absl-py 2.0 refuses a str as enum_values"):
        parser = absl_flags.EnumParser("keras', 'graph_rewrite")
    assert parser.parse("graph_rewrite") == "graph_rewrite"  # part of the string, as absl-py < 2.0 accepted it
    with pytest.raises(ValueError, match="should be one of"):
        parser.parse("fp16")
    targets = {change.target for change in changes.in_force(owner=changes.Owner.ERA_WORLD)}
    assert {"numpy.__getattr__", "collections.__getattr__", "sys.meta_path[WorldFinder]"} <= targets
    if sys.version_info >= (3, 12):
        imp = importlib.import_module("imp")
        assert imp.get_magic() == importlib.util.MAGIC_NUMBER
    changes.undo(since=before)
    assert inspect.getattr_static(np, "__getattr__", None) is own_getattr
    assert inspect.getattr_static(collections, "__getattr__", None) is None
    with pytest.raises(AttributeError):
        collections.Sequence  # noqa: B018
    with pytest.raises(ValueError, match="enum_values cannot be a str"):
        absl_flags.EnumParser("keras")
    if sys.version_info >= (3, 12):
        assert "imp" not in sys.modules  # the module the finder created is forgotten
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module("imp")
    ERA.warned.clear()


# --- the TF 2.6 world's changes, all in the registry (issue 37) -------------------------------------------------------


@pytest.mark.needs_keras_2
def test_the_tf26_world_caches_nothing_into_keras_and_forgets_its_modules_when_undone():
    import tensorflow as tf

    from npu_bridge_compat.legacy.tf26 import install_tf26_world, keras_root

    keras_utils = importlib.import_module(f"{keras_root()}.utils")
    own_import = builtins.__import__
    before = changes.mark()
    install_tf26_world()
    optimizer_v2 = importlib.import_module("keras.optimizer_v2.optimizer_v2")
    assert optimizer_v2.OptimizerV2 is tf.keras.optimizers.legacy.Optimizer
    assert keras_utils.control_flow_util is not None  # a name this Keras keeps elsewhere, filled in
    with pytest.raises(NoCounterpartError, match="multi_gpu_model"):
        keras_utils.multi_gpu_model()
    assert inspect.getattr_static(keras_utils, "control_flow_util", None) is None  # read through, never written
    changes.undo(since=before)
    assert builtins.__import__ is own_import
    assert not any(name.startswith("keras.optimizer_v2") for name in sys.modules)
    assert inspect.getattr_static(keras_utils, "__getattr__", None) is None
    with pytest.raises(AttributeError):
        keras_utils.multi_gpu_model  # noqa: B018


def test_every_world_is_data_served_by_the_one_server():
    """A world is a table and its rules, served by `World` itself: no module of the package subclasses the server or
    its finder, and every world of the one list is a `World`, named once."""
    package = Path(__file__).parent.parent / "npu_bridge_compat"
    subclasses = [
        f"{path.relative_to(package)}: {node.name}"
        for path in package.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
        and any(isinstance(base, ast.Name) and base.id in ("World", "WorldFinder") for base in node.bases)
    ]
    assert subclasses == []
    assert all(type(world) is World and type(world.finder) is WorldFinder for world in WORLDS)
    assert len({world.name for world in WORLDS}) == len(WORLDS)


def test_each_run_gets_the_worlds_of_the_list_in_its_order():
    names = {run_as: [world.name for world in run_as.worlds] for run_as in RunAs}
    assert names == {
        RunAs.TF1: ["adapter", "tf1", "keras2", "era", "estimator_library", "modelarts"],
        RunAs.TF2: ["adapter", "tf26", "era", "estimator_library", "modelarts"],
    }
