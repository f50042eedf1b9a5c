"""The newest adapter's options and APIs (issue 17): its session keys, NPURunConfig keywords and holder fields,
keep_tensors_dtypes and npu_onnx_graph_op, checked against its own API reference examples."""

import inspect
import warnings

import numpy as np
import pytest
import tensorflow as tf
from helpers import npu_config, reads_rounded_inputs

from npu_bridge_compat import NpuConfigError, NpuOptionValueError
from npu_bridge_compat.errors import DeviceOnlyFeatureError, IgnoredOptionWarning, UnknownOptionWarning
from npu_bridge_compat.estimator import NPURunConfig
from npu_bridge_compat.legacy import install_aliases
from npu_bridge_compat.options import OPTIONS, Effect, options_from_config_proto, options_from_kwargs
from npu_bridge_compat.options.grammars import ConfigurationAdvice
from npu_bridge_compat.options.run_config import (
    HOLDERS,
    NO_HOST_MEANING,
    DynamicInputConfig,
    GraphMemoryOptimizeConfig,
    MemoryConfig,
)
from npu_bridge_compat.plan import build_plan
from npu_bridge_compat.session import NPUSession

v1 = tf.compat.v1
GEARS = {"input_shape": "data:1,-1", "dynamic_dims": "20;40", "dynamic_node_type": 1}

# key: (valid values, invalid values with a fragment of the error). Every new key of the newest adapter.
NEW_KEYS = {
    "quant_dumpable": (["0", "1"], [("2", "one of the list:[0, 1]"), (1, "must be str")]),
    "export_compile_stat": ([0, 1, 2], [(3, "one of the list:[0, 1, 2]"), ("1", "must be int")]),
    "compile_hybrid_mode": ([0, 1], [(2, "one of the list:[0, 1]"), (True, "must be int")]),
    "compile_dynamic_mode": ([True, False], [("True", "must be bool"), (1, "must be bool")]),
    "all_tensor_not_empty": ([True, False], [("yes", "must be bool")]),
    "shape_generalization_mode": (
        ["STRICT", "FULL", "ADAPTIVE"],
        [("full", "one of the list:[STRICT, FULL, ADAPTIVE]"), (1, "must be str")],
    ),
    "auto_multistream_parallel_mode": (
        ["cv", "LoadBalance", "LoadBalance:1", "MainStream:64"],
        [
            ("MainStream:0", "must be in [1, 64], got 0"),
            ("LoadBalance:65", "got 65"),
            ("mainstream:4", "did you mean 'MainStream'?"),
            ("vc", "'cv', 'LoadBalance:n' or 'MainStream:n'"),
        ],
    ),
    "variable_use_1g_huge_page": ([0, 1, 2], [(3, "one of the list:[0, 1, 2]"), ("2", "must be int")]),
    "input_fusion_size": ([0, 25600, 33554432], [("25600", "must be int")]),
    "input_batch_cpy": ([True, False], [("false", "must be bool")]),
    "aicore_num": (
        ["2|4", "24|48"],
        [("2,4", "'Integer1|Integer2'"), ("0|4", "greater than 0"), ("2|", "'Integer1|Integer2'"), (2, "must be str")],
    ),
    "oo_constant_folding": ([True, False], [("False", "must be bool")]),
    "graph_max_parallel_model_num": (
        [1, 4, 2**31 - 1],
        [(0, "must be in [1, 2147483647]"), (2**31, "must be in [1, 2147483647]"), (4.0, "must be int")],
    ),
    "oo_level": (["O1", "O3"], [(3, "must be str")]),
    "optimization_switch": (["forbidden_close_pass:on"], [(True, "must be str")]),
}
# Where NPURunConfig takes a key other than as a keyword of the same name.
HOLDER_OF = {
    "compile_hybrid_mode": lambda value: {
        "dynamic_input_config": DynamicInputConfig(
            GEARS["input_shape"], GEARS["dynamic_dims"], GEARS["dynamic_node_type"], value
        )
    },
    "variable_use_1g_huge_page": lambda value: {"memory_config": MemoryConfig(variable_use_1g_huge_page=value)},
}
CONTEXT = {"compile_hybrid_mode": GEARS, "shape_generalization_mode": {"jit_compile": "true"}}


