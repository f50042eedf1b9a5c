"""Where each TF 1.15 module that TensorFlow 2.15 lacks finds its names: the one table behind the virtual modules,
the stand-ins, the warnings and the name status (`TF1.status`).

Keys are module paths below `tensorflow.` (`contrib.layers`, `python.keras`, ...). A module serves, in this order:
its `names` (a counterpart under another name, or written in this package), its `missing` names (stand-ins that
raise when used), the public names of its `sources` (first match wins), its child modules listed here, and the
child modules of its sources (`contrib.slim.nets.resnet_v1` is `tf_slim.nets.resnet_v1`). Counterparts that behave
differently from TF 1.15 say how in `differs`; that sentence is the warning, the README line and the scan detail.
"""

from __future__ import annotations

from npu_bridge_compat.imports.world import KERAS, Module
from npu_bridge_compat.legacy.tf26.table import MOVED_TENSORFLOW_MODULES

# TF 1.15's private modules that TensorFlow 2 moved, lacks names of, or removed (below `tensorflow.`)
_PRIVATE_ROOTS = (
    "python.framework.ops",
    "python.framework.graph_util",
    "python.graph_util",
    "python.data.experimental.ops.threadpool",
    "python.ops.rnn_cell_impl",
    "python.util.tf_export",
    "python.util.nest",
    "python.tpu.tpu_config",
    "python.tpu.tpu_estimator",
    "python.eager.profiler",
    *(
        path[len("tensorflow.") :]
        for path in MOVED_TENSORFLOW_MODULES
        if path.rpartition(".")[0] not in MOVED_TENSORFLOW_MODULES  # a tree's top (training.tracking), not its modules
    ),
)
# The trees of `tensorflow.` that this table answers for. TF 1.15's private modules (`python.*`) are answered for
# the user's program only: TensorFlow's own code keeps importing its real ones.
ROOTS = ("contrib", "python.keras", *_PRIVATE_ROOTS, "examples", "tools.graph_transforms")
# The trees the world's import finder serves to everyone: TensorFlow 2 has no module of these paths at all.
PUBLIC_ROOTS = ("contrib", "examples", "tools.graph_transforms")
# The namespaces whose names `scan` reads as TF 1.15 names (what `run --tf1` answers for).
TF1_NAMESPACES = ("tensorflow.contrib", "tensorflow.python.keras", "tensorflow.examples")
LOCAL = "npu_bridge_compat.legacy.tf1.contrib"  # counterparts written in this package
MNIST = "npu_bridge_compat.legacy.tf1.mnist"
ADAPTER = "npu_bridge_compat.legacy.npu_bridge"  # the adapter's module tree (its pre-npu_bridge paths below)


TPU_ONLY = "it runs only on a TPU"
FEATURE_COLUMNS = "contrib's feature columns were removed; tf.compat.v1.feature_column has a different API"
CUDNN_CANONICAL = (
    "the layers run tf.compat.v1.nn's dynamic RNN with the CudnnCompatible cells on the canonical weights (the "
    "variables, named as TF 1.15's checkpoints name them), on the CPU or GPU, not cuDNN's fused kernel; "
    "input_mode='skip_input' is not supported"
)
FUSED_RNN = "contrib's fused RNN kernels were removed; tf.compat.v1.nn.rnn_cell.LSTMCell / GRUCell compute the same"
QUANTIZE = (
    "the graph rewrite for quantization-aware training was removed; tensorflow-model-optimization does it "
    "for Keras models only"
)

