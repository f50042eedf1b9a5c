"""`scan`: the porting report over a tree of ported-style scripts (tests/data/scan_tree), checked against `run`."""

import importlib
import io
import json
import pkgutil
from pathlib import Path

import pytest
import tensorflow as tf
from helpers import npu_config
from test_legacy import _resolves

from npu_bridge_compat import compat, legacy
from npu_bridge_compat.cli import main
from npu_bridge_compat.errors import DeviceOnlyFeatureError, NpuOptionValueError
from npu_bridge_compat.options import OPTIONS, Kind, options_from_config_proto
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
        BLOCKED,
        [
            (2, PACKAGE, "moxing", None, Outcome.NOT_INSTALLED, BLOCKED),
            (4, ADAPTER, "npu_bridge.npu_init.*", None, TRANSLATED, READY),
            (7, PACKAGE, "ais_bench", None, Outcome.NOT_INSTALLED, WARNING),  # inside try/except ImportError
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
def test_tf1_names_need_run_tf1_and_say_what_they_become(report, tmp_path):
    tf1 = script(report, "session/tf115_contrib.py")
    assert tf1.needs_tf1 and not script(report, "session/train_session.py").needs_tf1
    details = {f.name: f.detail for f in tf1.findings}
    # TF1 trees answered from the table run --tf1 serves them from
    assert details["tensorflow.contrib.layers.xavier_initializer"] == "tf_slim.layers.xavier_initializer"
    assert "use_tpu=False" in details["tensorflow.contrib.tpu.TPUEstimator"]
    assert details["tensorflow.Session"] == (
        "tf.Session is tf.compat.v1.Session under `run --tf1` (TensorFlow 2.15 has no tf.Session)"
    )
    (tmp_path / "typo.py").write_text("import tensorflow as tf\nsess = tf.Sesion()\n")
    [typo] = scan([str(tmp_path)], host=CPU).scripts[0].findings
    assert (typo.name, typo.outcome, typo.severity) == ("tensorflow.Sesion", "missing under run --tf1", BLOCKED)
    assert typo.detail == "no Sesion in tensorflow (TensorFlow 2.15), nor under `run --tf1` (tf.compat.v1)"


@LINE_2_15
def test_totals(report):
    assert report.totals() == {
        "scripts": 10,
        "ready": 4,
        "warning": 2,
        "blocked": 4,
        "needs_tf1": 1,
        "blocked_by": {"device-only": 1, "does not parse": 1, "not installed": 1, "invalid": 1},
        "not_installed": {"moxing": 1, "ais_bench": 1},
    }


def scan_cli(capsys, *arguments):
    code = main(["scan", *arguments])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_schema(capsys):
    code, out, _ = scan_cli(capsys, "--format", "json", "--host", "cpu", str(TREE))
    document = json.loads(out)
    assert code == 0
    assert set(document) == {"schema", "paths", "host", "totals", "scripts"}
    assert document["schema"] == "npu_bridge_compat.scan/1" and document["paths"] == [str(TREE)]
    assert set(document["totals"]) == {
        "scripts",
        "ready",
        "warning",
        "blocked",
        "needs_tf1",
        "blocked_by",
        "not_installed",
    }
    assert len(document["scripts"]) == document["totals"]["scripts"] == 10
    for entry in document["scripts"]:
        assert set(entry) == {"path", "status", "needs_tf1", "findings"}
        assert entry["status"] in ("ready", "warning", "blocked") and isinstance(entry["needs_tf1"], bool)
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
    assert [line.split()[0] for line in headers] == ["blocked"] * 4 + ["warning"] * 2 + ["ready"] * 2
    assert out.rstrip().splitlines()[-4:] == [
        f"10 Python files on this host (TensorFlow {tf.__version__}, CPU only): 4 ready, 2 with warnings, 4 blocked; "
        "2 without anything to port",
        "  blocked by: device-only (1), does not parse (1), invalid (1), not installed (1)",
        "  not installed here: ais_bench (1), moxing (1)",
        "  TF 1.15 scripts (run them with `python -m npu_bridge_compat run --tf1`): 1",
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
    fields = {Kind.BOOL: "b", Kind.INT: "i", Kind.STRING: "s"}
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
    estimator_door = set() if compat.estimator_api() is not None else {Outcome.OTHER_TENSORFLOW}
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
