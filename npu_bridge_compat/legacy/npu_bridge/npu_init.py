"""`from npu_bridge.npu_init import *`: the newest adapter's star-import surface.

Importing it also makes sessions honour NPU configs (see legacy/sessions.py), as the adapter's import does.
"""

import os  # noqa: F401 - scripts rely on the re-export

import tensorflow as tf  # noqa: F401 - re-exported, as the adapter does (TF1 style under `run --tf1`)
from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2  # noqa: F401
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

from npu_bridge_compat.compat.sessions import SESSION_RUN_HOOK_MODULE as session_run_hook  # noqa: F401
from npu_bridge_compat.compat.sessions import TF1_SESSION_MODULE as session  # noqa: F401
from npu_bridge_compat.distributed import (  # noqa: F401
    NPUBroadcastGlobalVariablesHook,
    NPUDistributedOptimizer,
    create_group,
    destroy_group,
    get_group_rank_from_world_rank,
    get_local_rank_id,
    get_local_rank_size,
    get_rank_id,
    get_rank_size,
    get_world_rank_from_group_rank,
    npu_allreduce,
    npu_distributed_optimizer_wrapper,
    npu_hooks_append,
    npu_tf_optimizer,
    set_split_strategy_by_idx,
    set_split_strategy_by_size,
)
from npu_bridge_compat.estimator import (  # noqa: F401
    DumpConfig,
    DynamicInputConfig,
    MemoryConfig,
    NPUEstimator,
    NPUEstimatorSpec,
    NPURunConfig,
    ProfilingConfig,
)
from npu_bridge_compat.keras import (  # noqa: F401
    KerasDistributeOptimizer,
    NPUBroadcastGlobalVariablesCallback,
    npu_callbacks_append,
    npu_keras_optimizer,
)
from npu_bridge_compat.legacy.hooks import (  # noqa: F401
    NPUCheckpointSaverHook,
    NPUOutputTensorHook,
    SetIterationsVarHook,
    TellMeStepOrLossHook,
)
from npu_bridge_compat.legacy.keras_helpers import npu_clear_session, set_keras_session_npu_config  # noqa: F401
from npu_bridge_compat.legacy.npu_bridge.estimator import npu_ops  # noqa: F401
from npu_bridge_compat.legacy.npu_bridge.estimator.npu import (  # noqa: F401
    keras_to_npu,
    npu_plugin,
    npu_rnn,
    npu_scope,
    npu_strategy,
    util,
)
from npu_bridge_compat.legacy.npu_bridge.hccl import hccl_ops  # noqa: F401
from npu_bridge_compat.legacy.npu_bridge.npu_cpu import npu_cpu_ops  # noqa: F401
from npu_bridge_compat.legacy.npu_bridge.profiler import profiler  # noqa: F401
from npu_bridge_compat.legacy.npu_bridge.scoped_graph_manager import scoped_graph_manager  # noqa: F401
from npu_bridge_compat.legacy.sessions import decorator_tf_session, patch_sessions  # noqa: F401
from npu_bridge_compat.loss_scale import (  # noqa: F401
    ExponentialUpdateLossScaleManager,
    FixedLossScaleManager,
    NPULossScaleOptimizer,
    NPUOptimizer,
)
from npu_bridge_compat.ops import npu_unary_ops  # noqa: F401
from npu_bridge_compat.session import (  # noqa: F401
    NpuEmptyHook,
    close_session,
    get_npu_local_rank_id,
    get_npu_local_rank_size,
    get_npu_rank_id,
    get_npu_rank_size,
    init_resource,
    npu_config_proto,
    npu_graph_options,
    npu_optimizer_options,
    npu_run_config_init,
    shutdown_resource,
)

backend = tf.compat.v1.keras.backend  # the Keras that tf.keras is, whatever `tf` means here

experimental_options = {
    "disable_model_pruning": False,
    "function_optimization": RewriterConfig.ON,
    "constant_folding": RewriterConfig.ON,
    "shape_optimization": RewriterConfig.ON,
    "arithmetic_optimization": RewriterConfig.ON,
    "loop_optimization": RewriterConfig.ON,
    "dependency_optimization": RewriterConfig.ON,
    "layout_optimizer": RewriterConfig.ON,
}


patch_sessions(imported_by=__name__)