def through_npurunconfig(key, value):
    arguments = HOLDER_OF[key](value) if key in HOLDER_OF else {key: value}
    if key == "shape_generalization_mode":
        arguments["jit_compile"] = "true"
    return NPURunConfig(**arguments).npu_options


def through_readers(key, value):
    values = {**CONTEXT.get(key, {}), key: value}
    return options_from_kwargs(values), options_from_config_proto(npu_config(values))


VALID = [(key, value) for key, (valid, _) in NEW_KEYS.items() for value in valid]
INVALID = [(key, value, message) for key, (_, invalid) in NEW_KEYS.items() for value, message in invalid]


def test_the_table_lists_every_new_key():
    assert set(NEW_KEYS) <= set(OPTIONS)


@pytest.mark.needs_estimator
@pytest.mark.parametrize("key, value", VALID)
def test_valid_values_are_read_by_both_readers_and_npurunconfig(key, value):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from_kwargs, from_proto = through_readers(key, value)
        from_config = through_npurunconfig(key, value)
    assert getattr(from_kwargs, key) == getattr(from_proto, key) == getattr(from_config, key) == value
    assert from_kwargs.is_set(key) and from_proto.is_set(key)


@pytest.mark.needs_estimator
@pytest.mark.parametrize("key, value, message", INVALID)
def test_invalid_values_are_errors_naming_the_key_value_and_what_is_allowed(key, value, message):
    for read in (
        lambda: through_readers(key, value)[0],
        lambda: through_readers(key, value)[1],
        lambda: through_npurunconfig(key, value),
    ):
        with pytest.raises(NpuConfigError) as error:
            read()
        text = str(error.value)
        assert f'"{key}"' in text
        if not isinstance(value, float):  # a float goes to the AttrValue field .f: named as the wrong field
            assert message in text or "the value was given in" in text, text


@pytest.mark.parametrize("value, used", [(-5, 0), (33554433, 33554432), (10**9, 33554432)])
def test_input_fusion_size_outside_its_range_is_clamped_with_a_warning_as_the_adapter_does(value, used):
    with pytest.warns(ConfigurationAdvice, match=f"should not be (larger|less) than {used} bytes; the adapter uses"):
        options = options_from_kwargs(input_fusion_size=value)
    assert options.input_fusion_size == value and options.parsed_value("input_fusion_size") == used


# The API reference's own examples (docs/en/tfadapter_1/apiref/session_config/*.md), with their values.
SESSION_EXAMPLES = [
    ("quant_dumpable", b"1"),
    ("export_compile_stat", 1),
    ("compile_dynamic_mode", True),
    ("all_tensor_not_empty", True),
    ("shape_generalization_mode", b"FULL"),
    ("auto_multistream_parallel_mode", b"cv"),
    ("variable_use_1g_huge_page", 2),
    ("input_fusion_size", 25600),
    ("input_batch_cpy", True),
    ("aicore_num", b"2|4"),
    ("oo_constant_folding", True),
    ("graph_max_parallel_model_num", 4),
]
# docs/en/tfadapter_1/apiref/npu_config/npurunconfig_constructor/*.md
NPURUNCONFIG_EXAMPLES = [
    ("quant_dumpable", "1"),
    ("export_compile_stat", 1),
    ("compile_dynamic_mode", True),
    ("all_tensor_not_empty", True),
    ("shape_generalization_mode", "FULL"),
    ("auto_multistream_parallel_mode", "cv"),
    ("input_fusion_size", 25600),
    ("input_batch_cpy", True),
    ("aicore_num", "2|4"),
    ("oo_constant_folding", True),
    ("graph_max_parallel_model_num", 4),
]


def assert_no_unknown_option_warning(record):
    assert not [w for w in record if issubclass(w.category, UnknownOptionWarning)]


@pytest.mark.parametrize("key, value", SESSION_EXAMPLES)
def test_session_config_doc_examples_are_accepted(key, value):
    config = v1.ConfigProto()
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    field = {bytes: "s", bool: "b", int: "i"}[type(value)]
    setattr(custom_op.parameter_map[key], field, value)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        options = options_from_config_proto(config)
    assert_no_unknown_option_warning(record)
    assert getattr(options, key) == (value.decode() if isinstance(value, bytes) else value)


