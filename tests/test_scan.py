"""`scan`: the porting report over a tree of ported-style scripts (tests/data/scan_tree), checked against `run`."""

import functools
import importlib
import importlib.util
import io
import json
import os
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tensorflow as tf
from helpers import npu_config
from test_legacy import _resolves

from npu_bridge_compat import estimator_library, legacy
from npu_bridge_compat.cli import main
from npu_bridge_compat.errors import DeviceOnlyFeatureError, NpuOptionValueError
from npu_bridge_compat.imports.world import NameStatus, Status
from npu_bridge_compat.legacy import era
from npu_bridge_compat.legacy.era import ERA, era_status
from npu_bridge_compat.legacy.era.table import NO_SETUPTOOLS
from npu_bridge_compat.options import OPTIONS, OptionKind, options_from_config_proto
from npu_bridge_compat.plan import HostFacts
from npu_bridge_compat.scan import Category, Outcome, Severity, scan, scanner
from npu_bridge_compat.scan.progress import LARGE_TREE, ProgressBar

HERE = Path(__file__).parent
TREE = HERE / "data" / "scan_tree"
CPU = HostFacts(tf_version="2.15.1", gpu_count=0)  # native bfloat16
READY, WARNING, BLOCKED = Severity.READY, Severity.WARNING, Severity.BLOCKED
ADAPTER, OPTION, TF1, PACKAGE, SYNTAX = (
    Category.ADAPTER,
    Category.OPTION,
    Category.TENSORFLOW,
    Category.PACKAGE,
    Category.SYNTAX,
)
TRANSLATED, APPROXIMATED, NOT_NEEDED = Outcome.TRANSLATED, Outcome.APPROXIMATED, Outcome.NOT_NEEDED
NUMPY, PYTHON = Category.NUMPY, Category.PYTHON
MODELARTS, OBJECT_URL = Category.MODELARTS, Category.OBJECT_URL
NO_IMP = importlib.util.find_spec("imp") is None  # Python 3.12 removed it: `run` serves it


@pytest.fixture(scope="module")
def report():
    return scan([str(TREE)], host=CPU)


def script(report, relative: str):
    return next(s for s in report.scripts if s.path == str(TREE / relative))


def rows(report, relative: str):
    return [(f.line, f.category, f.name, f.value, f.outcome, f.severity) for f in script(report, relative).findings]


