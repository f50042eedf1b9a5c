"""Shared test helpers: ConfigProtos written the way ported scripts write them, and valid contexts per option."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tensorflow.core.protobuf import config_pb2

from npu_bridge_compat.distributed.cluster import DEFAULT_BASE_PORT
from npu_bridge_compat.distributed.launch import free_port_block
from npu_bridge_compat.options import OPTIONS, OptionKind

PORTS_PER_WORKER = 1000


def npu_config(*entries: dict[str, Any], optimizers: tuple[str, ...] = ()) -> config_pb2.ConfigProto:
    """A ConfigProto with one NpuOptimizer entry per dict, values written to the field their Python type names."""
    config = config_pb2.ConfigProto(allow_soft_placement=True)
    rewrite = config.graph_options.rewrite_options
    rewrite.optimizers.extend(optimizers)
    for entry in entries:
        custom_op = rewrite.custom_optimizers.add()
        custom_op.name = "NpuOptimizer"
        for key, value in entry.items():
            set_attr(custom_op.parameter_map[key], value)
    return config


def set_attr(attr, value: Any) -> None:
    if isinstance(value, bool):
        attr.b = value
    elif isinstance(value, int):
        attr.i = value
    elif isinstance(value, float):
        attr.f = value
    else:
        attr.s = value.encode() if isinstance(value, str) else value


def example_values(key: str, workdir: Path) -> tuple[Any, Any]:
    """A valid value of option `key` and an invalid one (a bad value, or one of the wrong kind)."""
    spec = OPTIONS[key]
    if spec.check is not None:
        return spec.check.examples(workdir)
    valid = {OptionKind.BOOL: True, OptionKind.INT: 600, OptionKind.STRING: "some_value"}[spec.kind]
    wrong_kind = {OptionKind.BOOL: "yes", OptionKind.INT: "600", OptionKind.STRING: 3.5}[spec.kind]
    return valid, wrong_kind


def context_for(key: str, workdir: Path) -> dict[str, Any]:
    """Other options that make `key` read by the adapter and satisfy the rules it is part of."""
    dump_dir = workdir / "dumps"
    dump_dir.mkdir(exist_ok=True)
    mixlist = workdir / "ops_info.json"
    mixlist.write_text('{"white-list": {"to-add": ["MatMul"]}}')
    companions = {
        "enable_dump": {"dump_path": str(dump_dir)},
        "enable_dump_debug": {"dump_path": str(dump_dir)},
        "dump_path": {"enable_dump": True},
        "dump_step": {"enable_dump": True, "dump_path": str(dump_dir)},
        "dump_mode": {"enable_dump": True, "dump_path": str(dump_dir)},
        "dump_data": {"enable_dump": True, "dump_path": str(dump_dir)},
        "dump_layer": {"enable_dump": True, "dump_path": str(dump_dir)},
        "dump_debug_mode": {"enable_dump_debug": True, "dump_path": str(dump_dir)},
        "in_out_pair": {"mix_compile_mode": True},
        "in_out_pair_flag": {"mix_compile_mode": True, "in_out_pair": "[[['a'], ['b']]]"},
        "profiling_options": {"profiling_mode": True},
        "dynamic_graph_execute_mode": {"dynamic_input": True},
        "dynamic_inputs_shape_range": {"dynamic_input": True},
        "work_path": {"aoe_mode": "1"},
        "modify_mixlist": {"precision_mode": "allow_mix_precision"},
        "optypelist_for_implmode": {"op_select_implmode": "high_precision"},
        "input_shape": {"dynamic_dims": "20,20;40,40", "dynamic_node_type": 0},
        "dynamic_dims": {"input_shape": "data:1,-1;label:-1", "dynamic_node_type": 0},
        "dynamic_node_type": {"input_shape": "data:1,-1", "dynamic_dims": "20;40"},
        "compile_hybrid_mode": {"input_shape": "data:1,-1", "dynamic_dims": "20;40", "dynamic_node_type": 1},
        "shape_generalization_mode": {"jit_compile": "true"},
    }
    return companions.get(key, {})


def config_with(**values):
    """A session config as ported scripts build it: npu_config_proto plus custom_op.parameter_map values."""
    from npu_bridge_compat.session import npu_config_proto

    config = npu_config_proto(config_pb2.ConfigProto())
    set_values = config.graph_options.rewrite_options.custom_optimizers[0].parameter_map
    for key, value in values.items():
        set_attr(set_values[key], value)
    return config


def reads_rounded_inputs(partition_graphs, name: str) -> bool:
    """Whether op `name` of the executed graphs reads an input through one of grappler's mixed-precision casts.
    The float16 emulation pass on a CPU keeps ops in float32 and rounds their inputs through Cast pairs; an op it
    spares reads its inputs as they are (from TensorFlow 2.16 its output may still be rounded for consumers that
    run in float16, as on an NPU)."""
    nodes = {node.name: node for graph in partition_graphs for node in graph.node}
    return any("AutoMixedPrecision" in source.lstrip("^").split(":")[0] for source in nodes[name].input)


def dumped_steps(dump_path: Path, graph: str = "train") -> dict[str, Path]:
    """The step directories of the only dump run under `dump_path` (`<dump_path>/<time>/<graph>/step_<n>`)."""
    runs = sorted(dump_path.glob(f"*/{graph}"))
    assert len(runs) == 1, f"expected one dump run of {graph} under {dump_path}, found {runs}"
    return {p.name: p for p in sorted(runs[0].iterdir())}


def node_dtypes(graphs) -> dict[str, str]:
    """The dtype each node of executed (partition) graphs computes in: its attribute T (a Cast: DstT)."""
    import tensorflow as tf

    dtypes = {}
    for graph in graphs:
        for node in graph.node:
            attr = "DstT" if node.op == "Cast" else "T"
            if attr in node.attr and node.attr[attr].WhichOneof("value") == "type":
                dtypes[node.name] = tf.dtypes.as_dtype(node.attr[attr].type).name
    return dtypes


def keras_executed_dtypes(fit) -> dict[str, str]:
    """`node_dtypes` of the functions that `fit()` (a Keras call) executed."""
    from npu_bridge_compat.compat.eager import function_run_metadata

    collected: list = []
    with function_run_metadata(collected):
        fit()
    return node_dtypes(graph for function in collected[0].function_graphs for graph in function.partition_graphs)


def loopback_port_block(count: int) -> int:
    """The first of `count` consecutive free loopback ports, searched in this pytest worker's own range: ranks
    bind their ports seconds after the probe, and another worker probing meanwhile must not pick the same ones.
    Within the range, each test process starts at its own point: the suite of another checkout running on the
    same machine probes the same ranges."""
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    return free_port_block(count, start=DEFAULT_BASE_PORT + PORTS_PER_WORKER * worker + _OWN_POINT)


_OWN_POINT = 10 * (os.getpid() % (PORTS_PER_WORKER // 10 - 5))