def test_compile_hybrid_mode_doc_example_is_accepted_with_its_gears():
    options = options_from_config_proto(npu_config({**GEARS, "compile_hybrid_mode": 1}))
    assert options.compile_hybrid_mode == 1


@pytest.mark.needs_estimator
@pytest.mark.parametrize("key, value", NPURUNCONFIG_EXAMPLES)
def test_npurunconfig_doc_examples_are_accepted_and_written(key, value):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        config = NPURunConfig(**{key: value})
    assert_no_unknown_option_warning(record)
    assert getattr(config.npu_options, key) == value
    assert config.npu_options.is_set(key) == (value != OPTIONS[key].default)  # defaults are not written


@pytest.mark.needs_estimator
def test_memoryconfig_doc_example_and_its_new_field():
    config = NPURunConfig(memory_config=MemoryConfig(atomic_clean_policy=0, static_memory_policy=0))
    assert config.npu_options.set_options() == {}
    config = NPURunConfig(memory_config=MemoryConfig(variable_use_1g_huge_page=2, static_memory_policy=3))
    assert config.npu_options.set_options() == {"static_memory_policy": 3, "variable_use_1g_huge_page": 2}


@pytest.mark.needs_estimator
def test_dynamic_input_config_takes_compile_hybrid_mode_and_still_three_arguments():
    config = NPURunConfig(dynamic_input_config=DynamicInputConfig("data:1,-1", "20;40", 1, 1))
    assert config.npu_options.compile_hybrid_mode == 1
    config = NPURunConfig(dynamic_input_config=DynamicInputConfig("data:1,-1", "20;40", 0))
    assert not config.npu_options.is_set("compile_hybrid_mode")


@pytest.mark.needs_estimator
def test_shape_generalization_without_online_compilation_warns_as_the_adapter_does():
    with pytest.warns(
        IgnoredOptionWarning,
        match=r"jit_compile is not true, so shape_generalization_mode\[FULL\] "
        r"will be ignore.*\(jit_compile='auto'\)",
    ):
        NPURunConfig(shape_generalization_mode="FULL")
    with pytest.warns(
        IgnoredOptionWarning,
        match=r"compile_dynamic_mode is true, so shape_generalization_mode"
        r"\[ADAPTIVE\] will be ignore",
    ):
        options_from_kwargs(shape_generalization_mode="ADAPTIVE", compile_dynamic_mode=True, jit_compile="true")


@pytest.mark.parametrize(
    "values, message",
    [
        (
            {"compile_hybrid_mode": 1},
            "input_shape, dynamic_dims and dynamic_node_type should be set when compile_hybrid_mode is 1",
        ),
        (
            {**GEARS, "dynamic_node_type": 0, "compile_hybrid_mode": 1},
            "When compile_hybrid_mode set, dynamic_node_type should be 1. (got dynamic_node_type=0",
        ),
        (
            {"compile_dynamic_mode": True, "dynamic_input": True},
            "Option compile_dynamic_mode cannot set when set dynamic_input to 1.",
        ),
        (
            {**GEARS, "compile_dynamic_mode": True},
            "Option compile_dynamic_mode cannot set when set input_shape, dynamic_dims and dynamic_node_type.",
        ),
    ],
)
def test_rules_of_the_new_dynamic_shape_keys(values, message):
    with pytest.raises(NpuOptionValueError) as error:
        options_from_kwargs(values)
    assert message in str(error.value)
    with pytest.raises(NpuOptionValueError):
        options_from_config_proto(npu_config(values))


def test_rules_allow_what_the_adapter_allows():
    options_from_kwargs({"compile_hybrid_mode": 0})  # 0 without gears is fine
    options_from_kwargs({"compile_dynamic_mode": False, "dynamic_input": True})


def test_unknown_key_warning_names_the_table_not_the_adapter():
    with pytest.warns(UnknownOptionWarning) as record:
        options_from_kwargs(aicore_nums="2|4")
    message = str(record[0].message)
    assert "adapter" not in message and "Did you mean 'aicore_num'" in message