EXPECTED = {
    "estimator/train_resnet.py": (
        READY,
        [
            (5, ADAPTER, "npu_bridge.npu_init.*", None, TRANSLATED, READY),
            (6, ADAPTER, "npu_bridge.estimator.npu_ops", None, TRANSLATED, READY),
            (7, ADAPTER, "hccl.manage.api.get_rank_size", None, TRANSLATED, READY),
            (17, ADAPTER, "npu_bridge.estimator.npu_ops.dropout", None, TRANSLATED, READY),
            (19, ADAPTER, "npu_bridge.npu_init.NPUDistributedOptimizer", None, TRANSLATED, READY),
            (21, ADAPTER, "npu_bridge.npu_init.NPUEstimatorSpec", None, TRANSLATED, READY),
            (25, ADAPTER, "npu_bridge.npu_init.ProfilingConfig", None, TRANSLATED, READY),
            (27, ADAPTER, "npu_bridge.npu_init.NPURunConfig", None, TRANSLATED, READY),
            (29, OPTION, "iterations_per_loop", None, TRANSLATED, READY),  # FLAGS.iterations_per_loop: set at run time
            (30, OPTION, "precision_mode", "'allow_mix_precision'", APPROXIMATED, READY),  # bfloat16 on this CPU
            (32, OPTION, "profiling_mode", "True", TRANSLATED, READY),  # from the ProfilingConfig held in `profiling`
            (32, OPTION, "profiling_options", '\'{"output": "profiling", "training_trace": "on"}\'', TRANSLATED, READY),
            (33, OPTION, "dump_path", "'/tmp'", TRANSLATED, READY),  # from the DumpConfig written inline
            (33, OPTION, "enable_dump_debug", "True", APPROXIMATED, READY),
            (33, ADAPTER, "npu_bridge.npu_init.DumpConfig", None, TRANSLATED, READY),
            (35, ADAPTER, "npu_bridge.npu_init.NPUEstimator", None, TRANSLATED, READY),
        ],
    ),
    "session/train_session.py": (
        READY,
        [
            (5, ADAPTER, "npu_bridge.npu_init.*", None, TRANSLATED, READY),
            (20, OPTION, "use_off_line", "True", NOT_NEEDED, READY),
            (21, OPTION, "precision_mode", "'allow_mix_precision'", APPROXIMATED, READY),
            (22, OPTION, "iterations_per_loop", "10", TRANSLATED, READY),
            (23, OPTION, "mix_compile_mode", "False", NOT_NEEDED, READY),
            (24, ADAPTER, "npu_bridge.npu_init.RewriterConfig", None, TRANSLATED, READY),
            (26, ADAPTER, "npu_bridge.npu_init.npu_config_proto", None, TRANSLATED, READY),
            (28, ADAPTER, "npu_bridge.npu_init.util.set_iteration_per_loop", None, TRANSLATED, READY),
        ],
    ),
    "session/typo_key.py": (
        WARNING,
        [
            (3, ADAPTER, "npu_bridge.npu_init.*", None, TRANSLATED, READY),
            (8, OPTION, "use_off_line", "True", NOT_NEEDED, READY),
            (9, OPTION, "iteration_per_loop", "10", Outcome.UNKNOWN, WARNING),
        ],
    ),
    "session/bad_value.py": (
        BLOCKED,
        [
            (3, ADAPTER, "npu_bridge.npu_init.*", None, TRANSLATED, READY),
            (8, OPTION, "precision_mode", "'allow_mix_precison'", Outcome.INVALID, BLOCKED),
            (9, OPTION, "iterations_per_loop", "10", TRANSLATED, READY),
        ],
    ),
    "estimator/embedding_lookup.py": (
        BLOCKED,
        [
            (4, ADAPTER, "npu_bridge.npu_cpu.npu_cpu_ops", None, TRANSLATED, READY),
            (5, ADAPTER, "npu_bridge.estimator.npu.npu_plugin.rdma_remote_init", None, Outcome.DEVICE_ONLY, WARNING),
            (9, ADAPTER, "npu_bridge.npu_cpu.npu_cpu_ops.embeddingrankid", None, Outcome.DEVICE_ONLY, BLOCKED),
        ],
    ),
    "estimator/py2_eval.py": (
        BLOCKED,
        [
            (5, SYNTAX, str(TREE / "estimator/py2_eval.py"), None, Outcome.NOT_PARSED, BLOCKED),
        ],
    ),
    "estimator/modelarts_entry.py": (
        WARNING,
        [
            (2, MODELARTS, "moxing", None, "works under run", READY),  # ModelArts' moxing, served by `run`
            (4, ADAPTER, "npu_bridge.npu_init.*", None, TRANSLATED, READY),
            (7, PACKAGE, "ais_bench", None, Outcome.NOT_INSTALLED, WARNING),  # inside try/except ImportError
            (11, MODELARTS, "moxing.file.copy_parallel", None, "works under run", READY),
            # where the URL goes: no endpoint is set for the tests, so it is said what to set
            (11, OBJECT_URL, "obs://bucket/data", None, Outcome.AT_RUN_TIME, WARNING),
        ],
    ),
    "session/tf115_contrib.py": (
        WARNING,
        [
            (3, ADAPTER, "npu_bridge.npu_init.*", None, TRANSLATED, READY),
            (5, TF1, "tensorflow.placeholder", None, "works under run --tf1", READY),  # tf.compat.v1.placeholder
            (6, TF1, "tensorflow.contrib.layers.xavier_initializer", None, "works under run --tf1", READY),
            (6, TF1, "tensorflow.get_variable", None, "works under run --tf1", READY),
            (8, TF1, "tensorflow.Session", None, "works under run --tf1", READY),
            (8, ADAPTER, "npu_bridge.npu_init.npu_config_proto", None, TRANSLATED, READY),
            (9, TF1, "tensorflow.global_variables_initializer", None, "works under run --tf1", READY),
            (10, TF1, "tensorflow.contrib.tpu.TPUEstimator", None, "differs under run --tf1", WARNING),
        ],
    ),
    # the scripts' own modules (imported as `import resnet_model`, and through sys.path.append("../common"))
    "estimator/resnet_model.py": (READY, []),
    "common/data_helpers.py": (READY, []),
    # the ports' NumPy and Python: no package missing, names `run` serves (imp only where this Python lacks it)
    "common/preprocess.py": (
        WARNING,
        [
            *(
                [
                    (4, PYTHON, "imp", None, "works under run", READY),
                    (10, PYTHON, "imp.load_source", None, "differs under run", WARNING),
                ]
                if NO_IMP
                else []
            ),
            (14, PYTHON, "collections.Mapping", None, "differs under run", WARNING),
            (16, NUMPY, "numpy.float", None, "differs under run", WARNING),
        ],
    ),
}


# The expected reports are TensorFlow 2.15's: there the tree's Estimator scripts and contrib.tpu run. Lines without
# tf.estimator report those as blocked (test_the_estimator_door_is_reported_where_tensorflow_has_none).
LINE_2_15 = pytest.mark.needs_estimator


@LINE_2_15
@pytest.mark.parametrize("relative", EXPECTED)
def test_each_script_gets_exactly_its_findings(report, relative):
    status, findings = EXPECTED[relative]
    assert rows(report, relative) == findings
    assert script(report, relative).status is status


def test_the_tree_is_read_whole(report):
    assert sorted(s.path for s in report.scripts) == sorted(str(TREE / relative) for relative in EXPECTED)


