"""Trains briefly through each door in one process, then lists and undoes what npu_bridge_compat changed, comparing
the process before and after. Prints one JSON object: what changed at import, the targets in force after the
doors, and what still differs after undoing."""

import builtins
import json
import os
import sys

import numpy as np
import tensorflow as tf


def watched() -> dict:
    """What the package may change: the attributes it replaces, the import system, sys hooks, the environment."""
    from tensorflow.python.client import session as tf_session
    from tensorflow.python.compat import compat as tf_compat
    from tensorflow.python.layers import normalization as tf_layers_normalization
    from tensorflow.python.ops import gen_nn_ops

    import_hook = builtins.__import__
    places = {
        "tf.function": tf.function,
        "tf.compat.v1.Session": tf.compat.v1.Session,
        "tf.compat.v1.contrib": getattr(tf.compat.v1, "contrib", None),
        "Session.__init__": tf_session.Session.__dict__.get("__init__"),
        "InteractiveSession.__init__": tf_session.InteractiveSession.__dict__.get("__init__"),
        "forward compatibility update": tf_compat._update_forward_compatibility_date_number,
        "fused_batch_norm_v3": gen_nn_ops.fused_batch_norm_v3,
        "layers.normalization": getattr(tf_layers_normalization, "normalization", None),
        "Model.fit": tf.keras.Model.__dict__.get("fit"),
        "Model.evaluate": tf.keras.Model.__dict__.get("evaluate"),
        "Model.predict": tf.keras.Model.__dict__.get("predict"),
        "sys.meta_path": list(sys.meta_path),
        "builtins.__import__": import_hook,
        "sys.excepthook": sys.excepthook,
        "environment": dict(os.environ),
        "TF2 behaviour": tf.compat.v1.executing_eagerly_outside_functions(),
    }
    if not SERVES_ESTIMATOR:  # TensorFlow 2.15: tf.estimator's own classes
        import tensorflow_estimator

        places["Estimator.__init__"] = tensorflow_estimator.estimator.Estimator.__dict__.get("__init__")
    else:  # TensorFlow 2.16 and later: what serving tensorflow-estimator 2.15 changes
        from tensorflow.python.distribute import __dict__ as distribute_names
        from tensorflow.python.tpu import __dict__ as tpu_names
        from tensorflow.python.util import tf_export

        places["tf.estimator"] = [api.__dict__.get("estimator") for api in (tf, tf.compat.v1, tf.compat.v2)]
        places["tf_export"] = [tf_export.__dict__.get(name) for name in ("ESTIMATOR_API_NAME", "API_ATTRS")]
        places["TensorFlow 2.15's modules"] = sorted(
            name
            for name in sys.modules
            if name.startswith(("tensorflow.estimator", "tensorflow.python.estimator", "tensorflow.compat.v"))
            and name.endswith("estimator")
            or name in ("tensorflow.python.distribute.estimator_training", "tensorflow.python.tpu.session_support")
        )
        places["their names"] = [distribute_names.get("estimator_training"), tpu_names.get("session_support")]
    return places


def differences(before: dict, after: dict) -> list[str]:
    return sorted(name for name in before if before[name] != after[name])


def keras_model():
    model = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(3,)), tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    return model


def data():
    return np.ones((8, 3), np.float32), np.ones((8, 1), np.float32)


SERVES_ESTIMATOR = tuple(map(int, tf.__version__.split(".")[:2])) > (2, 15)  # tensorflow-estimator 2.15, served
tf.random.set_seed(1)  # deterministic=1 below makes random ops need a seed
start = watched()
import npu_bridge_compat  # noqa: E402, F401
from npu_bridge_compat import changes, legacy  # noqa: E402
from npu_bridge_compat.cli import main  # noqa: E402

after_import = watched()

# The session door, through the adapter's import surface (npu_init patches TensorFlow's sessions).
legacy.install_aliases()
from npu_bridge.npu_init import npu_config_proto  # noqa: E402

config = npu_config_proto()
config.graph_options.rewrite_options.custom_optimizers[0].parameter_map["deterministic"].i = 1
with tf.Graph().as_default():
    weight = tf.Variable(1.0)
    step = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(weight * weight)
    with tf.compat.v1.Session(config=config) as session:
        session.run(tf.compat.v1.global_variables_initializer())
        session.run(step)

# The Keras door.
from npu_bridge_compat.keras import NPUCallback  # noqa: E402

keras_model().fit(*data(), epochs=1, verbose=0, callbacks=[NPUCallback(iterations_per_loop=2)])

# The Estimator door (on TensorFlow 2.16 and later, tensorflow-estimator 2.15 served), then a plain Estimator
# imported from TensorFlow 2.15's module path, as ported programs do.
from npu_bridge_compat.compat import tf1_keras_api  # noqa: E402
from npu_bridge_compat.estimator import NPUEstimator, NPURunConfig  # noqa: E402


def model_fn(features, labels, mode):
    loss = tf.reduce_mean(tf1_keras_api("layers").dense(features, 1) - labels) ** 2
    train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, tf.compat.v1.train.get_or_create_global_step()
    )
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train)


def input_fn():
    return tf.data.Dataset.from_tensor_slices(data()).repeat().batch(4)


run_config = NPURunConfig(model_dir=sys.argv[1], iterations_per_loop=2, save_checkpoints_steps=4)
NPUEstimator(model_fn, config=run_config).train(input_fn, max_steps=4)
from tensorflow.python.estimator.estimator import Estimator as Tf215Estimator  # noqa: E402

Tf215Estimator(model_fn, config=NPURunConfig(model_dir=sys.argv[1] + "-plain"))

# The TF2 door: a program's tf.function and a Keras call under as_default().
import npu_device  # noqa: E402

os.makedirs(sys.argv[1] + "-dump")

npu_device.global_options().dump_config.enable_dump = True
npu_device.global_options().dump_config.dump_path = sys.argv[1] + "-dump"
npu_device.global_options().dump_config.dump_step = "0"
npu_device.open().as_default()


@tf.function
def double(x):
    return 2 * x


double(tf.constant(1.0))
keras_model().fit(*data(), epochs=1, verbose=0)

# The TF 1.15 world (run --tf1's pieces).
legacy.install_aliases(tf1=True)
legacy.install_tf1_imports()

main(["explain", "--changes"])
in_force = [change.target for change in changes.in_force()]
changes.undo()
print(
    json.dumps(
        {
            "changed_by_import": differences(start, after_import),
            "in_force": in_force,
            "left_after_undo": differences(start, watched()),
            "in_force_after_undo": len(changes.in_force()),
        }
    )
)