# --- keywords, holders and the table agree ----------------------------------------------------------------

# NPURunConfig keywords whose default differs from the session key's, on the adapter too.
DEFAULT_DIFFERS = {"enable_data_pre_proc": "NPURunConfig defaults to True, the session path to False"}
# Holder fields -> the session key they write.
HOLDER_FIELDS = {
    "profiling_config": {"enable_profiling": "profiling_mode", "profiling_options": "profiling_options"},
    "experimental_config": {
        "logical_device_cluster_deploy_mode": "experimental_logical_device_cluster_deploy_mode",
        "logical_device_id": "experimental_logical_device_id",
        "model_deploy_mode": "experimental_model_deploy_mode",
        "model_deploy_devicelist": "experimental_model_deploy_devicelist",
        "accelerate_train_mode": "experimental_accelerate_train_mode",
        "graph_memory_optimize_config": None,
    },  # a holder: GraphMemoryOptimizeConfig
}


def parameters(function):
    return {name: p.default for name, p in inspect.signature(function).parameters.items() if name != "self"}


@pytest.mark.needs_estimator
def test_every_npurunconfig_keyword_is_an_option_with_its_default_or_has_another_role():
    run_config = parameters(tf.estimator.RunConfig.__init__)
    for name, default in parameters(NPURunConfig.__init__).items():
        if name in OPTIONS:
            if default is not None and name not in DEFAULT_DIFFERS:
                assert default == OPTIONS[name].default, name
        else:
            assert name in HOLDERS or name in NO_HOST_MEANING or name in run_config, name


@pytest.mark.parametrize("holder", sorted(HOLDERS))
def test_every_holder_field_is_an_option_with_its_default(holder):
    fields = parameters(HOLDERS[holder].__init__)
    renamed = HOLDER_FIELDS.get(holder, {})
    for field, default in fields.items():
        key = renamed.get(field, field)
        if key is None:
            continue
        assert key in OPTIONS, f"{holder}.{field}"
        if default is not inspect.Parameter.empty and default is not None:
            assert default == OPTIONS[key].default, f"{holder}.{field}"
    assert set(parameters(GraphMemoryOptimizeConfig.__init__)) == {"recompute", "graph_slice"}


# --- host effects --------------------------------------------------------------------------------------------


def run_folded_graph(**options):
    """Run x + 2 * 3 in an NPUSession; the op types of the executed partition graphs."""
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [2], name="x")
        y = x + tf.multiply(tf.constant(2.0), tf.constant(3.0), name="product")
        with NPUSession(config=npu_config(options)) as sess:
            metadata = v1.RunMetadata()
            value = sess.run(
                y, {x: np.ones(2)}, options=v1.RunOptions(output_partition_graphs=True), run_metadata=metadata
            )
    return value, {node.name: node.op for graph in metadata.partition_graphs for node in graph.node}


@pytest.mark.starts_processes
def test_oo_constant_folding_off_keeps_grappler_from_folding():
    value, nodes = run_folded_graph(oo_constant_folding=False)
    assert value.tolist() == [7.0, 7.0] and nodes["product"] == "Mul"
    value, nodes = run_folded_graph(oo_constant_folding=True)
    assert value.tolist() == [7.0, 7.0] and nodes.get("product") == "Const"


def test_aicore_num_caps_the_cores_one_op_uses(cpu_host):
    plan = build_plan(options_from_kwargs(aicore_num="2|4"), cpu_host)
    assert plan.host_config().intra_op_parallelism_threads == 4
    assert plan.report.entry("aicore_num").effect == Effect.APPROXIMATED.value


@pytest.mark.parametrize(
    "mode, threads, effect",
    [
        ("MainStream:4", 4, Effect.APPROXIMATED),
        ("LoadBalance", 8, Effect.APPROXIMATED),
        ("cv", 0, Effect.NO_EQUIVALENT),
    ],
)
def test_multistream_modes_become_inter_op_threads(cpu_host, mode, threads, effect):
    plan = build_plan(options_from_kwargs(auto_multistream_parallel_mode=mode), cpu_host)
    assert plan.host_config().inter_op_parallelism_threads == threads
    assert plan.report.entry("auto_multistream_parallel_mode").effect == effect.value


