"""npu_scope: the adapter's graph scopes. Each marks the ops built inside it with the node attribute the adapter
sets, so graphs carry the same information as on Ascend; in eager code they do nothing.

`without_npu_compile_scope` keeps its ops on the host (CPU placement where there is an accelerator, out of XLA
clusters); `keep_dtype_scope` (`_keep_dtype`), and `keep_tensors_dtypes` for ops already built, keep their ops in
float32 under mixed precision (the doors make them run targets, or outputs of Keras' traced function, which
grappler never converts; inside an iterations_per_loop loop they cannot, and say so); the other scopes have no
host effect.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import tensorflow as tf
from tensorflow.core.framework import attr_value_pb2

from npu_bridge_compat.compat.batchnorm import install_horizon_gate
from npu_bridge_compat.compat.graph import attribute_scope, set_op_attribute
from npu_bridge_compat.errors import NpuOptionValueError
from npu_bridge_compat.plan.platform import detect_host
from npu_bridge_compat.runtime.host_regions import HOST_DEVICE, HOST_ONLY_ATTRIBUTES


@contextlib.contextmanager
def _attr_scope(attributes: dict[str, attr_value_pb2.AttrValue]) -> Iterator[None]:
    if tf.executing_eagerly():
        yield
        return
    install_horizon_gate()  # a graph marked for mixed compute: its forward_compatibility_horizon works too
    with attribute_scope(attributes):
        yield


def _text(value) -> attr_value_pb2.AttrValue:
    return attr_value_pb2.AttrValue(s=str(value).encode())


def _int(value: int) -> attr_value_pb2.AttrValue:
    return attr_value_pb2.AttrValue(i=int(value))


@contextlib.contextmanager
def without_npu_compile_scope() -> Iterator[None]:
    """Ops built here stay on the host (attribute `_without_npu_compile`): on a host with an accelerator they are
    placed on the CPU, and `_XlaCompile=False` keeps them out of XLA clusters."""
    device = tf.device(HOST_DEVICE) if detect_host().has_gpu else contextlib.nullcontext()
    with device, _attr_scope(HOST_ONLY_ATTRIBUTES):
        yield


KEEP_DTYPE = "_keep_dtype"  # the adapter's node attribute for ops that keep their dtype under mixed precision


def keep_dtype_scope() -> contextlib.AbstractContextManager:
    """Ops built here keep their dtype under mixed precision (attribute `_keep_dtype`)."""
    return _attr_scope({KEEP_DTYPE: _int(1)})


def keep_tensors_dtypes(graph: tf.Graph, input_tensors: tuple[str, ...] | list[str]) -> None:
    """Mark the ops producing the tensors named in `input_tensors` (e.g. ("dense/MatMul:0",)) as
    `keep_dtype_scope` marks the ops built inside it, for a graph that is already built (one imported from a
    GraphDef, say): under mixed precision they stay float32, through every door."""
    if not isinstance(graph, tf.Graph):  # ValueError, as the adapter raises
        raise NpuOptionValueError(f"graph param must be ops.Graph class. (got {type(graph).__name__})")
    if not isinstance(input_tensors, (tuple, list)):
        raise NpuOptionValueError(
            f"input_tensors must be list or tuple. (got {type(input_tensors).__name__} {input_tensors!r})"
        )
    operations = []
    for name in input_tensors:
        try:
            operations.append(graph.get_tensor_by_name(name).op)
        except (KeyError, ValueError, TypeError) as error:
            reason = error.args[0] if error.args else error
            raise NpuOptionValueError(
                f"keep_tensors_dtypes: {name!r} names no tensor of the graph ({reason})"
            ) from None
    for op in operations:
        set_op_attribute(op, KEEP_DTYPE, _int(1))


def npu_variable_scope(placement=None) -> contextlib.AbstractContextManager:
    """Ascend variable placement (`_variable_placement`); no host effect."""
    value = getattr(placement, "value", placement) or "all"
    return _attr_scope({"_variable_placement": _text(value)})


def npu_stage_scope(stage) -> contextlib.AbstractContextManager:
    """Ascend pipeline stage (`_stage_level`); no host effect."""
    return _attr_scope({"_stage_level": _int(stage)})


def npu_mem_type_scope() -> contextlib.AbstractContextManager:
    """Ascend memory type (`_output_memory_type`); no host effect."""
    return _attr_scope({"_output_memory_type": _int(1)})


def npu_weight_prefetch_scope(
    buffer_pool_id: int = 0, buffer_pool_size: int = 536870912
) -> contextlib.AbstractContextManager:
    """Ascend weight prefetching (`_weight_prefetch_*`); no host effect."""
    return _attr_scope(
        {
            "_weight_prefetch_buffer_pool_id": _int(buffer_pool_id),
            "_weight_prefetch_buffer_pool_size": _int(buffer_pool_size),
        }
    )


def op_specified_engine_scope(engine_name: str = "", kernel_lib_name: str = "") -> contextlib.AbstractContextManager:
    """Ascend engine choice (`_specified_engine_name`, `_specified_kernel_lib_name`); no host effect."""
    return _attr_scope(
        {"_specified_engine_name": _text(engine_name), "_specified_kernel_lib_name": _text(kernel_lib_name)}
    )


def npu_qos_label_scope(qos_label: int) -> contextlib.AbstractContextManager:
    """Ascend quality-of-service label (`_qos_service_label`); no host effect."""
    return _attr_scope({"_qos_service_label": _int(qos_label)})


def subgraph_multi_dims_scope(index: int) -> contextlib.AbstractContextManager:
    """Ascend multi-dims subgraph index (`_subgraph_multi_dims_index`); no host effect."""
    return _attr_scope({"_subgraph_multi_dims_index": _int(index)})


def npu_optimizer_scope(optimizer_name: str = "") -> contextlib.AbstractContextManager:
    """Ascend optimizer tag (`_optimizer_name`); no host effect."""
    return _attr_scope({"_optimizer_name": _text(optimizer_name)})


@contextlib.contextmanager
def npu_recompute_scope() -> Iterator[None]:
    """Ascend's recomputation region (name scope NpuRecompute). Its ops carry grappler's `_recompute_hint`, which
    its memory optimizer recomputes in GraphMemoryOptimizeConfig(recompute='manual') mode."""
    with tf.name_scope("NpuRecompute"), _attr_scope({"_recompute_hint": _int(1)}):
        yield


def npu_graph_slice_scope(slice_num: int = 1) -> contextlib.AbstractContextManager:
    """Ascend graph slicing region (a name scope); no host effect."""
    return tf.name_scope(f"graph_slice_{slice_num}")
