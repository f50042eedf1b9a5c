"""npu_ops.npu_onnx_graph_op: an ONNX model embedded in a TensorFlow graph as one operator.

On Ascend the Graph Engine parses the ONNX file and compiles it with the rest of the graph. Stock TensorFlow has
no ONNX importer, and the maintained runtimes are large native packages this project does not pull in, so on a
host the op is importable and refuses, at graph-build time, with what to do instead.
"""

from __future__ import annotations

from npu_bridge_compat.errors import DeviceOnlyFeatureError


def npu_onnx_graph_op(inputs, tout, model_path, name=None):
    """Raise DeviceOnlyFeatureError naming the model: TensorFlow cannot run an ONNX file as a graph op."""
    raise DeviceOnlyFeatureError(
        f"npu_onnx_graph_op(model_path={model_path!r}) runs an ONNX model through the Ascend Graph Engine, which a "
        "host does not have, and TensorFlow cannot load ONNX files. Convert the model to a TensorFlow SavedModel "
        "and call it in place of the op, or run the ONNX file with ONNX Runtime outside the graph."
    )