def test_stream_max_parallel_num_keeps_the_inter_op_threads_it_sets(cpu_host):
    options = options_from_kwargs(
        auto_multistream_parallel_mode="MainStream:4", stream_max_parallel_num="AIcoreEngine:2"
    )
    plan = build_plan(options, cpu_host)
    assert plan.host_config().inter_op_parallelism_threads == 2
    assert plan.report.entry("auto_multistream_parallel_mode").effect == Effect.NOT_NEEDED.value


def test_keys_without_host_meaning_say_why(cpu_host):
    options = options_from_kwargs(input_batch_cpy=True, variable_use_1g_huge_page=1, compile_dynamic_mode=True)
    report = build_plan(options, cpu_host).report
    assert report.entry("input_batch_cpy").effect == Effect.NO_EQUIVALENT.value
    assert "huge pages" in report.entry("variable_use_1g_huge_page").how
    assert report.entry("compile_dynamic_mode").effect == Effect.NOT_NEEDED.value


# --- functions -----------------------------------------------------------------------------------------------


@pytest.mark.starts_processes
@pytest.mark.filterwarnings("ignore:NPU_BRIDGE_COMPAT_CPU_FLOAT16")
def test_keep_tensors_dtypes_keeps_named_tensors_in_float32(monkeypatch):
    from npu_bridge_compat.plan import detect_host
    from npu_bridge_compat.runtime.process import restore_environment

    install_aliases()
    from npu_bridge.estimator.npu import util

    monkeypatch.setenv("NPU_BRIDGE_COMPAT_CPU_FLOAT16", "1")  # a mixed-precision pass that converts on any CPU
    detect_host.cache_clear()
    try:
        graph = tf.Graph()
        with graph.as_default():
            x = v1.placeholder(tf.float32, [4, 8])
            weights = v1.get_variable("w", [8, 8])
            y = tf.exp(tf.nn.relu(tf.matmul(x, weights, name="kept_matmul") + tf.matmul(x, weights, name="other")))
        util.keep_tensors_dtypes(graph, ("kept_matmul:0",))
        with graph.as_default(), NPUSession(config=npu_config({"precision_mode": "allow_mix_precision"})) as sess:
            sess.run(v1.global_variables_initializer())
            metadata = v1.RunMetadata()
            sess.run(
                y, {x: np.ones([4, 8])}, options=v1.RunOptions(output_partition_graphs=True), run_metadata=metadata
            )
    finally:
        restore_environment()
        detect_host.cache_clear()
    assert reads_rounded_inputs(metadata.partition_graphs, "other")
    assert not reads_rounded_inputs(metadata.partition_graphs, "kept_matmul")


@pytest.mark.parametrize(
    "graph, tensors, message",
    [
        ("graph", ("a:0",), "graph param must be ops.Graph class. (got str)"),
        (None, "a:0", "input_tensors must be list or tuple. (got str 'a:0')"),
        (None, ["missing:0"], "keep_tensors_dtypes: 'missing:0' names no tensor of the graph"),
        (None, ["a"], "keep_tensors_dtypes: 'a' names no tensor of the graph (The name 'a' refers to an Operation"),
    ],
)
def test_keep_tensors_dtypes_errors(graph, tensors, message):
    from npu_bridge_compat.scope import keep_tensors_dtypes

    built = tf.Graph()
    with built.as_default():
        tf.constant(1.0, name="a")
    with pytest.raises(NpuOptionValueError) as error:
        keep_tensors_dtypes(built if graph is None else graph, tensors)
    assert message in str(error.value)


def test_npu_onnx_graph_op_imports_and_refuses_clearly():
    install_aliases()
    from npu_bridge.estimator.npu_ops import npu_onnx_graph_op

    with tf.Graph().as_default():
        inputs = v1.placeholder(dtype=tf.float32, shape=(1, 1, 5, 5), name="conv_input")
        with pytest.raises(
            DeviceOnlyFeatureError,
            match=r"npu_onnx_graph_op\(model_path='conv2d.onnx'\) .* "
            "TensorFlow cannot load ONNX files",
        ):
            npu_onnx_graph_op([inputs], [tf.float32], model_path="conv2d.onnx", name="conv2d")
