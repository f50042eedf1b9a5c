"""Imports, as a ported program does, the names ModelZoo's model folders import that TensorFlow 2 moved or removed,
and prints one JSON line saying what each became: `tf1` (run --tf1: TF 1.15's own paths, tensorflow.contrib, the
standalone Keras 2.2 package) or `tf2` (run --tf2, as `run` runs TF2 programs: TF 2.6's paths)."""

import importlib.metadata
import importlib.util
import json
import sys
import types

import tensorflow as tf

from npu_bridge_compat.imports.world import NoCounterpartError

report = {}


def value_error(use) -> str:
    """The message of the ValueError `use()` raises ('' when it raises none)."""
    try:
        use()
    except ValueError as error:
        return str(error)
    return ""


def no_counterpart(use) -> str:
    """The message of the NoCounterpartError `use()` raises ('' when it raises none)."""
    try:
        use()
    except NoCounterpartError as error:
        return str(error)
    return ""


def keras_2_version() -> str:
    package = "tf-keras" if importlib.util.find_spec("tf_keras") else "keras"
    return importlib.metadata.version(package)


if sys.argv[1] == "tf1":
    import keras
    import keras.backend.tensorflow_backend
    import tensorflow.contrib.eager as tfe
    import tensorflow.layers
    from keras.backend.tensorflow_backend import set_session
    from keras.engine import Input, Model
    from keras.engine.topology import InputSpec, Layer, get_source_inputs
    from keras.layers import Deconvolution3D, Merge, merge
    from keras.layers.normalization import BatchNormalization
    from keras.optimizers import adam_v2
    from keras.utils import np_utils
    from keras.utils.data_utils import get_file
    from keras.utils.generic_utils import CustomObjectScope, get_custom_objects
    from keras.utils.layer_utils import layer_from_config, print_summary
    from keras.utils.vis_utils import plot_model
    from tensorflow.contrib.framework.python.framework import tensor_util
    from tensorflow.contrib.slim.utils import convert_collection_to_dict
    from tensorflow.python import graph_util
    from tensorflow.python.distribute import distribution_strategy_context
    from tensorflow.python.framework.graph_util import convert_variables_to_constants
    from tensorflow.python.keras._impl.keras import backend as impl_backend
    from tensorflow.python.keras._impl.keras.layers import Dense as ImplDense
    from tensorflow.python.keras._impl.keras.models import Model as ImplModel
    from tensorflow.python.keras.layers.advanced_activations import LeakyReLU
    from tensorflow.python.keras.layers.merge import Add
    from tensorflow.python.keras.layers.normalization import BatchNormalization as KerasBatchNormalization
    from tensorflow.python.keras.optimizer_v2 import gradient_descent
    from tensorflow.python.keras.testing_utils import layer_test
    from tensorflow.python.keras.utils import multi_gpu_model
    from tensorflow.python.ops.rnn_cell_impl import _like_rnncell, _Linear
    from tensorflow.python.training import distribution_strategy_context as training_strategy_context
    from tensorflow.python.training.tracking import base, tracking
    from tensorflow.python.util import nest
    from tensorflow.python.util.tf_export import estimator_export
    from tensorflow.tools.graph_transforms import TransformGraph

    from npu_bridge_compat.legacy.tf1.contrib.rnn import Linear

    keras_layers = tf.keras.layers
    report["standalone_keras"] = {
        "topology": [Layer is keras_layers.Layer, InputSpec is keras_layers.InputSpec],
        "get_source_inputs": get_source_inputs is tf.keras.utils.get_source_inputs,
        "engine": [Input is tf.keras.Input, Model is tf.keras.Model],
        "set_session": [
            set_session is tf.keras.backend.set_session,
            keras.backend.tensorflow_backend.set_session is tf.keras.backend.set_session,
        ],
        "batch_normalization": BatchNormalization is keras_layers.BatchNormalization,
        "deconvolution3d": Deconvolution3D is keras_layers.Conv3DTranspose,
        "to_categorical": np_utils.to_categorical([0, 2], 3).tolist(),
        "custom_objects": [
            CustomObjectScope is tf.keras.utils.CustomObjectScope,
            isinstance(get_custom_objects(), dict),
        ],
        "layer_from_config": layer_from_config({"class_name": "Dense", "config": {"units": 3}}).units,
        "utils": [print_summary.__name__, plot_model is tf.keras.utils.plot_model, get_file is tf.keras.utils.get_file],
        "adam_v2": adam_v2.Adam.__module__,
        "version": [keras.__version__, keras_2_version()],
        "merge": [
            no_counterpart(lambda: merge([1, 2], mode="sum")),
            no_counterpart(lambda: types.new_class("M", (Merge,))),  # subclassing it is using it
        ],
    }
    with tf.Graph().as_default():
        same = tensor_util.with_same_shape(tf.zeros([2, 3]), tf.ones([2, 3]))
        try:
            tensor_util.with_same_shape(tf.zeros([2, 3]), tf.ones([3, 2]))
            mismatch = ""
        except ValueError as error:
            mismatch = str(error)
    report["tf1"] = {
        "graph_util": [
            convert_variables_to_constants is tf.graph_util.convert_variables_to_constants,
            graph_util.convert_variables_to_constants is tf.graph_util.convert_variables_to_constants,
        ],
        "strategy_context": [
            distribution_strategy_context.get_strategy is tf.distribute.get_strategy,
            training_strategy_context.get_strategy is tf.distribute.get_strategy,
        ],
        "impl_keras": [
            ImplDense is keras_layers.Dense,
            ImplModel is tf.keras.Model,
            impl_backend.set_session is tf.keras.backend.set_session,
        ],
        "keras_modules": [
            LeakyReLU is keras_layers.LeakyReLU,
            Add is keras_layers.Add,
            KerasBatchNormalization is keras_layers.BatchNormalization,
            gradient_descent.SGD.__module__,
            callable(layer_test),
        ],
        "multi_gpu_model": [
            value_error(lambda: multi_gpu_model(None, gpus=1)),
            value_error(lambda: multi_gpu_model(None, gpus=64)),
        ],
        "linear": _Linear is Linear,
        "is_sequence": [nest.is_sequence((1, 2)), nest.is_sequence(1), nest.flatten([[1], 2])],
        "like_rnncell": [_like_rnncell(tf.nn.rnn_cell.GRUCell(3)), _like_rnncell(lambda inputs: inputs)],
        "tracking": [base.Trackable.__module__, tracking.AutoTrackable.__module__],
        "estimator_export": callable(estimator_export("estimator.Fake")),
        "graph_transforms": no_counterpart(lambda: TransformGraph(None, [], [], [])),
        "tensor_util": [same.shape.as_list(), mismatch],
        "convert_collection_to_dict": convert_collection_to_dict.__module__,
        "eager": [tfe.in_eager_mode(), tfe.Iterator.__name__],
        "layers_module": tensorflow.layers.dense is tf.layers.dense,
    }
else:
    from tensorflow.python.keras.preprocessing import dataset_utils
    from tensorflow.python.keras.utils.generic_utils import deserialize_keras_object, serialize_keras_object
    from tensorflow.tools.graph_transforms import TransformGraph

    dense = tf.keras.layers.Dense(2, name="dense_kept")
    rebuilt = deserialize_keras_object(serialize_keras_object(dense), module_objects={"Dense": tf.keras.layers.Dense})
    report["tf2"] = {
        "serialization": [type(rebuilt).__name__, rebuilt.units, rebuilt.name],
        "dataset_utils": [dataset_utils.__name__, callable(dataset_utils.index_directory)],
        "graph_transforms": no_counterpart(lambda: TransformGraph(None, [], [], [])),
    }
print(json.dumps(report))
