"""Fuzzing both readers: whatever a script puts in, only our documented exceptions come out."""

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensorflow.core.protobuf import config_pb2

from npu_bridge_compat import NpuConfigError
from npu_bridge_compat.options import OPTIONS, options_from_config_proto, options_from_kwargs
from npu_bridge_compat.plan import HostFacts, build_plan

KEYS = st.one_of(st.sampled_from(sorted(OPTIONS)), st.text(max_size=20))
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3),
    max_leaves=8,
)
TEXT = st.one_of(
    st.text(max_size=30),
    st.from_regex(r"[\d|\-]{0,12}", fullmatch=True),
    JSON.map(json.dumps),
    st.sampled_from(["[[['a'],['b']]]", "getnext:[1,2~3]", "0|5|10", "1,2"]),
)
VALUES = st.one_of(
    st.booleans(),
    st.integers(-5, 2**40),
    TEXT,
    st.binary(max_size=12),
    st.floats(),
    st.none(),
    st.lists(st.integers(), max_size=2),
)
HOST = HostFacts("2.15.1", 0)
pytestmark = pytest.mark.filterwarnings("ignore::npu_bridge_compat.errors.NpuCompatWarning")
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def outcome(build):
    """Build options (and their plan); only NpuConfigError may escape, warnings are fine."""
    try:
        options = build()
    except NpuConfigError:
        return
    build_plan(options, HOST)


@FUZZ
@given(st.dictionaries(KEYS, VALUES, max_size=6))
def test_kwargs_reader_raises_only_documented_errors(values):
    outcome(lambda: options_from_kwargs(values))


@FUZZ
@given(st.lists(st.dictionaries(KEYS, st.tuples(st.sampled_from("bisf"), VALUES), max_size=6), max_size=3))
def test_config_proto_reader_raises_only_documented_errors(entries):
    config = config_pb2.ConfigProto()
    for entry in entries:
        custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
        custom_op.name = "NpuOptimizer"
        for key, (field, value) in entry.items():
            attr = custom_op.parameter_map[key]
            try:
                if field == "s":
                    attr.s = value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogatepass")
                else:
                    setattr(attr, field, value)
            except (TypeError, ValueError, UnicodeEncodeError):
                attr.s = b"x"  # protobuf itself refused the value; no script could have stored it
    outcome(lambda: options_from_config_proto(config))


@FUZZ
@given(JSON, st.sampled_from(["modify_mixlist", "fusion_switch_file"]))
def test_json_files_raise_only_documented_errors(tmp_path_factory, document, key):
    path = tmp_path_factory.mktemp("fuzz") / "doc.json"
    path.write_text(json.dumps(document))
    outcome(lambda: options_from_kwargs({key: str(path), "precision_mode": "allow_mix_precision"}))


@FUZZ
@given(JSON)
def test_profiling_options_json_raises_only_documented_errors(document):
    outcome(lambda: options_from_kwargs(profiling_mode=True, profiling_options=json.dumps(document)))


@FUZZ
@given(st.sampled_from(sorted(key for key, spec in OPTIONS.items() if spec.check is not None)), TEXT)
def test_every_grammar_rejects_only_with_grammar_errors(key, text):
    from npu_bridge_compat.options.grammars import GrammarError

    check = OPTIONS[key].check
    is_int = OPTIONS[key].kind.value == "i"
    if is_int and not re.fullmatch(r"-?\d+", text):
        return  # integer options only ever reach their check as integers
    value = int(text) if is_int else text
    try:
        check.parse(value)
    except GrammarError:
        pass