_LAYERS = Module(
    sources=(
        "tf_slim.layers",
        "tf_slim.layers.initializers",
        "tf_slim.layers.regularizers",
        "tf_slim.layers.optimizers",
        "tf_slim.layers.summaries",
    ),
    names={"safe_embedding_lookup_sparse": "tensorflow.compat.v1.nn.safe_embedding_lookup_sparse"},
    missing={
        name: FEATURE_COLUMNS
        for name in (
            "real_valued_column",
            "sparse_column_with_hash_bucket",
            "sparse_column_with_keys",
            "sparse_column_with_integerized_feature",
            "embedding_column",
            "bucketized_column",
            "crossed_column",
            "one_hot_column",
            "weighted_sparse_column",
            "shared_embedding_columns",
            "scattered_embedding_column",
            "input_from_feature_columns",
            "transform_features",
            "parse_feature_columns_from_examples",
            "weighted_sum_from_feature_columns",
            "joint_weighted_sum_from_feature_columns",
            "check_feature_columns",
            "create_feature_spec_for_parsing",
            "infer_real_valued_columns",
            "sequence_input_from_feature_columns",
            "make_place_holder_tensors_for_base_features",
        )
    }
    | {
        "embed_sequence": "removed with contrib; tf.compat.v1.nn.embedding_lookup on a variable does the same",
        "bow_encoder": "removed with contrib",
        "embedding_lookup_unique": "removed with contrib; tf.compat.v1.nn.embedding_lookup does the lookup",
    },
    note="tf_slim.layers (with its initializers, regularizers, optimizers and summaries)",
)
_FRAMEWORK_SOURCES = ("tf_slim.ops.arg_scope", "tf_slim.ops.variables")
_FRAMEWORK_NAMES = {
    "nest": "tensorflow.python.util.nest",
    "list_variables": "tensorflow.compat.v1.train.list_variables",
    "load_checkpoint": "tensorflow.compat.v1.train.load_checkpoint",
    "load_variable": "tensorflow.compat.v1.train.load_variable",
    "init_from_checkpoint": "tensorflow.compat.v1.train.init_from_checkpoint",
    "get_name_scope": "tensorflow.python.framework.ops.get_name_scope",
    "is_tensor": "tensorflow.is_tensor",
    "sort": "tensorflow.sort",
    "argsort": "tensorflow.argsort",
    "smart_cond": "tensorflow.python.framework.smart_cond.smart_cond",
    "convert_to_tensor_or_sparse_tensor": (
        "tensorflow.python.framework.sparse_tensor.convert_to_tensor_or_sparse_tensor"
    ),
    "deprecated": "tensorflow.python.util.deprecation.deprecated",
    "deprecated_args": "tensorflow.python.util.deprecation.deprecated_args",
    "py_func": "tensorflow.compat.v1.py_func",
}
_TENSOR_UTIL_NAMES = {name: f"{LOCAL}.framework.{name}" for name in ("with_shape", "with_same_shape")}
_RNN_SOURCES = ("tensorflow.compat.v1.nn.rnn_cell",)
# private, but custom cells and dynamic RNNs of ported scripts build on them
_RNN_PRIVATE = {"_Linear": f"{LOCAL}.rnn.Linear", "_like_rnncell": f"{LOCAL}.rnn.like_rnncell"}
_RNN_NAMES = {
    "static_rnn": "tensorflow.compat.v1.nn.static_rnn",
    "static_bidirectional_rnn": "tensorflow.compat.v1.nn.static_bidirectional_rnn",
    "static_state_saving_rnn": "tensorflow.compat.v1.nn.static_state_saving_rnn",
    "stack_bidirectional_dynamic_rnn": f"{LOCAL}.rnn.stack_bidirectional_dynamic_rnn",
    "stack_bidirectional_rnn": f"{LOCAL}.rnn.stack_bidirectional_rnn",
    "LayerNormBasicLSTMCell": f"{LOCAL}.rnn_cells.LayerNormBasicLSTMCell",
    "CudnnCompatibleLSTMCell": f"{LOCAL}.cudnn_rnn.CudnnCompatibleLSTMCell",
    "CudnnCompatibleGRUCell": f"{LOCAL}.cudnn_rnn.CudnnCompatibleGRUCell",
}
_RNN_MISSING = {
    name: FUSED_RNN
    for name in (
        "LSTMBlockCell",
        "LSTMBlockFusedCell",
        "LSTMBlockWrapper",
        "GRUBlockCell",
        "GRUBlockCellV2",
    )
} | {
    name: "removed with contrib"
    for name in (
        "AttentionCellWrapper",
        "CoupledInputForgetGateLSTMCell",
        "HighwayWrapper",
        "IndyLSTMCell",
        "IndyGRUCell",
        "NASCell",
        "UGRNNCell",
        "IntersectionRNNCell",
        "PhasedLSTMCell",
        "ConvLSTMCell",
        "Conv1DLSTMCell",
        "Conv2DLSTMCell",
        "Conv3DLSTMCell",
        "GridLSTMCell",
        "BidirectionalGridLSTMCell",
        "TimeFreqLSTMCell",
        "GLSTMCell",
        "LayerNormLSTMCell",
        "SRUCell",
        "EmbeddingWrapper",
        "InputProjectionWrapper",
        "OutputProjectionWrapper",
        "CompiledWrapper",
    )
}
_TRAINING_SOURCES = ("tf_slim.training.evaluation", "tf_slim.training.training", f"{LOCAL}.training")
_TRAINING_MISSING = {
    name: "removed with contrib; tf.data does input pipelines on TensorFlow 2"
    for name in (
        "bucket_by_sequence_length",
        "batch_sequences_with_states",
        "stratified_sample",
        "rejection_sample",
        "FeedingQueueRunner",
        "SequenceQueueingStateSaver",
        "NextQueuedSequenceBatch",
        "resample_at_rate",
        "weighted_resample",
    )
}
_TPU_DIFFERS = {
    "TPUEstimator": "runs with use_tpu=False (eval_on_tpu and export_to_tpu off too): model_fn trains on this "
    "host's CPU/GPU, one step per session run",
    "CrossShardOptimizer": "one shard on a host: it is the wrapped optimizer itself (no cross-shard gradient sum)",
}
_TPU_LOCAL = {"TPUEstimator": f"{LOCAL}.tpu.TPUEstimator", "CrossShardOptimizer": f"{LOCAL}.tpu.CrossShardOptimizer"}
_TPU_MISSING = {
    name: TPU_ONLY
    for name in (
        "replicate",
        "shard",
        "rewrite",
        "batch_parallel",
        "cross_replica_sum",
        "initialize_system",
        "shutdown_system",
        "keras_to_tpu_model",
        "TPUDistributionStrategy",
        "InfeedQueue",
        "tpu_ops",
    )
}
_SEQ2SEQ = f"{LOCAL}.seq2seq"
# contrib.seq2seq.python.ops' modules that this package's seq2seq modules of the same name serve
_SEQ2SEQ_MODULES = ("attention_wrapper", "helper", "basic_decoder", "beam_search_decoder", "loss")
_SEQ2SEQ_NAMES = {
    name: f"{_SEQ2SEQ}.{name}"
    for name in (
        "sequence_loss",
        "tile_batch",
        "dynamic_decode",
        "Decoder",
        "BasicDecoder",
        "BasicDecoderOutput",
        "BeamSearchDecoder",
        "BeamSearchDecoderOutput",
        "BeamSearchDecoderState",
        "FinalBeamSearchDecoderOutput",
        "AttentionWrapper",
        "AttentionWrapperState",
        "AttentionMechanism",
        "BahdanauAttention",
        "BahdanauMonotonicAttention",
        "LuongAttention",
        "LuongMonotonicAttention",
        "TrainingHelper",
        "GreedyEmbeddingHelper",
        "SampleEmbeddingHelper",
        "ScheduledEmbeddingTrainingHelper",
        "ScheduledOutputTrainingHelper",
        "InferenceHelper",
        "CustomHelper",
        "Helper",
        "gather_tree",
        "hardmax",
        "safe_cumprod",
        "monotonic_attention",
    )
}
_CUDNN_CONSTANTS = (
    "CUDNN_RNN_UNIDIRECTION",
    "CUDNN_RNN_BIDIRECTION",
    "CUDNN_LSTM",
    "CUDNN_GRU",
    "CUDNN_RNN_RELU",
    "CUDNN_RNN_TANH",
    "CUDNN_INPUT_LINEAR_MODE",
    "CUDNN_INPUT_SKIP_MODE",
    "CUDNN_INPUT_AUTO_MODE",
)
_CUDNN_LAYERS = Module(
    sources=(f"{LOCAL}.cudnn_rnn",),
    differs={name: CUDNN_CANONICAL for name in ("CudnnLSTM", "CudnnGRU", "CudnnRNNTanh", "CudnnRNNRelu")},
    missing={
        name: "its opaque cuDNN parameter buffer is gone: the layers here keep the canonical weights as variables, "
        "which a Saver saves and restores by TF 1.15's canonical names"
        for name in ("CudnnLSTMSaveable", "CudnnGRUSaveable", "CudnnRNNTanhSaveable", "CudnnRNNReluSaveable")
    },
)
_IMAGE_NAMES = {
    name: f"{LOCAL}.image.{name}"
    for name in (
        "transform",
        "rotate",
        "translate",
        "angles_to_projective_transforms",
        "translations_to_projective_transforms",
        "compose_transforms",
        "flat_transforms_to_matrices",
        "matrices_to_flat_transforms",
        "random_hsv_in_yiq",
        "adjust_hsv_in_yiq",
    )
}
_IMAGE_MISSING = {
    name: "removed with contrib (tensorflow-addons' tfa.image has TF2 versions)"
    for name in (
        "connected_components",
        "dense_image_warp",
        "interpolate_spline",
        "sparse_image_warp",
        "bipartite_match",
        "single_image_random_dot_stereograms",
        "ImageProjectiveTransform",
        "image_logits",
    )
}
_MNIST = Module(
    sources=(MNIST,),
    note="local MNIST files, no download",
    differs={
        "read_data_sets": "reads the MNIST files in train_dir and downloads nothing; batches shuffle "
        "with the DataSet's own random state, not numpy's global one"
    },
)
_DATASETS_BASE = Module(
    names={"Datasets": f"{MNIST}.Datasets"},
    missing={
        "maybe_download": "npu_bridge_compat downloads nothing; put the files in place",
        "load_iris": "removed with contrib",
        "load_boston": "removed with contrib",
    },
)
_LEARN_GONE = "contrib.learn's Estimators and Experiment were removed; tf.compat.v1.estimator replaces them"
GRAPH_TRANSFORMS = (
    "the Graph Transform Tool was removed from TensorFlow's pip package; tf.compat.v1.graph_util "
    "(extract_sub_graph, remove_training_nodes, convert_variables_to_constants) and grappler do its rewrites"
)
_GRAPH_UTIL = Module(
    sources=("tensorflow.compat.v1.graph_util", "tensorflow.python.framework.graph_util"),
    note="tf.compat.v1.graph_util",
)
_KERAS = Module(
    sources=("tensorflow.compat.v1.keras", f"{KERAS}.src"),
    note="the Keras 2 of this TensorFlow (tf.keras: Keras 2.15, or tf_keras): its TF 1.15 API, then its modules",
)
# TF 1.15's Keras modules that Keras 2.15 moved or split (the others are children of the sources above)
_KERAS_MOVED = {
    "python.keras.layers.merge": Module(sources=(f"{KERAS}.src.layers.merging",)),
    "python.keras.layers.advanced_activations": Module(sources=(f"{KERAS}.src.layers.activation",)),
    "python.keras.layers.normalization": Module(
        sources=(
            f"{KERAS}.src.layers.normalization.batch_normalization_v1",
            f"{KERAS}.src.layers.normalization.layer_normalization",
        ),
        note="TF 1.15's BatchNormalization (the V1 layer) and LayerNormalization",
    ),
    "python.keras.layers.normalization_v2": Module(sources=(f"{KERAS}.src.layers.normalization.batch_normalization",)),
    "python.keras.optimizer_v2": Module(sources=(f"{KERAS}.src.optimizers.legacy", f"{KERAS}.src.optimizers")),
    "python.keras.testing_utils": Module(sources=(f"{KERAS}.src.testing_infra.test_utils",)),
    "python.keras.keras_parameterized": Module(sources=(f"{KERAS}.src.testing_infra.test_combinations",)),
    "python.keras.utils": Module(
        sources=("tensorflow.compat.v1.keras.utils", f"{KERAS}.src.utils"),
        names={"multi_gpu_model": "npu_bridge_compat.legacy.tf1.keras_utils.multi_gpu_model"},
    ),
    # Keras 2.13 moved the serialization functions and the custom object registry out of generic_utils
    "python.keras.utils.generic_utils": Module(
        sources=(
            f"{KERAS}.src.utils.generic_utils",
            f"{KERAS}.src.saving.legacy.serialization",
            f"{KERAS}.src.saving.object_registration",
        )
    ),
    "python.keras.engine.network": Module(
        sources=(f"{KERAS}.src.engine.functional",),
        names={"Network": f"{KERAS}.src.engine.functional.Functional"},
        differs={"Network": "Keras' Functional model, which Network became in TensorFlow 2.2: it is a Model too"},
    ),
}

