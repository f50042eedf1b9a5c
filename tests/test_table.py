"""The option table covers the adapter's session keys, with one complete declaration each."""

from pathlib import Path

import pytest

from npu_bridge_compat.cli import markdown_table
from npu_bridge_compat.options import OPTIONS, Concern, Effect, OptionKind

DATA = Path(__file__).parent / "data"

# Keys the table holds although the newest adapter's npu_attrs.cc no longer reads them: older releases read them,
# or NPURunConfig still writes them, so ported scripts carry them.
HISTORICAL_KEYS = {
    "fp_point": "s",
    "bp_point": "s",  # adapter 1.1, now inside profiling_options
    "mstune_mode": "s",
    "op_tune_mode": "s",  # tuning modes before AOE
    "es_cluster_config": "s",  # embedding-service releases
    "enable_reduce_precision": "b",
    "min_group_size": "b",  # written by NPUEstimator, never read
}


def adapter_session_keys() -> dict[str, tuple[str, str]]:
    """tests/data/adapter_session_keys.tsv: key -> (AttrValue field, note)."""
    rows = {}
    for line in (DATA / "adapter_session_keys.tsv").read_text().splitlines():
        if line and not line.startswith("#"):
            key, field, *note = line.split("\t")
            rows[key] = (field, note[0] if note else "")
    return rows


def test_table_has_every_key_the_adapter_reads_with_its_field():
    read = adapter_session_keys()
    missing = sorted(key for key, (_, note) in read.items() if key not in OPTIONS and not note)
    assert not missing, f"the adapter reads {missing}: add them to the option table, or mark them absent with a reason"
    wrong_field = {
        key: (field, OPTIONS[key].kind.value)
        for key, (field, _) in read.items()
        if key in OPTIONS and OPTIONS[key].kind.value != field
    }
    assert not wrong_field


def test_keys_left_out_on_purpose_say_why_and_are_really_absent():
    for key, (_, note) in adapter_session_keys().items():
        if note:
            assert note.startswith("absent: ") and len(note) > len("absent: "), key
            assert key not in OPTIONS, f"{key} is marked absent but the table has it"


def test_table_holds_only_keys_the_adapter_reads_or_read():
    read = {key: field for key, (field, note) in adapter_session_keys().items() if not note}
    adapter_keys = {key: spec.kind.value for key, spec in OPTIONS.items() if spec.tf1 and not spec.host_extension}
    assert adapter_keys == {**read, **HISTORICAL_KEYS}


def test_host_extensions_are_keys_the_adapter_never_had():
    extensions = {key for key, spec in OPTIONS.items() if spec.host_extension}
    assert extensions == {"enable_graph_kernel"}
    assert not extensions & set(adapter_session_keys()) and not extensions & set(HISTORICAL_KEYS)


def test_table_is_read_only():
    with pytest.raises(TypeError):
        OPTIONS["new_key"] = OPTIONS["iterations_per_loop"]


@pytest.mark.parametrize("key", sorted(OPTIONS))
def test_every_option_is_fully_declared(key):
    spec = OPTIONS[key]
    assert spec.key == key
    assert isinstance(spec.concern, Concern) and isinstance(spec.host.effect, Effect)
    assert spec.host.how and spec.doc.endswith(".")
    assert spec.default is None or isinstance(spec.default, spec.kind.python_type)
    assert all(required in OPTIONS for required in spec.requires)


def test_defaults_follow_the_adapter():
    assert OPTIONS["iterations_per_loop"].default == 1
    assert OPTIONS["enable_exception_dump"].default == 2
    assert OPTIONS["dump_mode"].default == "output"
    assert OPTIONS["hcom_parallel"].default is True
    assert OPTIONS["precision_mode"].default is None  # left to the NPU software


def test_kinds_map_to_python_types():
    assert [OptionKind(k).python_type for k in "bis"] == [bool, int, str]


def test_docs_option_table_is_generated_from_the_table():
    # The page is its introduction, then the table exactly as `python -m npu_bridge_compat options` prints it.
    docs = (Path(__file__).parent.parent / "docs" / "options.md").read_text()
    introduction, table_start, _ = docs.partition("\n| option |")
    assert table_start and "\n|" not in introduction
    assert docs == f"{introduction}\n{markdown_table()}\n", (
        "regenerate the table below the page's introduction with: python -m npu_bridge_compat options"
    )