def test_an_invalid_literal_value_fails_with_the_runtime_error(report):
    finding = script(report, "session/bad_value.py").findings[1]
    source = f"custom_op.parameter_map at {TREE / 'session/bad_value.py'}:8"
    with pytest.raises(NpuOptionValueError) as runtime:
        options_from_config_proto(
            npu_config({"precision_mode": "allow_mix_precison", "iterations_per_loop": 10}), source=source
        )
    assert finding.detail == str(runtime.value)


def test_a_typo_names_the_closest_option(report):
    finding = script(report, "session/typo_key.py").findings[-1]
    assert finding.suggestion == "iterations_per_loop" and "did you mean 'iterations_per_loop'" in finding.detail


@LINE_2_15
def test_tf1_names_say_what_they_become_under_run_tf1(report, tmp_path):
    tf1 = script(report, "session/tf115_contrib.py")
    details = {f.name: f.detail for f in tf1.findings}
    # TF1 trees answered from the table run --tf1 serves them from
    assert details["tensorflow.contrib.layers.xavier_initializer"] == "tf_slim.layers.xavier_initializer"
    assert "use_tpu=False" in details["tensorflow.contrib.tpu.TPUEstimator"]
    assert details["tensorflow.Session"] == (
        f"tf.Session is tf.compat.v1.Session under `run --tf1` (TensorFlow {tf.__version__} has no tf.Session)"
    )
    (tmp_path / "typo.py").write_text("import tensorflow as tf\nsess = tf.Sesion()\n")
    [typo] = scan([str(tmp_path)], host=CPU).scripts[0].findings
    assert (typo.name, typo.outcome, typo.severity) == ("tensorflow.Sesion", "missing under run --tf1", BLOCKED)
    assert typo.detail == f"no Sesion in tensorflow (TensorFlow {tf.__version__}), nor under `run --tf1` (tf.compat.v1)"


@LINE_2_15
def test_totals(report):
    assert report.totals() == {
        "scripts": 11,
        "ready": 4,
        "warning": 4,
        "blocked": 3,
        "worlds": {"tf1": 7, "tf2": 0, "weighed": 0},  # 7 import npu_bridge; resnet_model and data_helpers: no sign
        "blocked_by": {"device-only": 1, "does not parse": 1, "invalid": 1},
        "not_installed": {"ais_bench": 1},
    }


def test_the_eras_numpy_and_python_names_are_their_own_class(report):
    """On both lines: what `run`'s era world does with each name, from its table, read through the program's
    aliases (`np.float`); never a missing package (`import imp` on Python 3.12)."""
    findings = script(report, "common/preprocess.py").findings
    assert [(f.name, f.category) for f in findings] == [
        *([("imp", PYTHON), ("imp.load_source", PYTHON)] if NO_IMP else []),
        ("collections.Mapping", PYTHON),
        ("numpy.float", NUMPY),
    ]
    for finding in findings:
        assert finding.detail == ERA.status(finding.name).detail
    assert findings[-1].detail == "NumPy 1.24 removed np.float, which was Python's float: served as float"
    assert not any(f.category is PACKAGE for s in report.scripts for f in s.findings if f.name == "imp")


@pytest.mark.parametrize(
    "statuses, expected",
    [
        # Python 3.11: imp is there as it is
        ({"imp": "current", "imp.load_source": "current", "imp.init_builtin": "current"}, []),
        # Python 3.12: the era world serves imp on importlib; what has no counterpart raises when used
        (
            {"imp": "works", "imp.load_source": "differs", "imp.init_builtin": "missing"},
            [
                (1, PYTHON, "imp", "works under run", READY),
                (2, PYTHON, "imp.load_source", "differs under run", WARNING),
                (3, PYTHON, "imp.init_builtin", "missing under run", BLOCKED),
            ],
        ),
        # a name the table does not know is no finding of the era's
        (
            {"imp": "works", "imp.load_source": "unknown", "imp.init_builtin": "unknown"},
            [(1, PYTHON, "imp", "works under run", READY)],
        ),
    ],
)
def test_an_era_finding_follows_the_names_status_here(tmp_path, monkeypatch, statuses, expected):
    """The status as data: what each Python gives, on whichever Python runs the test (the era's table answers
    each part; its rule reports the shortest part served)."""
    monkeypatch.setattr(ERA, "table_status", lambda name: NameStatus(Status(statuses[name]), f"{name} here"))
    monkeypatch.setattr(ERA, "status", functools.cache(functools.partial(era_status, ERA)))
    (tmp_path / "train.py").write_text("import imp\nimp.load_source('config', 'config.py')\nimp.init_builtin('x')\n")
    findings = scan([str(tmp_path)], host=CPU).scripts[0].findings
    assert [(f.line, f.category, f.name, f.outcome, f.severity) for f in findings] == expected
    assert all(f.detail == f"{f.name} here" for f in findings)


