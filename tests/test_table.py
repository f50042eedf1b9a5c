"""The option table covers the adapter's session keys, with one complete declaration each."""

from pathlib import Path

import pytest

from npu_bridge_compat.cli import markdown_table
from npu_bridge_compat.options import OPTIONS, Concern, Effect, Kind

# Every key of options-spec §1 with its AttrValue field, written out independently of the table.
ADAPTER_KEYS = {
    "iterations_per_loop": "i", "mix_compile_mode": "b", "enable_data_pre_proc": "b", "use_off_line": "b",
    "lower_functional_ops": "b", "const_input": "s", "job": "s", "task_index": "i", "in_out_pair": "s",
    "in_out_pair_flag": "b", "graph_run_mode": "i", "session_device_id": "i", "variable_placement": "s",
    "frozen_variable": "b", "external_weight": "b", "jit_compile": "s", "topo_sorting_mode": "i",
    "insert_op_file": "s", "es_cluster_config": "s", "device_type": "s", "soc_config": "s",
    "precision_mode": "s", "precision_mode_v2": "s", "modify_mixlist": "s", "op_precision_mode": "s",
    "op_select_implmode": "s", "optypelist_for_implmode": "s", "customize_dtypes": "s", "deterministic": "i",
    "enable_small_channel": "i", "enable_reduce_precision": "b", "graph_memory_max_size": "s",
    "variable_memory_max_size": "s", "atomic_clean_policy": "i", "static_memory_policy": "i",
    "memory_optimization_policy": "s", "graph_slice": "s", "buffer_optimize": "s",
    "variable_format_optimize": "b", "graph_compiler_cache_dir": "s", "enable_compress_weight": "b",
    "compress_weight_conf": "s", "enable_dump": "b", "enable_dump_debug": "b", "dump_path": "s",
    "dump_step": "s", "dump_mode": "s", "dump_debug_mode": "s", "dump_data": "s", "dump_layer": "s",
    "enable_exception_dump": "i", "op_debug_level": "i", "op_debug_config": "s", "debug_dir": "s",
    "profiling_mode": "b", "profiling_options": "s", "fp_point": "s", "bp_point": "s", "input_shape": "s",
    "dynamic_dims": "s", "dynamic_node_type": "i", "dynamic_input": "b", "dynamic_graph_execute_mode": "s",
    "dynamic_inputs_shape_range": "s", "aoe_mode": "s", "work_path": "s", "distribute_config": "s",
    "aoe_config_file": "s", "auto_tune_mode": "s", "mstune_mode": "s", "op_tune_mode": "s",
    "op_compiler_cache_mode": "s", "op_compiler_cache_dir": "s", "enable_scope_fusion_passes": "s",
    "fusion_switch_file": "s", "hcom_parallel": "b", "is_tailing_optimization": "b", "hcom_multi_mode": "b",
    "HCCL_algorithm": "s", "hccl_timeout": "i", "local_rank_id": "i", "local_device_list": "s",
    "stream_max_parallel_num": "s", "ac_parallel_enable": "s", "op_wait_timeout": "i",
    "op_execute_timeout": "i", "graph_exec_timeout": "i", "stream_sync_timeout": "i",
    "event_sync_timeout": "i", "experimental_logical_device_cluster_deploy_mode": "s",
    "experimental_logical_device_id": "s", "experimental_model_deploy_mode": "s",
    "experimental_model_deploy_devicelist": "s", "experimental_accelerate_train_mode": "s",
    "resource_config_path": "s", "graph_parallel_option_path": "s", "enable_graph_parallel": "b",
    "min_group_size": "b",
}


def test_table_holds_exactly_the_adapter_keys_with_their_fields():
    assert {key: spec.kind.value for key, spec in OPTIONS.items()} == ADAPTER_KEYS


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
    assert [Kind(k).python_type for k in "bis"] == [bool, int, str]


def test_docs_option_table_is_generated_from_the_table():
    docs = (Path(__file__).parent.parent / "docs" / "options.md").read_text()
    assert markdown_table() in docs, "regenerate with: python -m npu_bridge_compat options"
