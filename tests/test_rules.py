"""Every cross-option rule of options-spec §1i: the violation is refused (or advised against) in the adapter's words."""

import pytest

from npu_bridge_compat.errors import ConfigurationAdvice, NpuOptionValueError
from npu_bridge_compat.options import options_from_kwargs


@pytest.fixture
def mixlist(tmp_path):
    path = tmp_path / "ops_info.json"
    path.write_text('{"black-list": {"to-add": ["Exp"]}}')
    return str(path)


@pytest.mark.parametrize(
    "values, message",
    [
        (
            {"mix_compile_mode": True, "iterations_per_loop": 10},
            '"iterations_per_loop" must be 1 with "mix_compile_mode" is True (got iterations_per_loop=10)',
        ),
        ({"in_out_pair": "[[['a'], ['b']]]"}, "mix_compile_mode must be True when use in_out_pair."),
        ({"enable_dump": True}, "if use dump function, dump_path must be set. (enable_dump=True"),
        ({"enable_dump_debug": True}, "if use dump function, dump_path must be set. (enable_dump_debug=True"),
        (
            {"precision_mode": "allow_mix_precision", "precision_mode_v2": "mixed_float16"},
            "'precision_mode' and 'precision_mode_v2' can not be assigned at the same time.",
        ),
        ({"optypelist_for_implmode": "Pooling"}, "when use optypelist_for_implmode, op_select_implmode must be set."),
        (
            {"input_shape": "data:1,-1", "dynamic_dims": "1;2"},
            "input_shape, dynamic_dims and dynamic_node_type should use together. (set: input_shape, dynamic_dims; "
            "missing: dynamic_node_type)",
        ),
        (
            {"input_shape": "data:1,-1", "dynamic_dims": "1;2", "dynamic_node_type": 0, "mix_compile_mode": True},
            "dynamic config can not use with mix compile.",
        ),
        (
            {"input_shape": "data:-1,-1", "dynamic_dims": "1;2", "dynamic_node_type": 0},
            "dynamic_dims gear 1 has 1 sizes, but input_shape 'data:-1,-1' has 2 dynamic (-1) dimensions",
        ),
        (
            {"input_shape": "data:-1", "dynamic_dims": "1", "dynamic_node_type": 0},
            "dynamic_dims must list more than one gear",
        ),
        (
            {"dynamic_input": True, "dynamic_graph_execute_mode": "lazy_recompile", "iterations_per_loop": 4},
            "iterations_per_loop only support 1 in lazy_recompile mode. Current is:4",
        ),
        (
            {"enable_compress_weight": False, "compress_weight_conf": "/x.cfg"},
            "enable_compress_weight can not use with compress_weight_conf.",
        ),
    ],
)
def test_rule_violations_are_errors(values, message):
    with pytest.raises(NpuOptionValueError) as error:
        options_from_kwargs(values)
    assert message in str(error.value)


@pytest.mark.parametrize(
    "precision, message",
    [
        (
            {"precision_mode": "force_fp32"},
            "modify_mixlist is assigned, please ensure that precision_mode is assigned to 'allow_mix_precision'",
        ),
        (
            {"precision_mode_v2": "origin"},
            "modify_mixlist is assigned, please ensure that precision_mode_v2 is assigned to 'mixed_float16'",
        ),
        ({}, "neither precision_mode nor precision_mode_v2 is set"),
    ],
)
def test_mixlist_needs_a_mixed_precision_mode(mixlist, precision, message):
    with pytest.raises(NpuOptionValueError, match=message):
        options_from_kwargs(modify_mixlist=mixlist, **precision)


@pytest.mark.parametrize(
    "precision", [{"precision_mode": "allow_mix_precision_bf16"}, {"precision_mode_v2": "mixed_bfloat16"}]
)
def test_mixlist_with_a_mixed_mode_is_fine(mixlist, precision):
    assert options_from_kwargs(modify_mixlist=mixlist, **precision).modify_mixlist == mixlist


@pytest.mark.parametrize(
    "values, message",
    [
        ({"enable_dump": True, "enable_dump_debug": True}, "use one at a time"),
        ({"op_precision_mode": "/x.ini", "op_select_implmode": "high_precision"}, "op_precision_mode wins"),
        ({"graph_memory_max_size": str(30 * 1024**3)}, r"\(35.0 GiB\) exceeds the 31 GiB"),
    ],
)
def test_advice_is_a_warning(values, message, tmp_path):
    if values.get("enable_dump"):
        values["dump_path"] = str(tmp_path)
    with pytest.warns(ConfigurationAdvice, match=message):
        options_from_kwargs(values)


def test_mixed_compute_with_one_step_is_valid():
    options = options_from_kwargs(mix_compile_mode=True, iterations_per_loop=1)
    assert options.mix_compile_mode and options.iterations_per_loop == 1


def test_rules_hold_for_config_protos_too():
    from helpers import npu_config

    from npu_bridge_compat.options import options_from_config_proto

    with pytest.raises(NpuOptionValueError, match='"iterations_per_loop" must be 1 with "mix_compile_mode"'):
        options_from_config_proto(npu_config({"mix_compile_mode": True, "iterations_per_loop": 100}))