def test_a_name_of_tf1s_private_modules_is_what_run_tf1_serves(tmp_path):
    """`run --tf1` serves TF 1.15's private modules to the program from the TF 1.15 world's table
    (tensorflow.python.util.nest.is_sequence is nest.is_nested): the TF 1.15 world answers for them, and a name its
    table does not know is tf.compat.v1's or missing, as for any other `tensorflow.` name."""
    (tmp_path / "train.py").write_text(
        "from tensorflow.python.util import nest\nnest.is_sequence([])\nnest.no_such_name([])\n"
    )
    findings = scan([str(tmp_path)], host=CPU).scripts[0].findings
    assert [(f.line, f.category, f.name, f.outcome, f.severity) for f in findings] == [
        (2, TF1, "tensorflow.python.util.nest.is_sequence", "works under run --tf1", READY),
        (3, TF1, "tensorflow.python.util.nest.no_such_name", "missing under run --tf1", BLOCKED),
    ]
    assert "is_nested" in findings[0].detail


@pytest.mark.parametrize("refuses", [True, False])
def test_a_str_enum_values_is_a_python_era_finding_where_absl_refuses_it(tmp_path, monkeypatch, refuses):
    """absl-py 2.0 refuses a str as DEFINE_enum's enum_values, which TF's official models' flags pass (absl-py <
    2.0 took it): differs under run. Both absl-py lines, as data; a list of values is no finding."""
    monkeypatch.setattr(era, "refuses_str_enum_values", lambda: refuses)
    monkeypatch.setattr(ERA, "status", functools.cache(functools.partial(era_status, ERA)))  # asked afresh
    (tmp_path / "flags.py").write_text(
        "from absl import flags\nimport tensorflow as tf\n"
        "flags.DEFINE_enum(name='impl', default='keras', enum_values=(\"keras', 'graph_rewrite\"), help='')\n"
        "tf.compat.v1.flags.DEFINE_enum('mode', 'a', 'ab', 'positional')\n"
        "flags.DEFINE_enum('data_format', None, ['channels_first', 'channels_last'], '')\n"
    )
    findings = [f for f in scan([str(tmp_path)], host=CPU).scripts[0].findings if f.category is PYTHON]
    expected = [
        (3, "absl.flags.DEFINE_enum", "differs under run", WARNING),
        (4, "absl.flags.DEFINE_enum", "differs under run", WARNING),
    ]
    assert [(f.line, f.name, f.outcome, f.severity) for f in findings] == (expected if refuses else [])
    assert all(f.detail.startswith("absl-py 2.0 refuses a str as enum_values") for f in findings)


