"""Host-kept ops in a built graph: mixed compute's in_out_pair regions and without_npu_compile_scope.

On Ascend, host-kept ops run in TensorFlow on the host while the rest sinks to the NPU. On a host with an
accelerator the same split is kept: host-kept ops are placed on the CPU, and marked `_XlaCompile=False` so that
XLA auto-clustering leaves them out, as the NPU compiler does.
"""

from __future__ import annotations

from tensorflow.core.framework import attr_value_pb2

from npu_bridge_compat.compat.graph import (
    control_outputs,
    creation_order,
    has_operation_named,
    set_op_attribute,
    set_op_device,
)
from npu_bridge_compat.errors import NpuOptionValueError
from npu_bridge_compat.plan.features import HostRegions
from npu_bridge_compat.plan.platform import HostFacts

HOST_DEVICE = "/device:CPU:0"
HOST_ONLY_ATTRIBUTES = {
    "_without_npu_compile": attr_value_pb2.AttrValue(b=True),
    "_XlaCompile": attr_value_pb2.AttrValue(b=False),
}


def keep_on_host(operations, host: HostFacts) -> None:
    """Mark `operations` host-only, and place them on the CPU where an accelerator would take them."""
    for op in operations:
        for name, value in HOST_ONLY_ATTRIBUTES.items():
            set_op_attribute(op, name, value)
        if host.has_gpu:
            set_op_device(op, HOST_DEVICE)


def host_region_ops(graph, regions: HostRegions) -> list:
    """The ops that stay on the host: those on paths between each pair's input and output nodes when the flag
    keeps the regions on the host, otherwise every op outside them."""
    names = {name for pair in regions.pairs for name in pair.inputs + pair.outputs}
    missing = sorted(name for name in names if not has_operation_named(graph, name))
    if missing:
        raise NpuOptionValueError(f"in_out_pair names nodes that are not in the graph: {', '.join(missing)}")
    region = set()
    for pair in regions.pairs:
        downstream = _reachable([graph.get_operation_by_name(n) for n in pair.inputs], _consumers)
        upstream = _reachable([graph.get_operation_by_name(n) for n in pair.outputs], _producers)
        region |= downstream & upstream
    if regions.on_host:
        return sorted(region, key=creation_order)
    return [op for op in graph.get_operations() if op not in region]


def _consumers(op):
    return [consumer for output in op.outputs for consumer in output.consumers()] + control_outputs(op)


def _producers(op):
    return [tensor.op for tensor in op.inputs] + list(op.control_inputs)


def _reachable(starts, neighbours) -> set:
    seen, stack = set(starts), list(starts)
    while stack:
        for nxt in neighbours(stack.pop()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen
