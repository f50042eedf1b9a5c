"""Where each TensorFlow 2.6 / Keras 2.6 module path that ported TF2 programs import lives today: the one table
behind the TF 2.6 world's modules, its filled-in names, its warnings and its name status (`TF26.status`).

Keys are full module paths as TF 2.6 programs import them (`keras.layers.core`, `tensorflow.python.keras.utils`,
`tensorflow.keras.mixed_precision.experimental`). `{keras}` in a source stands for the Keras 2 of this line:
the `keras` package on TensorFlow 2.15, `tf_keras` from TensorFlow 2.16 (Keras 2.6's modules live under its
`src`). A module serves, in this order: its `names`, its `missing` names (stand-ins that raise when used), the
names of its `sources` (first match wins), and the child modules of its sources. A module with a single source
and nothing else is that source itself (monkeypatching it patches Keras).

Beyond this table, the world follows Keras' one move: `keras.<path>` that Keras 2.15 lacks is
`{keras}.src.<path>`, and `tensorflow.python.keras.<path>` (TF 2.6's tf.keras, today a stale copy that the
program's imports never get) and `tensorflow.keras.<path>` are read as `keras.<path>`.

`FILLED` lists modules that exist today but lack TF 2.6 names: those names are looked up, when read, in the
module's entry here (the module's `__getattr__`, as PEP 562 defines it).
"""

from __future__ import annotations

from npu_bridge_compat.imports.world import KERAS, Module

HERE = "npu_bridge_compat.legacy.tf26.mixed_precision"
KERAS_UTILS = "npu_bridge_compat.legacy.tf26.keras_utils"
TF1_RNN = "npu_bridge_compat.legacy.tf1.contrib.rnn"


MULTI_GPU = "removed in TensorFlow 2.4; tf.distribute.MirroredStrategy replaces it"
EXPERIMENTAL_POLICY = (
    "tf.keras.mixed_precision.Policy, which takes no loss_scale: Model.compile wraps the optimizer in a dynamic "
    "LossScaleOptimizer for mixed_float16, as TF 2.6 did by default; another loss_scale is ignored"
)
EXPERIMENTAL_LOSS_SCALE_OPTIMIZER = (
    "builds tf.keras.mixed_precision.LossScaleOptimizer(optimizer, dynamic=..., initial_scale=...) from "
    "TF 2.6's loss_scale ('dynamic' or a fixed number); isinstance checks need the non-experimental class"
)

_MIXED_PRECISION_EXPERIMENTAL = Module(
    names={
        "Policy": f"{HERE}.ExperimentalPolicy",
        "set_policy": f"{KERAS}.mixed_precision.set_global_policy",
        "global_policy": f"{KERAS}.mixed_precision.global_policy",
        "LossScaleOptimizer": f"{HERE}.experimental_loss_scale_optimizer",
    },
    differs={"Policy": EXPERIMENTAL_POLICY, "LossScaleOptimizer": EXPERIMENTAL_LOSS_SCALE_OPTIMIZER},
    missing={
        "get_layer_policy": "removed in TensorFlow 2.4; read layer.dtype_policy",
        "DynamicLossScale": "removed with TF 2.6's loss scale classes; LossScaleOptimizer(dynamic=True) replaces it",
        "FixedLossScale": "removed with TF 2.6's loss scale classes; LossScaleOptimizer(dynamic=False) replaces it",
    },
)

# TensorFlow's own modules that TF 1.15 and TF 2.6 had and later lines moved (both worlds serve them)
MOVED_TENSORFLOW_MODULES: dict[str, Module] = {
    # a module of its own (two sources), so that its TF 2.6 children (tracking, util) are found below it
    "tensorflow.python.training.tracking": Module(
        sources=("tensorflow.python.trackable", "tensorflow.python.checkpoint")
    ),
    "tensorflow.python.training.tracking.base": Module(sources=("tensorflow.python.trackable.base",)),
    "tensorflow.python.training.tracking.tracking": Module(
        sources=(
            "tensorflow.python.trackable.autotrackable",
            "tensorflow.python.trackable.resource",
            "tensorflow.python.trackable.asset",
        )
    ),
    "tensorflow.python.training.tracking.data_structures": Module(
        sources=("tensorflow.python.trackable.data_structures",)
    ),
    "tensorflow.python.training.tracking.layer_utils": Module(sources=("tensorflow.python.trackable.layer_utils",)),
    "tensorflow.python.training.tracking.python_state": Module(sources=("tensorflow.python.trackable.python_state",)),
    "tensorflow.python.training.tracking.util": Module(sources=("tensorflow.python.checkpoint.checkpoint",)),
    "tensorflow.python.training.tracking.graph_view": Module(sources=("tensorflow.python.checkpoint.graph_view",)),
    "tensorflow.python.distribute.distribution_strategy_context": Module(
        sources=("tensorflow.python.distribute.distribute_lib",)
    ),
    "tensorflow.python.training.distribution_strategy_context": Module(
        sources=("tensorflow.python.distribute.distribute_lib",)
    ),
    "tensorflow.python.training.gen_training_ops": Module(sources=("tensorflow.python.ops.gen_training_ops",)),
    "tensorflow.python.training.training_ops": Module(sources=("tensorflow.python.ops.gen_training_ops",)),
}

MODULES: dict[str, Module] = {
    # --- Keras 2.6's modules that Keras 2.15 moved (the rest moved under {keras}.src unchanged) ---------------
    "keras.optimizer_v2": Module(
        sources=(f"{KERAS}.src.optimizers.legacy", f"{KERAS}.src.optimizers", f"{KERAS}.src.optimizers.schedules")
    ),
    "keras.optimizer_v1": Module(sources=(f"{KERAS}.src.optimizers.optimizer_v1",)),
    "keras.keras_parameterized": Module(sources=(f"{KERAS}.src.testing_infra.test_combinations",)),
    "keras.testing_utils": Module(sources=(f"{KERAS}.src.testing_infra.test_utils",)),
    "keras.combinations": Module(sources=(f"{KERAS}.src.testing_infra.test_combinations",)),
    "keras.layers.recurrent": Module(
        sources=(f"{KERAS}.src.layers.rnn", f"{KERAS}.src.layers.rnn.base_rnn", f"{KERAS}.src.layers.rnn.rnn_utils")
    ),
    "keras.layers.recurrent_v2": Module(sources=(f"{KERAS}.src.layers.rnn", f"{KERAS}.src.layers.rnn.gru_lstm_utils")),
    "keras.layers.wrappers": Module(
        sources=(
            f"{KERAS}.src.layers.rnn.base_wrapper",
            f"{KERAS}.src.layers.rnn.bidirectional",
            f"{KERAS}.src.layers.rnn.time_distributed",
        )
    ),
    "keras.layers.embeddings": Module(sources=(f"{KERAS}.src.layers.core.embedding",)),
    "keras.layers.advanced_activations": Module(sources=(f"{KERAS}.src.layers.activation",)),
    "keras.layers.merge": Module(sources=(f"{KERAS}.src.layers.merging",)),
    "keras.layers.normalization_v2": Module(sources=(f"{KERAS}.src.layers.normalization.batch_normalization",)),
    "keras.layers.noise": Module(sources=(f"{KERAS}.src.layers.regularization", f"{KERAS}.src.layers.noise")),
    "keras.layers.convolutional_recurrent": Module(sources=(f"{KERAS}.src.layers.rnn",)),
    "keras.layers.cudnn_recurrent": Module(
        sources=(f"{KERAS}.src.layers.rnn.cudnn_lstm", f"{KERAS}.src.layers.rnn.cudnn_gru")
    ),
    # Keras 2.13 moved the serialization functions and the custom object registry out of generic_utils
    "keras.utils.generic_utils": Module(
        sources=(
            f"{KERAS}.src.utils.generic_utils",
            f"{KERAS}.src.saving.legacy.serialization",
            f"{KERAS}.src.saving.object_registration",
        ),
        names={"object_list_uid": f"{KERAS_UTILS}.object_list_uid"},
    ),
    "keras.preprocessing.dataset_utils": Module(sources=(f"{KERAS}.src.utils.dataset_utils",)),
    "keras.wrappers": Module(
        gone="Keras' scikit-learn wrappers were removed in Keras 2.12; the scikeras package replaces them"
    ),
    "keras.mixed_precision.experimental": _MIXED_PRECISION_EXPERIMENTAL,
    "keras.mixed_precision.loss_scale": Module(gone="TF 2.6's loss scale classes were removed in TensorFlow 2.9"),
    # --- TF 2.6's tensorflow.python.keras, which was tf.keras: the program's imports get the live Keras 2 (its
    # API, then its modules), never the stale copy TensorFlow still ships; other paths below it are keras.<path>
    "tensorflow.python.keras": Module(sources=(KERAS, f"{KERAS}.src")),
    "tensorflow.python.keras.layers": Module(sources=(f"{KERAS}.layers", f"{KERAS}.src.layers")),
    "tensorflow.python.keras.utils": Module(
        sources=(f"{KERAS}.utils", f"{KERAS}.src.utils"), missing={"multi_gpu_model": MULTI_GPU}
    ),
    # --- TensorFlow's own modules that moved ---------------------------------------------------------------
    **MOVED_TENSORFLOW_MODULES,
    "tensorflow.python.eager.profiler": Module(sources=("tensorflow.python.profiler.profiler_v2",)),
    # TF 2.6's `tensorflow.python` package carried these op modules as attributes
    "tensorflow.python.math_ops": Module(sources=("tensorflow.python.ops.math_ops",)),
    "tensorflow.python.state_ops": Module(sources=("tensorflow.python.ops.state_ops",)),
    "tensorflow.python.control_flow_ops": Module(sources=("tensorflow.python.ops.control_flow_ops",)),
    "tensorflow.python.array_ops": Module(sources=("tensorflow.python.ops.array_ops",)),
    "tensorflow.tools.graph_transforms": Module(
        gone="the Graph Transform Tool was removed from TensorFlow's pip package; tf.compat.v1.graph_util and "
        "grappler do its rewrites"
    ),
}