@pytest.mark.starts_processes
def test_distutils_without_setuptools_names_its_remedy():
    """Python 3.12 removed distutils; setuptools keeps a copy, which `run` serves. Without setuptools the name
    has no counterpart, and the finding says to install it (on 3.11 distutils is Python's own)."""
    probe = (
        "import sys; sys.modules['setuptools'] = None\n"  # as if it were not installed
        "from npu_bridge_compat.legacy.era import ERA\n"
        "found = ERA.status('distutils.version.LooseVersion')\n"
        "served = found.status.value in ('works', 'differs', 'missing')\n"
        "print(served and [found.name, ERA.category_of(found.name), found.status.value, found.detail])\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    if sys.version_info < (3, 12):
        assert result.stdout.strip() == "False"
    else:
        assert result.stdout.strip() == str(["distutils", "Python 3.7 name", "missing", NO_SETUPTOOLS])


def scan_cli(capsys, *arguments):
    code = main(["scan", *arguments])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_schema(capsys):
    code, out, _ = scan_cli(capsys, "--format", "json", "--host", "cpu", str(TREE))
    document = json.loads(out)
    assert code == 0
    assert set(document) == {"schema", "paths", "host", "totals", "scripts"}
    assert document["schema"] == "npu_bridge_compat.scan/2" and document["paths"] == [str(TREE)]
    assert set(document["totals"]) == {
        "scripts",
        "ready",
        "warning",
        "blocked",
        "worlds",
        "blocked_by",
        "not_installed",
    }
    assert len(document["scripts"]) == document["totals"]["scripts"] == 11
    for entry in document["scripts"]:
        assert set(entry) == {"path", "status", "world", "findings"}
        assert entry["status"] in ("ready", "warning", "blocked") and entry["world"]["world"] in ("tf1", "tf2")
        assert set(entry["world"]) == {"world", "basis", "scores", "summary", "evidence"}
        for finding in entry["findings"]:
            assert set(finding) == {"line", "category", "name", "value", "outcome", "severity", "detail", "suggestion"}
            assert isinstance(finding["line"], int) and isinstance(finding["detail"], str)
            assert finding["category"] in {category.value for category in Category}
            assert finding["severity"] in ("ready", "warning", "blocked")
            assert finding["value"] is None or isinstance(finding["value"], str)
    typo = next(e for e in document["scripts"] if e["path"].endswith("typo_key.py"))
    assert typo["findings"][-1] == {
        "line": 9,
        "category": "NPU option",
        "name": "iteration_per_loop",
        "value": "10",
        "outcome": "unknown",
        "severity": "warning",
        "suggestion": "iterations_per_loop",
        "detail": "not an option the adapter reads: ignored, as on the NPU; did you mean 'iterations_per_loop'?",
    }


@LINE_2_15
def test_text_lists_blocked_scripts_first_and_totals(capsys):
    code, out, _ = scan_cli(capsys, "--host", "cpu-native-bfloat16", str(TREE))
    assert code == 0
    headers = [line for line in out.splitlines() if line.startswith(("blocked ", "warning ", "ready "))]
    assert [line.split()[0] for line in headers] == ["blocked"] * 3 + ["warning"] * 4 + ["ready"] * 2
    assert (
        "         world: TF 1.15 (decided by: tf.contrib (tf.contrib.layers.xavier_initializer, tf115_contrib.py:6), "
        "TF 1.15 names (tf.placeholder, tf115_contrib.py:5), and 1 more): run --tf1\n"
    ) in out
    assert out.rstrip().splitlines()[-4:] == [
        f"11 Python files on this host (TensorFlow {tf.__version__}, CPU only): 4 ready, 4 with warnings, 3 blocked; "
        "2 without anything to port",
        "  blocked by: device-only (1), does not parse (1), invalid (1)",
        "  not installed here: ais_bench (1)",
        "  worlds: TF 1.15 7 (`run` starts them with --tf1), TF2 0; 0 of them decided by weighing their signs",
    ]


@LINE_2_15
@pytest.mark.parametrize(
    "paths, fail_on, host, code",
    [
        (["session/train_session.py", "estimator/train_resnet.py"], "warning", "cpu-native-bfloat16", 0),
        # Their mixed precision has no host equivalent without AVX-512: a warning.
        (["session/train_session.py", "estimator/train_resnet.py"], "warning", "cpu-without-avx512", 1),
        (["session/typo_key.py"], "blocked", "cpu", 0),
        (["session/typo_key.py"], "warning", "cpu", 1),
        (["session/bad_value.py"], "blocked", "cpu", 1),
        (["."], None, "cpu", 0),
        (["."], "blocked", "cpu", 1),
    ],
)
def test_fail_on_exit_codes(capsys, paths, fail_on, host, code):
    flags = ["--fail-on", fail_on] if fail_on else []
    assert scan_cli(capsys, *flags, "--host", host, *(str(TREE / path) for path in paths))[0] == code


def test_a_missing_path_is_a_usage_error(capsys):
    code, out, err = scan_cli(capsys, str(TREE / "no_such_folder"))
    assert (code, out) == (2, "") and err.strip() == f"error: no such file or folder: {TREE / 'no_such_folder'}"


def test_scanned_code_is_never_executed(tmp_path):
    marker = tmp_path / "executed"
    (tmp_path / "script.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nraise SystemExit(3)\nfrom npu_bridge.npu_init import *\n"
    )
    result = scan([str(tmp_path)], host=CPU)
    assert not marker.exists() and result.scripts[0].status is READY


def test_every_option_of_the_table_is_known(tmp_path):
    fields = {OptionKind.BOOL: "b", OptionKind.INT: "i", OptionKind.STRING: "s"}
    lines = [
        "import tensorflow as tf",
        "FLAGS = tf.compat.v1.flags.FLAGS",
        "config = tf.compat.v1.ConfigProto()",
        "custom_op = config.graph_options.rewrite_options.custom_optimizers.add()",
    ]
    lines += [f'custom_op.parameter_map["{key}"].{fields[spec.kind]} = FLAGS.{key}' for key, spec in OPTIONS.items()]
    (tmp_path / "every_option.py").write_text("\n".join(lines) + "\n")
    findings = scan([str(tmp_path)], host=CPU).scripts[0].findings
    assert {f.name: f.outcome for f in findings} == {key: spec.host.effect.value for key, spec in OPTIONS.items()}


def aliased_names() -> list[tuple[str, str]]:
    """Every (module, public name) that `run`'s aliases serve: the modules its finder loads, as it loads them."""
    legacy.install_aliases()
    pairs = []
    for package in legacy.ALIASED_PACKAGES:
        root = importlib.import_module(package)
        modules = [package] + [info.name for info in pkgutil.walk_packages(root.__path__, package + ".")]
        for module in modules:
            pairs += [(module, name) for name in dir(importlib.import_module(module)) if not name.startswith("_")]
    return pairs


def test_every_alias_run_installs_is_known_to_scan(tmp_path):
    pairs = aliased_names()
    assert len(pairs) > 200
    (tmp_path / "every_alias.py").write_text("".join(f"from {module} import {name}\n" for module, name in pairs))
    findings = {f.name: f for f in scan([str(tmp_path)], host=CPU).scripts[0].findings}
    assert set(findings) == {f"{module}.{name}" for module, name in pairs}
    estimator_door = set() if estimator_library.estimator_api() is not None else {Outcome.OTHER_TENSORFLOW}
    assert {f.outcome for f in findings.values()} == {TRANSLATED, Outcome.DEVICE_ONLY, *estimator_door}
    device_only = [name for name, f in findings.items() if f.outcome == Outcome.DEVICE_ONLY]
    assert len(device_only) >= 10
    for name in device_only:  # what scan calls device-only is what raises DeviceOnlyFeatureError under run
        module, attribute = name.rsplit(".", 1)
        with pytest.raises(DeviceOnlyFeatureError):
            getattr(importlib.import_module(module), attribute)()


@pytest.mark.without_estimator
def test_the_estimator_door_is_reported_where_tensorflow_has_none(tmp_path):
    (tmp_path / "estimator_port.py").write_text(
        "import tensorflow as tf\nfrom npu_bridge.npu_init import *\n"
        "config = NPURunConfig(iterations_per_loop=10)\n"
        "estimator = tf.contrib.tpu.TPUEstimator\n"
        "net = tf.layers.dense(tf.placeholder(tf.float32, [1, 2]), 1)\n"
    )
    findings = {f.name: f for f in scan([str(tmp_path)], host=CPU).scripts[0].findings}
    config = findings["npu_bridge.npu_init.NPURunConfig"]
    assert (config.outcome, config.severity) == (Outcome.OTHER_TENSORFLOW, BLOCKED)
    assert "needs tf.estimator, which TensorFlow removed in 2.16" in config.detail
    assert findings["tensorflow.contrib.tpu.TPUEstimator"].outcome == "missing under run --tf1"
    assert findings["tensorflow.layers.dense"].outcome == "works under run --tf1"  # tf_keras, as run selects


def test_scan_agrees_with_run_on_the_names_real_scripts_use(tmp_path):
    """The survey of ModelZoo's adapter names: scan calls a name unknown exactly when `run` cannot resolve it."""
    names = [
        line.split("\t")[1].split(" (")[0]
        for line in (HERE / "data" / "adapter_names.tsv").read_text().splitlines()
        if not line.startswith("#")
    ]
    source = "import npu_bridge\nimport hccl\n" + "".join(f"{name}\n" for name in names)
    (tmp_path / "survey.py").write_text(source)
    findings = scan([str(tmp_path)], host=CPU).scripts[0].findings
    unknown = [f.name for f in findings if f.outcome == Outcome.UNKNOWN]
    legacy.install_aliases()
    assert {name for name in names if any(name == u or name.startswith(u + ".") for u in unknown)} == {
        name for name in names if not _resolves(name)
    }
    assert unknown  # the survey holds the scripts' own `util` modules, which the adapter's util lacks


def test_worker_processes_give_the_same_report(report, monkeypatch):
    monkeypatch.setattr(scanner, "PARALLEL_FROM", 1)
    assert scan([str(TREE)], host=CPU, workers=2) == report


def test_progress_bar_draws_for_large_trees_only():
    stream = io.StringIO()
    bar = ProgressBar(stream, terminal_only=False, interval=0)
    bar(5, LARGE_TREE - 1)
    assert stream.getvalue() == ""
    for done in (1, LARGE_TREE // 2, LARGE_TREE):
        bar(done, LARGE_TREE)
    bar.close()
    drawn = stream.getvalue().split("\r")
    assert f"scan [{'#' * 15}{'.' * 15}] {LARGE_TREE // 2}/{LARGE_TREE} files" in drawn
    assert f"scan [{'#' * 30}] {LARGE_TREE}/{LARGE_TREE} files" in drawn and drawn[-1] == ""
    assert not ProgressBar(io.StringIO()).enabled  # not a terminal: nothing is drawn


# --- the world of each script: TF 1.15 (run --tf1) or TF2 --------------------------------------------------------

WORLD_PROGRAMS = {
    # TF 2.6's tensorflow.python.keras was tf.keras up to TF 2.5: no sign of TF 1.15, nor a TF 1.15 finding
    "keras_port": (
        {
            "train.py": """
                import tensorflow as tf
                from layers import Scale
                model = tf.keras.Sequential([Scale()])
                model.compile("sgd", "mse")
            """,
            "layers.py": """
                from tensorflow.python.keras import backend as K
                from tensorflow.python.keras.layers import Layer
                class Scale(Layer):
                    def call(self, inputs):
                        return K.relu(inputs)
            """,
        },
        ("tf2", "weighed", [("Keras model", False, 2, "train.py:3")]),
    ),
    # graph code through tf.compat.v1: TF1, by weight (TF2 runs it too where eager execution is off)
    "compat_v1_graph": (
        {
            "train.py": """
                import tensorflow as tf
                x = tf.compat.v1.placeholder(tf.float32, [None])
                with tf.compat.v1.Session() as sess:
                    print(sess.run(x, {x: [1.0]}))
            """,
        },
        ("tf1", "weighed", [("session", False, 3, "train.py:3"), ("placeholder", False, 3, "train.py:2")]),
    ),
    # tf.compat.v1 for logging, flags and app.run is no graph code
    "compat_v1_logging": (
        {
            "train.py": """
                import tensorflow as tf
                tf.compat.v1.flags.DEFINE_integer("steps", 1, "steps")
                def main(_):
                    tf.compat.v1.logging.info("training")
                    step = tf.function(lambda x: x + 1)
                tf.compat.v1.app.run(main)
            """,
        },
        ("tf2", "weighed", [("tf.function", False, 3, "train.py:5")]),
    ),
    # a name only TF 1.15 has, at the top level of a module the script imports: it runs, and decides
    "contrib_module": (
        {
            "train.py": "import nets\nimport tensorflow as tf\nmodel = tf.keras.Model()\n",
            "nets.py": "import tensorflow as tf\nslim = tf.contrib.slim\n",
        },
        ("tf1", "decisive", [("tf.contrib", True, 5, "nets.py:2"), ("Keras model", False, 2, "train.py:3")]),
    ),
    # code guarded against a name's absence, and a module imported by version, were written for both worlds
    "guarded": (
        {
            "train.py": """
                import tensorflow as tf
                if tf.__version__ >= "2.0.0":
                    from rnn_v2 import dynamic_rnn
                else:
                    from rnn_v1 import dynamic_rnn
                try:
                    to_bucket = tf.string_to_hash_bucket_fast
                except AttributeError:
                    to_bucket = tf.strings.to_hash_bucket_fast
                model = tf.keras.Model()
            """,
            "rnn_v1.py": "import tensorflow as tf\nREUSE = tf.AUTO_REUSE\n",
            "rnn_v2.py": "import tensorflow as tf\nREUSE = tf.compat.v1.AUTO_REUSE\n",
        },
        ("tf2", "weighed", [("Keras model", False, 2, "train.py:10")]),
    ),
    # a TF 1.15 name in a function of an imported module runs only if called: half its weight, and no decision
    "module_function": (
        {
            "train.py": "import tensorflow as tf\nimport rnn\nstep = tf.function(rnn.step)\n",
            "rnn.py": "import tensorflow as tf\ndef step(x):\n    return tf.AUTO_REUSE\n",
        },
        ("tf2", "default", [("TF 1.15 name", False, 3, "rnn.py:3"), ("tf.function", False, 3, "train.py:3")]),
    ),
    # the TF2 adapter's import says which TensorFlow its author ran
    "npu_device": (
        {
            "train.py": "import npu_device\nimport rnn\nnpu_device.compat.enable_v1()\n",
            "rnn.py": "import tensorflow as tf\ndef step(x):\n    return tf.AUTO_REUSE\n",
        },
        (
            "tf2",
            "decisive",
            [
                ("TF 1.15 name", False, 3, "rnn.py:3"),
                ("TF2 adapter", True, 4, "train.py:1"),
            ],
        ),
    ),
    # names only each world serves, both in the script: the heavier side
    "conflict": (
        {
            "train.py": """
                import tensorflow as tf
                tf.random.set_seed(0)
                weights = tf.compat.v1.get_variable("w", [1])
                sess = tf.Session()
            """,
        },
        (
            "tf1",
            "conflict",
            [
                ("TF 1.15 name", True, 5, "train.py:4"),
                ("graph variables", False, 2, "train.py:3"),
                ("TF2-only name", True, 5, "train.py:2"),
            ],
        ),
    ),
}


@pytest.mark.parametrize("program", WORLD_PROGRAMS)
def test_each_script_gets_its_world_with_the_evidence(tmp_path, program):
    files, (world, basis, evidence) = WORLD_PROGRAMS[program]
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip())
    report = scan([str(tmp_path)], host=CPU)
    decision = script_at(report, tmp_path / "train.py").world
    assert (decision.world, decision.basis) == (world, basis)
    assert [(item.kind, item.decisive, item.weight, item.where) for item in decision.evidence] == evidence
    [as_json] = [entry for entry in report.as_json()["scripts"] if entry["path"] == str(tmp_path / "train.py")]
    assert as_json["world"] == decision.as_json()
    tf1_names = [f.name for s in report.scripts for f in s.findings if f.category is Category.TENSORFLOW]
    assert not [name for name in tf1_names if name.startswith("tensorflow.python.keras")]


def script_at(report, path: Path):
    return next(s for s in report.scripts if s.path == str(path))


def test_the_world_decision_reads_its_weights_out():
    files, _ = WORLD_PROGRAMS["conflict"]
    decision = scan_world(files)
    assert decision.scores == {"tf1": 7, "tf2": 5}
    assert decision.summary() == (
        "TF 1.15 (deciding signs of both worlds; weighed 7 to 5: TF 1.15 names (tf.Session, train.py:4), "
        "graph variables and collections (tf.compat.v1.get_variable, train.py:3); against it, TF2's names only "
        "TensorFlow 2 has (tf.random.set_seed, train.py:2))"
    )


def scan_world(files: dict[str, str]):
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        for name, text in files.items():
            Path(folder, name).write_text(textwrap.dedent(text).lstrip())
        return script_at(scan([folder], host=CPU), Path(folder, "train.py")).world


@pytest.mark.starts_processes
def test_run_decides_the_world_itself_and_says_so_when_it_weighed(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import tensorflow as tf\n"
        "def build():\n"
        "    return tf.compat.v1.placeholder(tf.float32), tf.compat.v1.Session()\n"
        "print('eager:', tf.executing_eagerly())\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "run", str(probe)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "eager: False"  # the TF 1.15 world: TF2 behaviour off
    assert (
        "npu_bridge_compat: running probe.py as a TF 1.15 (weighed 6 to 0: sessions (tf.compat.v1.Session, "
        "probe.py:3), placeholders (tf.compat.v1.placeholder, probe.py:3)) program; --tf1 says so yourself"
    ) in result.stderr.splitlines()


def test_the_users_world_wins_and_the_flags_exclude_each_other(tmp_path, capsys):
    from npu_bridge_compat.runner import choose_world

    assert choose_world(str(tmp_path / "not_even_read.py"), "tf2") == "tf2"
    with pytest.raises(SystemExit):
        main(["run", "--tf1", "--tf2", "train.py"])
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.starts_processes
def test_scan_of_one_file_says_what_run_does_with_tensorflow_2_15s_estimator_paths(tmp_path):
    """TensorFlow 2.15's Estimator module paths, which `run` serves on every line, are no finding of a file scanned
    alone, as of one scanned after a file whose adapter names loaded the library: `run --tf1` imports them."""
    script = tmp_path / "hooks.py"
    script.write_text(
        "import tensorflow as tf\n"
        "from tensorflow.python.estimator import estimator\n"
        "sess = tf.Session()\n"
        "print('checked', estimator._check_hooks_type([]))\n"
    )
    scanned = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "scan", "--format", "json", str(script)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert scanned.returncode == 0, scanned.stderr[-3000:]
    [report] = json.loads(scanned.stdout)["scripts"]
    assert [finding["name"] for finding in report["findings"]] == ["tensorflow.Session"]
    ran = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "run", "--tf1", str(script)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0 and ran.stdout.strip().splitlines()[-1] == "checked []", ran.stderr[-3000:]


@pytest.mark.starts_processes
def test_scan_looks_names_up_as_run_gives_them(tmp_path):
    """scan selects Keras 2 as `run` does before TensorFlow loads, so that TF 1.15 names Keras implements
    (tf.contrib.rnn.LSTMCell: tf.compat.v1.nn.rnn_cell, Keras 3's lazy loader fails to list it) resolve."""
    script = tmp_path / "rnn.py"
    script.write_text("import tensorflow as tf\ncell = tf.contrib.rnn.LSTMCell(8)\n")
    environment = {name: value for name, value in os.environ.items() if name != "TF_USE_LEGACY_KERAS"}
    result = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "scan", "--format", "json", str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    [finding] = [f for f in json.loads(result.stdout)["scripts"][0]["findings"] if f["name"].endswith("LSTMCell")]
    assert finding["outcome"] == "works under run --tf1" and "rnn_cell.LSTMCell" in finding["detail"]


def test_standalone_keras_2_2_names_are_findings_of_the_keras2_world(tmp_path):
    """The Keras 2.2 table answers scan as it answers `run --tf1`: paths the line's Keras lacks work there; a name
    the line's Keras has is no finding."""
    (tmp_path / "train.py").write_text(
        "import tensorflow as tf\nfrom keras.engine.topology import Layer\nfrom keras.layers import Dense\n"
        "from keras.utils.layer_utils import layer_from_config\nsess = tf.Session()\n"
    )
    findings = scan([str(tmp_path)], host=CPU).scripts[0].findings
    keras2 = [(f.line, f.name, f.outcome, f.severity) for f in findings if f.category is Category.KERAS2]
    assert keras2 == [
        (2, "keras.engine.topology.Layer", "works under run --tf1", Severity.READY),
        (4, "keras.utils.layer_utils.layer_from_config", "works under run --tf1", Severity.READY),
    ]


def test_keras_1_merge_is_said_for_each_run_as_that_run_serves_it(tmp_path):
    """`from keras.layers import merge`: the TF 2.6 world serves Keras 2.6's merging module under `run`; the Keras
    2.2 world, under `run --tf1`, Keras 1's merge function, which has no counterpart (a stand-in). scan says each."""
    (tmp_path / "train.py").write_text("from keras.layers import merge\n")
    findings = scan([str(tmp_path)], host=CPU).scripts[0].findings
    said = sorted((f.category, f.name, f.outcome, f.severity) for f in findings if f.name == "keras.layers.merge")
    assert said == [
        (Category.KERAS2, "keras.layers.merge", "missing under run --tf1", Severity.BLOCKED),
        (Category.TF26, "keras.layers.merge", "works under run", Severity.READY),
    ]
