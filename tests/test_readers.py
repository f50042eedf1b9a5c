"""Both readers, table-driven over every option: a valid value passes, an invalid one names the option."""

import warnings

import pytest
from helpers import context_for, example_values, npu_config

from npu_bridge_compat import NpuConfigError, NpuOptionTypeError, NpuOptionValueError
from npu_bridge_compat.errors import UnknownOptionWarning
from npu_bridge_compat.options import OPTIONS, options_from_config_proto, options_from_kwargs


@pytest.mark.parametrize("key", sorted(OPTIONS))
def test_valid_value_is_accepted_silently_by_both_readers(key, tmp_path):
    valid, _ = example_values(key, tmp_path)
    values = {**context_for(key, tmp_path), key: valid}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from_kwargs = options_from_kwargs(values)
        from_proto = options_from_config_proto(npu_config(values))
    expected = str(valid) if OPTIONS[key].kind.value == "s" else valid
    assert getattr(from_kwargs, key) == expected
    assert from_kwargs == from_proto
    assert from_kwargs.is_set(key) and from_kwargs.is_active(key)


@pytest.mark.parametrize("key", sorted(OPTIONS))
def test_invalid_value_is_an_error_naming_the_option(key, tmp_path):
    _, invalid = example_values(key, tmp_path)
    values = {**context_for(key, tmp_path), key: invalid}
    with pytest.raises(NpuConfigError, match=f'"{key}"'):
        options_from_kwargs(values)
    with pytest.raises(NpuConfigError, match=f'"{key}"'):
        options_from_config_proto(npu_config(values))


def test_value_in_the_wrong_attr_field_names_key_field_and_value():
    config = npu_config({"mix_compile_mode": "True"})
    with pytest.raises(NpuOptionTypeError) as error:
        options_from_config_proto(config)
    message = str(error.value)
    assert '"mix_compile_mode"' in message and ".b (bool)" in message and ".s (bytes)" in message
    assert "b'True'" in message
    assert isinstance(error.value, TypeError)


def test_jit_compile_must_be_a_string_field():
    with pytest.raises(NpuOptionTypeError, match=r'"jit_compile".*\.s \(bytes\).*\.b \(bool\)'):
        options_from_config_proto(npu_config({"jit_compile": True}))


def test_later_npu_optimizer_entries_win_key_by_key():
    config = npu_config({"iterations_per_loop": 10, "precision_mode": "force_fp32"}, {"iterations_per_loop": 5})
    options = options_from_config_proto(config)
    assert options.iterations_per_loop == 5
    assert options.precision_mode == "force_fp32"


def test_other_custom_optimizers_are_not_read():
    config = npu_config({"iterations_per_loop": 3})
    other = config.graph_options.rewrite_options.custom_optimizers.add()
    other.name = "SomethingElse"
    other.parameter_map["iterations_per_loop"].i = 0
    assert options_from_config_proto(config).iterations_per_loop == 3


def test_config_without_npu_optimizer_gives_defaults():
    options = options_from_config_proto(npu_config())
    assert options.explicit == frozenset() and options.iterations_per_loop == 1


def test_touched_but_unassigned_attr_reads_as_the_field_zero_value():
    config = npu_config({})
    config.graph_options.rewrite_options.custom_optimizers[0].parameter_map["enable_dump_debug"]
    options = options_from_config_proto(config)
    assert options.is_set("enable_dump_debug") and options.enable_dump_debug is False


@pytest.mark.parametrize(
    "typo, suggestion",
    [
        ("sump_mode", "dump_mode"),
        ("sfusion_switch_file", "fusion_switch_file"),
        ("autotune_tune_mode", "auto_tune_mode"),
        ("allow_mix_compile", "mix_compile_mode"),
    ],
)
def test_unknown_keys_from_real_scripts_warn_with_the_closest_key(typo, suggestion):
    with pytest.warns(UnknownOptionWarning, match=f"'{typo}'.*Did you mean '{suggestion}'"):
        options = options_from_config_proto(npu_config({typo: "x"}))
    assert options.explicit == frozenset()
    with pytest.warns(UnknownOptionWarning, match=f"Did you mean '{suggestion}'"):
        options_from_kwargs({typo: "x"})


def test_warning_points_at_the_callers_line():
    with pytest.warns(UnknownOptionWarning) as record:
        options_from_kwargs(sump_mode="all")
    assert record[0].filename == __file__


def test_none_means_unset_and_bytes_are_text():
    options = options_from_kwargs(precision_mode=None, dump_layer=b"conv1 conv2")
    assert not options.is_set("precision_mode")
    assert options.dump_layer == "conv1 conv2"


def test_memory_sizes_accept_integers_as_npurunconfig_passes_them():
    options = options_from_kwargs(graph_memory_max_size=8 * 1024**3)
    assert options.graph_memory_max_size == str(8 * 1024**3)
    assert options.parsed_value("graph_memory_max_size") == 8 * 1024**3


@pytest.mark.parametrize("key, value", [("iterations_per_loop", True), ("mix_compile_mode", 1), ("precision_mode", 3)])
def test_python_values_of_the_wrong_type_are_type_errors(key, value):
    with pytest.raises(NpuOptionTypeError, match=f'"{key}".*got {type(value).__name__}'):
        options_from_kwargs({key: value})


def test_undecodable_bytes_are_a_value_error():
    with pytest.raises(NpuOptionValueError, match='"dump_path".*UTF-8'):
        options_from_config_proto(npu_config({"dump_path": b"\xff\xfe"}))


def test_options_are_frozen_hashable_and_compare_by_value():
    first = options_from_kwargs(iterations_per_loop=4)
    second = options_from_kwargs({"iterations_per_loop": 4})
    assert first == second and hash(first) == hash(second)
    assert first != options_from_kwargs(iterations_per_loop=4, precision_mode="force_fp32")
    with pytest.raises(AttributeError):
        first.iterations_per_loop = 5
    assert repr(first) == "NpuOptions(iterations_per_loop=4)"