# Modules that exist today without some of TF 2.6's names. `{api}` is the module itself (keras.backend, or the
# tf.keras module it names); the table's sources are searched for what it lacks.
FILLED: dict[str, Module] = {
    # the Keras package: Keras 2.6's modules (`keras.engine`, read as an attribute) by Keras' move; __version__ is
    # set on tf.keras by install_tf26_world, never looked up
    "keras": Module(names={"__version__": f"{KERAS}.__version__"}),
    "keras.backend": Module(sources=("tensorflow.compat.v1.keras.backend", f"{KERAS}.src.backend")),
    "keras.layers": Module(sources=(f"{KERAS}.src.layers",)),
    "keras.utils": Module(sources=(f"{KERAS}.src.utils",), missing={"multi_gpu_model": MULTI_GPU}),
    "keras.applications.imagenet_utils": Module(sources=(f"{KERAS}.src.applications.imagenet_utils",)),
    "keras.applications.resnet": Module(sources=(f"{KERAS}.src.applications.resnet",)),
    "keras.preprocessing.image": Module(sources=(f"{KERAS}.src.preprocessing.image",)),
    # Keras 2.6's preprocessing package held dataset_utils, which moved to utils (a child module read as a name)
    "keras.preprocessing": Module(names={"dataset_utils": "keras.preprocessing.dataset_utils"}),
    "keras.mixed_precision": Module(names={"experimental": "keras.mixed_precision.experimental"}),
    "tensorflow.python.ops.rnn_cell_impl": Module(names={"_Linear": f"{TF1_RNN}.Linear"}),
    # `from tensorflow.python import ops` gave TF 2.6 programs the framework's ops (ops.convert_to_tensor in
    # keras-bert's RAdam); today that name is the ops package, which lacks them
    "tensorflow.python.ops": Module(sources=("tensorflow.python.framework.ops",)),
    # TensorFlow 2.13 moved the conversion functions out of ops (BertLarge's dropout and metrics import it there)
    "tensorflow.python.framework.ops": Module(
        names={
            "convert_to_tensor_v2_with_dispatch": (
                "tensorflow.python.framework.tensor_conversion.convert_to_tensor_v2_with_dispatch"
            )
        }
    ),
}

# TF 2.6's tf.keras.optimizers were the OptimizerV2 classes, today's tf.keras.optimizers.legacy: ported optimizers
# subclass them and call their methods (_prepare_local, _resource_apply_dense, _decayed_lr).
LEGACY_OPTIMIZERS = ("Adadelta", "Adagrad", "Adam", "Adamax", "Ftrl", "Nadam", "Optimizer", "RMSprop", "SGD")