MODULES: dict[str, Module] = {
    # --- tensorflow.contrib, in order of the ModelZoo model folders that use it ---------------------------------
    "contrib": Module(note="tensorflow.contrib, mapped onto maintained counterparts"),
    "contrib.layers": _LAYERS,
    "contrib.layers.python": Module(),
    "contrib.layers.python.layers": _LAYERS,
    "contrib.layers.python.layers.feature_column": Module(gone=FEATURE_COLUMNS),
    "contrib.slim": Module(sources=("tf_slim",)),
    # slim re-exported contrib.layers' utils, whose __all__ leaves out the alias helpers that slim's users call
    "contrib.slim.utils": Module(
        sources=("tf_slim.layers.utils",),
        names={
            name: f"tf_slim.layers.utils.{name}"
            for name in (
                "convert_collection_to_dict",
                "append_tensor_alias",
                "gather_tensors_aliases",
                "get_tensor_aliases",
            )
        },
    ),
    "contrib.slim.python": Module(),
    "contrib.slim.python.slim": Module(sources=("tf_slim",)),
    "contrib.data": Module(
        sources=("tensorflow.data.experimental",),
        names={
            "batch_and_drop_remainder": f"{LOCAL}.data.batch_and_drop_remainder",
            "padded_batch_and_drop_remainder": f"{LOCAL}.data.padded_batch_and_drop_remainder",
            "Dataset": "tensorflow.compat.v1.data.Dataset",
            "Iterator": "tensorflow.compat.v1.data.Iterator",
            "TFRecordDataset": "tensorflow.compat.v1.data.TFRecordDataset",
            "TextLineDataset": "tensorflow.compat.v1.data.TextLineDataset",
            "FixedLengthRecordDataset": "tensorflow.compat.v1.data.FixedLengthRecordDataset",
        },
        missing={
            "sliding_window_batch": "removed; Dataset.window(size, shift).flat_map(...) replaces it",
            "LMDBDataset": "removed with contrib",
            "reduce_dataset": "removed; Dataset.reduce replaces it",
            "assert_element_shape": "removed; Dataset.map with tf.ensure_shape replaces it",
        },
        note="tf.data.experimental",
    ),
    "contrib.tpu": Module(
        sources=("tensorflow.compat.v1.estimator.tpu", "tensorflow.compat.v1.tpu"),
        names=_TPU_LOCAL,
        differs=_TPU_DIFFERS,
        missing=_TPU_MISSING,
        note="tf.compat.v1.estimator.tpu and tf.compat.v1.tpu, with TPU use turned off",
    ),
    "contrib.tpu.python": Module(),
    "contrib.tpu.python.tpu": Module(
        sources=("tensorflow.python.tpu", "tensorflow_estimator.python.estimator.tpu"),
        names=_TPU_LOCAL,
        differs=_TPU_DIFFERS,
    ),
    "contrib.tpu.python.tpu.tpu_estimator": Module(
        sources=("tensorflow_estimator.python.estimator.tpu.tpu_estimator",),
        names={"TPUEstimator": _TPU_LOCAL["TPUEstimator"]},
        differs={"TPUEstimator": _TPU_DIFFERS["TPUEstimator"]},
    ),
    "contrib.tpu.python.tpu.tpu_config": Module(sources=("tensorflow_estimator.python.estimator.tpu.tpu_config",)),
    "contrib.tpu.python.tpu.tpu_optimizer": Module(
        names={"CrossShardOptimizer": _TPU_LOCAL["CrossShardOptimizer"]},
        differs={"CrossShardOptimizer": _TPU_DIFFERS["CrossShardOptimizer"]},
    ),
    "contrib.tpu.python.tpu.async_checkpoint": Module(
        names={"AsyncCheckpointSaverHook": "tensorflow.compat.v1.train.CheckpointSaverHook"},
        differs={
            "AsyncCheckpointSaverHook": "tf.compat.v1.train.CheckpointSaverHook, which saves in the training thread "
            "rather than a background one"
        },
    ),
    "contrib.tpu.python.ops": Module(sources=("tensorflow.python.tpu.ops",)),
    "contrib.tpu.proto": Module(sources=("tensorflow.core.protobuf.tpu",)),
    "contrib.framework": Module(
        sources=_FRAMEWORK_SOURCES,
        names=_FRAMEWORK_NAMES,
        missing={
            "zero_initializer": "removed with contrib; variable.initializer with tf.zeros does the same",
            "CriticalSection": "removed with contrib",
        },
    ),
    "contrib.framework.python": Module(),
    "contrib.framework.python.ops": Module(sources=_FRAMEWORK_SOURCES, names=_FRAMEWORK_NAMES),
    "contrib.framework.python.ops.arg_scope": Module(sources=("tf_slim.ops.arg_scope",)),
    "contrib.framework.python.ops.variables": Module(sources=("tf_slim.ops.variables",)),
    "contrib.framework.python.ops.audio_ops": Module(sources=("tensorflow.python.ops.gen_audio_ops",)),
    "contrib.framework.python.framework": Module(
        sources=("tensorflow.python.training.checkpoint_utils",), names=_TENSOR_UTIL_NAMES
    ),
    "contrib.framework.python.framework.tensor_util": Module(
        sources=("tensorflow.python.framework.tensor_util", "tensorflow.python.ops.check_ops"),
        names=_TENSOR_UTIL_NAMES,
    ),
    "contrib.framework.python.framework.checkpoint_utils": Module(
        sources=("tensorflow.python.training.checkpoint_utils",)
    ),
    "contrib.all_reduce": Module(sources=("tensorflow.python.distribute.v1.all_reduce",)),
    "contrib.all_reduce.python": Module(),
    "contrib.all_reduce.python.all_reduce": Module(sources=("tensorflow.python.distribute.v1.all_reduce",)),
    "contrib.eager": Module(
        names={
            "in_eager_mode": "tensorflow.executing_eagerly",
            "executing_eagerly": "tensorflow.executing_eagerly",
            "enable_eager_execution": "tensorflow.compat.v1.enable_eager_execution",
            "Iterator": "tensorflow.python.data.ops.iterator_ops.OwnedIterator",
            "defun": "tensorflow.function",
            "Variable": "tensorflow.Variable",
            "Checkpoint": "tensorflow.train.Checkpoint",
            "py_func": "tensorflow.py_function",
            "num_gpus": "tensorflow.python.eager.context.num_gpus",
            "gradients_function": "tensorflow.python.eager.backprop.gradients_function",
            "implicit_gradients": "tensorflow.python.eager.backprop.implicit_grad",
        },
        differs={"defun": "tf.function, which defun became; its experimental_* arguments are not taken"},
        note="TensorFlow's eager execution, which contrib.eager previewed",
    ),
    "contrib.resampler": Module(
        gone="contrib.resampler was removed; tensorflow-addons' tfa.image.resampler does the same bilinear sampling"
    ),
    "contrib.saved_model": Module(),
    "contrib.saved_model.python": Module(),
    "contrib.saved_model.python.saved_model": Module(),
    "contrib.saved_model.python.saved_model.reader": Module(sources=("tensorflow.python.tools.saved_model_utils",)),
    "contrib.tensorrt": Module(
        sources=("tensorflow.python.compiler.tensorrt.trt_convert",),
        note="TF-TRT's converter (tensorflow.python.compiler.tensorrt.trt_convert); converting needs TensorRT",
    ),
    "contrib.ctc": Module(
        names={
            "ctc_loss": "tensorflow.compat.v1.nn.ctc_loss",
            "ctc_greedy_decoder": "tensorflow.compat.v1.nn.ctc_greedy_decoder",
            "ctc_beam_search_decoder": "tensorflow.compat.v1.nn.ctc_beam_search_decoder",
        }
    ),
    "contrib.util.loader": Module(names={"load_op_library": "tensorflow.load_op_library"}),
    "contrib.cluster_resolver": Module(sources=("tensorflow.distribute.cluster_resolver",)),
    "contrib.rnn": Module(
        sources=_RNN_SOURCES,
        names=_RNN_NAMES,
        missing=_RNN_MISSING,
        note="tf.compat.v1.nn.rnn_cell and tf.compat.v1.nn's static RNNs",
    ),
    "contrib.rnn.python": Module(),
    "contrib.rnn.python.ops": Module(sources=_RNN_SOURCES, names=_RNN_NAMES, missing=_RNN_MISSING),
    "contrib.rnn.python.ops.rnn_cell": Module(sources=_RNN_SOURCES, names=_RNN_PRIVATE, missing=_RNN_MISSING),
    "contrib.rnn.python.ops.core_rnn_cell": Module(sources=_RNN_SOURCES, names=_RNN_PRIVATE, missing=_RNN_MISSING),
    "contrib.rnn.python.ops.rnn": Module(sources=(f"{LOCAL}.rnn",)),
    # contrib's LSTMBlock kernels moved into TensorFlow's own RNN ops (block_lstm, lstm_block_cell, ...)
    "contrib.rnn.ops": Module(),
    "contrib.rnn.ops.gen_lstm_ops": Module(sources=("tensorflow.python.ops.gen_rnn_ops",)),
    "contrib.training": Module(
        sources=_TRAINING_SOURCES, missing=_TRAINING_MISSING, note="tf_slim.training and HParams written here"
    ),
    "contrib.training.python": Module(),
    "contrib.training.python.training": Module(sources=_TRAINING_SOURCES, missing=_TRAINING_MISSING),
    "contrib.training.python.training.hparam": Module(sources=(f"{LOCAL}.training",)),
    "contrib.training.python.training.evaluation": Module(sources=("tf_slim.training.evaluation",)),
    "contrib.training.python.training.training": Module(sources=("tf_slim.training.training",)),
    "contrib.training.python.training.sequence_queueing_state_saver": Module(
        gone="removed with contrib; tf.data does input pipelines on TensorFlow 2"
    ),
    "contrib.opt": Module(
        names={"LazyAdamOptimizer": f"{LOCAL}.opt.LazyAdamOptimizer", "AdamWOptimizer": f"{LOCAL}.opt.AdamWOptimizer"},
        missing={
            name: "removed with contrib"
            for name in (
                "ScipyOptimizerInterface",
                "MovingAverageOptimizer",
                "ElasticAverageOptimizer",
                "ModelAverageOptimizer",
                "NadamOptimizer",
                "AddSignOptimizer",
                "PowerSignOptimizer",
                "GGTOptimizer",
                "ShampooOptimizer",
                "AdaMaxOptimizer",
                "MultitaskOptimizerWrapper",
                "VariableClippingOptimizer",
                "DropStaleGradientOptimizer",
                "RegAdagradOptimizer",
                "AGNOptimizer",
                "MomentumWOptimizer",
                "extend_with_decoupled_weight_decay",
                "DecoupledWeightDecayExtension",
                "clip_gradients_by_global_norm",
            )
        }
        | {"LARSOptimizer": "removed with contrib; the TF Model Garden's LARS optimizer (tf-models-official) does it"},
        note="LazyAdamOptimizer and AdamWOptimizer written here on tf.compat.v1.train.AdamOptimizer",
    ),
    "contrib.image": Module(
        names=_IMAGE_NAMES,
        missing=_IMAGE_MISSING,
        note="written here on tf.raw_ops.ImageProjectiveTransformV2 and tf.image's YIQ",
    ),
    "contrib.image.python": Module(),
    "contrib.image.python.ops": Module(names=_IMAGE_NAMES, missing=_IMAGE_MISSING),
    "contrib.image.python.ops.image_ops": Module(names=_IMAGE_NAMES, missing=_IMAGE_MISSING),
    "contrib.image.python.ops.distort_image_ops": Module(names=_IMAGE_NAMES),
    # contrib's image kernels moved into TensorFlow's own image ops (image_projective_transform_v2, ...)
    "contrib.image.ops": Module(),
    "contrib.image.ops.gen_image_ops": Module(sources=("tensorflow.python.ops.gen_image_ops",)),
    "contrib.learn": Module(
        names={"ModeKeys": f"{LOCAL}.learn.ModeKeys"},
        missing={
            name: _LEARN_GONE
            for name in (
                "Estimator",
                "Experiment",
                "RunConfig",
                "learn_runner",
                "DNNClassifier",
                "DNNRegressor",
                "LinearClassifier",
                "LinearRegressor",
                "SKCompat",
                "infer_real_valued_columns_from_input",
                "ModelFnOps",
            )
        },
    ),
    "contrib.learn.python": Module(),
    "contrib.learn.python.learn": Module(names={"ModeKeys": f"{LOCAL}.learn.ModeKeys"}),
    "contrib.learn.python.learn.monitored_session": Module(sources=("tensorflow.python.training.monitored_session",)),
    "contrib.learn.python.learn.datasets": Module(),
    "contrib.learn.python.learn.datasets.mnist": _MNIST,
    "contrib.learn.python.learn.datasets.base": _DATASETS_BASE,
    "contrib.learn.datasets": Module(),
    "contrib.learn.datasets.mnist": _MNIST,
    "contrib.learn.datasets.base": _DATASETS_BASE,
    "contrib.metrics": Module(
        sources=("tf_slim.metrics",), names={"confusion_matrix": "tensorflow.compat.v1.confusion_matrix"}
    ),
    "contrib.summary": Module(
        sources=("tensorflow.python.ops.summary_ops_v2",),
        names={"all_summary_ops": "tensorflow.compat.v1.summary.all_v2_summary_ops"},
    ),
    "contrib.distribute": Module(
        names={
            "MirroredStrategy": f"{LOCAL}.distribute.MirroredStrategy",
            "AllReduceCrossTowerOps": f"{LOCAL}.distribute.AllReduceCrossDeviceOps",
            "AllReduceCrossDeviceOps": f"{LOCAL}.distribute.AllReduceCrossDeviceOps",
            "OneDeviceStrategy": "tensorflow.distribute.OneDeviceStrategy",
            "ReductionToOneDevice": "tensorflow.distribute.ReductionToOneDevice",
            "CollectiveAllReduceStrategy": "tensorflow.distribute.MultiWorkerMirroredStrategy",
        },
        differs={
            "MirroredStrategy": "tf.distribute.MirroredStrategy; num_gpus picks this host's first GPUs",
            "AllReduceCrossTowerOps": "tf.distribute.NcclAllReduce or HierarchicalCopyAllReduce; "
            "agg_small_grads_* are ignored",
            "AllReduceCrossDeviceOps": "tf.distribute.NcclAllReduce or HierarchicalCopyAllReduce; "
            "agg_small_grads_* are ignored",
            "CollectiveAllReduceStrategy": "tf.distribute.MultiWorkerMirroredStrategy, configured through "
            "TF_CONFIG instead of num_gpus_per_worker",
        },
        missing={
            "ParameterServerStrategy": "tf.distribute.experimental.ParameterServerStrategy needs a "
            "ClusterCoordinator on TensorFlow 2",
            "TPUStrategy": TPU_ONLY,
        },
    ),
    "contrib.quantize": Module(gone=QUANTIZE),
    "contrib.seq2seq": Module(names=_SEQ2SEQ_NAMES, note="this package's contrib.seq2seq, on TensorFlow's own ops"),
    "contrib.seq2seq.python": Module(),
    "contrib.seq2seq.python.ops": Module(names=_SEQ2SEQ_NAMES),
    **{f"contrib.seq2seq.python.ops.{name}": Module(sources=(f"{_SEQ2SEQ}.{name}",)) for name in _SEQ2SEQ_MODULES},
    # private, but ModelZoo's own decoders build on it
    "contrib.seq2seq.python.ops.decoder": Module(
        sources=(f"{_SEQ2SEQ}.decoder",),
        names={"_transpose_batch_time": f"{_SEQ2SEQ}.decoder._transpose_batch_time"},
    ),
    "contrib.seq2seq.python.ops.beam_search_ops": Module(names={"gather_tree": f"{_SEQ2SEQ}.gather_tree"}),
    "contrib.hccl": Module(note="the adapter's hccl_ops (pre-npu_bridge path)"),
    "contrib.hccl.python": Module(),
    "contrib.hccl.python.ops": Module(sources=(f"{ADAPTER}.hccl",)),
    "contrib.lookup": Module(
        sources=("tensorflow.compat.v1.lookup", "tensorflow.compat.v1.lookup.experimental"),
        names={
            name: f"tensorflow.python.ops.lookup_ops.{name}"
            for name in (
                "index_table_from_file",
                "index_to_string_table_from_file",
                "index_table_from_tensor",
                "index_to_string_table_from_tensor",
                "HashTable",
                "IdTableWithHashBuckets",
            )
        }
        | {"MutableDenseHashTable": "tensorflow.lookup.experimental.DenseHashTable"},
    ),
    "contrib.tfprof": Module(),
    "contrib.tfprof.model_analyzer": Module(
        sources=("tensorflow.python.profiler.model_analyzer",),
        names={"ProfileOptionBuilder": "tensorflow.python.profiler.option_builder.ProfileOptionBuilder"},
        missing={
            name: "removed in TF 1.x; tf.compat.v1.profiler.profile with ProfileOptionBuilder replaces it"
            for name in (
                "print_model_analysis",
                "TRAINABLE_VARS_PARAMS_STAT_OPTIONS",
                "FLOAT_OPS_OPTIONS",
                "PRINT_ALL_TIMING_MEMORY",
            )
        },
    ),
    "contrib.tfprof.tfprof_logger": Module(sources=("tensorflow.python.profiler.tfprof_logger",)),
    "contrib.mixed_precision": Module(
        names={
            "LossScaleOptimizer": "npu_bridge_compat.loss_scale.NPULossScaleOptimizer",
            "FixedLossScaleManager": "npu_bridge_compat.loss_scale.FixedLossScaleManager",
            "ExponentialUpdateLossScaleManager": "npu_bridge_compat.loss_scale.ExponentialUpdateLossScaleManager",
        },
        note="npu_bridge_compat.loss_scale, TF 1.15's loss scaling semantics",
    ),
    "contrib.keras": Module(sources=("tensorflow.compat.v1.keras",)),
    "contrib.keras.api": Module(),
    "contrib.keras.api.keras": Module(sources=("tensorflow.compat.v1.keras",)),
    "contrib.estimator": Module(
        sources=("tensorflow.compat.v1.estimator.experimental", "tensorflow.compat.v1.estimator"),
        missing={
            name: "removed with contrib; tf.compat.v1.estimator's heads differ"
            for name in (
                "binary_classification_head",
                "multi_class_head",
                "multi_label_head",
                "regression_head",
                "poisson_regression_head",
                "logistic_regression_head",
                "multi_head",
                "clip_gradients_by_norm",
                "forward_features",
                "replicate_model_fn",
                "TowerOptimizer",
                "export_saved_model_for_mode",
                "export_all_saved_models",
            )
        },
    ),
    "contrib.distributions": Module(
        sources=("tensorflow.compat.v1.distributions",),
        missing={"percentile": "removed with contrib; tensorflow-probability's tfp.stats.percentile replaces it"},
        note="tf.compat.v1.distributions (the TF 1.15 core distributions; the others moved to tensorflow-probability)",
    ),
    "contrib.legacy_seq2seq": Module(
        names={
            name: f"{LOCAL}.legacy_seq2seq.{name}"
            for name in ("sequence_loss", "sequence_loss_by_example", "rnn_decoder")
        },
        missing={
            name: "removed with contrib"
            for name in (
                "basic_rnn_seq2seq",
                "tied_rnn_seq2seq",
                "embedding_rnn_seq2seq",
                "embedding_tied_rnn_seq2seq",
                "embedding_attention_seq2seq",
                "attention_decoder",
                "embedding_rnn_decoder",
                "embedding_attention_decoder",
                "one2many_rnn_seq2seq",
                "model_with_buckets",
            )
        },
    ),
    "contrib.legacy_seq2seq.python": Module(),
    "contrib.legacy_seq2seq.python.ops": Module(),
    "contrib.legacy_seq2seq.python.ops.seq2seq": Module(sources=(f"{LOCAL}.legacy_seq2seq",)),
    "contrib.cudnn_rnn": _CUDNN_LAYERS,
    "contrib.cudnn_rnn.python": Module(),
    "contrib.cudnn_rnn.python.ops": Module(),
    "contrib.cudnn_rnn.python.ops.cudnn_rnn_ops": Module(
        names={name: f"{LOCAL}.cudnn_rnn.{name}" for name in _CUDNN_CONSTANTS},
        missing={
            name: "the cuDNN RNN ops' opaque parameter API was removed; contrib.cudnn_rnn's layers compute on the "
            "canonical weights"
            for name in (
                "CudnnLSTM",
                "CudnnGRU",
                "CudnnRNNTanh",
                "CudnnRNNRelu",
                "CudnnLSTMSaveable",
                "CudnnGRUSaveable",
                "CudnnRNNTanhSaveable",
                "CudnnRNNReluSaveable",
                "CudnnOpaqueParamsSaveable",
                "cudnn_rnn_opaque_params_to_canonical",
                "cudnn_rnn_canonical_to_opaque_params",
                "cudnn_rnn_opaque_params_size",
            )
        },
    ),
    "contrib.cudnn_rnn.python.layers": _CUDNN_LAYERS,
    "contrib.cudnn_rnn.python.layers.cudnn_rnn": _CUDNN_LAYERS,
    "contrib.util": Module(
        names={
            "constant_value": "tensorflow.get_static_value",
            "make_tensor_proto": "tensorflow.make_tensor_proto",
            "make_ndarray": "tensorflow.make_ndarray",
        }
    ),
    "contrib.cloud": Module(
        gone="the Google Cloud readers (BigQuery, Bigtable, GCS configuration) were removed with contrib; the "
        "tensorflow-io package's readers replace them"
    ),
    "contrib.offline_train": Module(note="the adapter's npu_bridge.estimator (pre-npu_bridge path)"),
    "contrib.offline_train.python": Module(sources=(f"{ADAPTER}.estimator",)),
    "contrib.compiler": Module(),
    "contrib.compiler.xla": Module(
        names={"compile": "tensorflow.compat.v1.xla.experimental.compile"},
        missing={"estimator_model_fn": "removed with contrib"},
    ),
    "contrib.compiler.jit": Module(names={"experimental_jit_scope": "tensorflow.compat.v1.xla.experimental.jit_scope"}),
    "contrib.graph_editor": Module(
        gone="the graph editor was removed with contrib; edit GraphDefs or use tf.compat.v1.graph_util"
    ),
    "contrib.losses": Module(sources=("tf_slim.losses",)),
    "contrib.signal": Module(sources=("tensorflow.signal",)),
    "contrib.crf": Module(gone="contrib.crf was removed; tensorflow-addons' tfa.text has TF2 CRF functions"),
    "contrib.predictor": Module(gone="contrib.predictor was removed; tf.compat.v1.saved_model.load loads models"),
    "contrib.gan": Module(gone="TF-GAN moved to the tensorflow-gan package"),
    "contrib.timeseries": Module(gone="contrib.timeseries was removed"),
    "contrib.tensor_forest": Module(gone="contrib.tensor_forest was removed"),
    "contrib.boosted_trees": Module(gone="contrib.boosted_trees was removed; tf.estimator's boosted trees replaced it"),
    "contrib.factorization": Module(gone="contrib.factorization was removed"),
    "contrib.model_pruning": Module(gone="model pruning moved to tensorflow-model-optimization (Keras only)"),
    "contrib.bigtable": Module(gone="the Cloud Bigtable reader was removed with contrib"),
    # --- tensorflow.python.keras: TF 1.15's Keras internals, on the Keras 2 of tf.keras ---------------------------
    "python.keras": _KERAS,
    "python.keras.layers.recurrent": Module(sources=(f"{KERAS}.src.layers.rnn",)),
    **_KERAS_MOVED,
    # TensorFlow 1.4 to 1.6 kept tf.keras at tensorflow.python.keras._impl.keras
    "python.keras._impl": Module(),
    "python.keras._impl.keras": _KERAS,
    **{f"python.keras._impl.keras{path[len('python.keras') :]}": spec for path, spec in _KERAS_MOVED.items()},
    # --- TF 1.15's private modules that scripts import: moved names, removed modules ---------------------------
    **{path[len("tensorflow.") :]: spec for path, spec in MOVED_TENSORFLOW_MODULES.items()},
    "python.framework.graph_util": _GRAPH_UTIL,
    "python.graph_util": _GRAPH_UTIL,  # TF 1.15's tensorflow.python package imported graph_util as one of its names
    "python.ops.rnn_cell_impl": Module(sources=("tensorflow.python.ops.rnn_cell_impl",), names=_RNN_PRIVATE),
    "python.util.nest": Module(
        sources=("tensorflow.python.util.nest",),
        names={"is_sequence": "tensorflow.python.util.nest.is_nested"},  # TensorFlow 2 renamed it
    ),
    "python.util.tf_export": Module(
        sources=("tensorflow.python.util.tf_export",),
        names={"estimator_export": "tensorflow_estimator.python.estimator.estimator_export.estimator_export"},
    ),
    # TF 1.15's TPU Estimator modules forwarded to the Estimator package, where they still are
    "python.tpu.tpu_config": Module(sources=("tensorflow_estimator.python.estimator.tpu.tpu_config",)),
    "python.tpu.tpu_estimator": Module(sources=("tensorflow_estimator.python.estimator.tpu.tpu_estimator",)),
    "python.eager.profiler": Module(
        sources=("tensorflow.python.eager.profiler", "tensorflow.python.profiler.profiler_v2"),
        note="TensorFlow's eager profiler, or tf.profiler.experimental where this line removed it",
    ),
    "python.framework.ops": Module(
        sources=("tensorflow.python.framework.ops",),
        names={
            "Tensor": "tensorflow.Tensor",
            "register_tensor_conversion_function": "tensorflow.register_tensor_conversion_function",
        },
        note="TensorFlow's ops module, with the names TF 1.15 had there (ops.Tensor, "
        "ops.register_tensor_conversion_function)",
    ),
    "python.data.experimental.ops.threadpool": Module(
        names={
            "PrivateThreadPool": f"{LOCAL}.data.PrivateThreadPool",
            "override_threadpool": f"{LOCAL}.data.override_threadpool",
        },
        note="tf.data.Options().threading (private_threadpool_size, max_intra_op_parallelism)",
    ),
    # --- tensorflow.tools ---------------------------------------------------------------------------------------
    "tools.graph_transforms": Module(gone=GRAPH_TRANSFORMS),
    # --- tensorflow.examples ------------------------------------------------------------------------------------
    "examples": Module(),
    "examples.tutorials": Module(),
    "examples.tutorials.mnist": Module(),
    "examples.tutorials.mnist.input_data": _MNIST,
}
