"""The Keras door: NPUCallback, and the adapter's Keras helpers.

    model.compile(optimizer, loss)
    model.fit(dataset, epochs=3, steps_per_epoch=1000,
              callbacks=[NPUCallback(iterations_per_loop=100, precision_mode="allow_mix_precision")])

NPUCallback validates its options when it is created and applies the host plan while Keras trains, evaluates or
predicts, through the run-time core's Keras form (runtime/keras_calls.py, which the TF2 door uses too): N steps per
train-function call, the FusedBatchNormV3 workaround, grappler mixed precision and its op lists, graph-kernel
fusion, keep_dtype_scope, tensor dumps and numeric checks built into the traced steps, and a profiler trace, all
restored when the call ends.
"""

from __future__ import annotations

from npu_bridge_compat.distributed import (  # noqa: F401 - the adapter's Keras helpers for several ranks
    KerasDistributeOptimizer,
    NPUBroadcastGlobalVariablesCallback,
    npu_callbacks_append,
    npu_keras_optimizer,
)
from npu_bridge_compat.options import NpuOptions, options_from_config_proto, options_from_kwargs
from npu_bridge_compat.options.run_config import OptionKeywords
from npu_bridge_compat.runtime.doors import Door, enter_plan, plan_for_door
from npu_bridge_compat.runtime.keras_calls import KERAS_CALL_FEATURES, PlanCallback

KERAS_DOOR = Door(
    "NPUCallback",
    KERAS_CALL_FEATURES,
    "Session settings cannot change once TensorFlow runs: set them with tf.config before anything "
    "runs, or use the session door.",
    measures_precision=True,
)


class NPUCallback(OptionKeywords, PlanCallback):
    """Carries NPU options into Keras `fit` / `evaluate` / `predict`:
    `NPUCallback(iterations_per_loop=10, ...)`, `NPUCallback(config_proto)` or `NPUCallback(npu_options)`."""

    def __init__(self, config=None, **options) -> None:
        if isinstance(config, NpuOptions):
            plan = plan_for_door(config)
        elif config is not None:
            plan = plan_for_door(options_from_config_proto(config, source="NPUCallback(ConfigProto)"))
        else:
            plan = plan_for_door(options_from_kwargs(options, source="NPUCallback"))
        super().__init__(plan)
        enter_plan(plan, KERAS_DOOR, process=False)  # the process-wide part applies while Keras runs
