"""`npu_bridge.estimator.npu.util`."""

import tensorflow as _tf

from npu_bridge_compat.scope import keep_tensors_dtypes  # noqa: F401
from npu_bridge_compat.util import IterationPerLoop, set_iteration_per_loop  # noqa: F401


def variable_initializer_in_host(var_list):
    """An op initialising `var_list` (on Ascend, on the host side)."""
    return _tf.compat.v1.initializers.variables(var_list, name="var_in_host")


def set_graph_exec_config(
    fetch,
    dynamic_input=False,
    dynamic_graph_execute_mode="dynamic_execute",
    dynamic_inputs_shape_range=None,
    is_train_graph=False,
    experimental_config=None,
):
    """Per-graph dynamic-shape settings for the Graph Engine; TensorFlow runs dynamic shapes itself, so the
    fetch is returned as it is."""
    return fetch
