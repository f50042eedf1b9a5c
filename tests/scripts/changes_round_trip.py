"""Uses every door in one process, then lists and undoes what npu_bridge_compat changed, comparing the process
before and after: every function, class and method of the loaded TensorFlow / Keras / Estimator modules (by
identity), the sys hooks, the environment, logging (loggers' and handlers' filters, handlers), warnings filters,
the exit handlers it registered, the modules its finders serve, the working directory and TensorFlow's switches
(determinism, TF32, v2 behaviour, control flow v2, eager execution, the function-call config, Keras' global
session). Prints one JSON object: what importing the package and its doors changed, the targets in force after the
doors, what still differs after undoing, and the changes registered as irreversible."""

import atexit
import builtins
import importlib.util
import json
import logging
import os
import sys
import time
import types
import warnings

if importlib.util.find_spec("tf_keras"):  # ported programs' Keras 2 (tf_keras from 2.16), as `run` gives them
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python import tf2  # noqa: E402
from tensorflow.python.eager import context  # noqa: E402
from tensorflow.python.framework import config as tf_config  # noqa: E402

# The exit handlers registered from here on, with the file that registered each (atexit lists none itself).
exit_handlers = []
register, unregister = atexit.register, atexit.unregister


def registering(function, *args, **kwargs):
    exit_handlers.append((function, sys._getframe(1).f_code.co_filename))
    return register(function, *args, **kwargs)


def unregistering(function):
    exit_handlers[:] = [(handler, where) for handler, where in exit_handlers if handler != function]
    return unregister(function)


atexit.register, atexit.unregister = registering, unregistering
# tf.estimator: TensorFlow 2.15's own; from 2.16 tensorflow-estimator 2.15 is served when the Estimator door loads
ESTIMATOR_IN_TENSORFLOW = tuple(map(int, tf.__version__.split(".")[:2])) <= (2, 15)
WATCHED = ("tensorflow", "keras", "tf_keras", "tensorflow_estimator")
if ESTIMATOR_IN_TENSORFLOW:
    import tensorflow_estimator  # noqa: F401 - loaded before the first look, as the doors would load it

tf.keras.layers.Layer  # noqa: B018 - Keras loads lazily: loaded before the first look too
keras_backend = sys.modules[tf.compat.v1.keras.backend.get_session.__module__]


def code_of_libraries() -> dict:
    """(module, name) and (module, class, name) -> the object, for every function, class and method of the
    loaded TensorFlow / Keras modules: what a replaced attribute would show."""
    found = {}
    for module_name, module in list(sys.modules.items()):
        namespace = getattr(module, "__dict__", None)
        if module_name.split(".")[0] not in WATCHED or not isinstance(namespace, dict):
            continue
        for name, value in list(namespace.items()):
            if isinstance(value, types.ModuleType):  # a submodule: only one npu_bridge_compat serves is code of ours
                if is_served(value):
                    found[(module_name, name)] = value
                continue
            if not callable(value):
                continue
            found[(module_name, name)] = value
            if isinstance(value, type) and value.__module__ == module_name:
                for member, attribute in list(vars(value).items()):
                    if callable(attribute) or isinstance(attribute, (property, classmethod, staticmethod)):
                        found[(module_name, name, member)] = attribute
    return found


def logging_state() -> dict:
    loggers = [logging.getLogger(), *(item for item in logging.Logger.manager.loggerDict.values())]
    return {
        logger.name: (
            list(logger.filters),
            list(logger.handlers),
            [list(handler.filters) for handler in logger.handlers],
        )
        for logger in loggers
        if isinstance(logger, logging.Logger)
    }


def is_served(module) -> bool:
    """Whether one of npu_bridge_compat's import finders made `module` (the worlds', the aliases')."""
    loader = getattr(getattr(module, "__spec__", None), "loader", None)
    return not module.__name__.startswith("npu_bridge_compat") and type(loader).__module__.startswith(
        "npu_bridge_compat"
    )


def served_modules() -> list[str]:
    return sorted(name for name, module in list(sys.modules.items()) if is_served(module))


def process() -> dict:
    """What the package may change besides the libraries' code."""
    return {
        "sys.meta_path": list(sys.meta_path),
        "sys.path_hooks": list(sys.path_hooks),
        "sys.path": list(sys.path),
        "sys.argv": list(sys.argv),
        "sys.excepthook": sys.excepthook,
        "modules npu_bridge_compat serves": served_modules(),
        "builtins.__import__": builtins.__import__,
        "environment": dict(os.environ),
        "working directory": os.getcwd(),
        "logging": logging_state(),
        "warnings filters": list(warnings.filters),
        "exit handlers": [handler for handler, where in exit_handlers if "npu_bridge_compat" in where],
        "op determinism": tf_config.is_op_determinism_enabled(),
        "TF32": tf.config.experimental.tensor_float_32_execution_enabled(),
        "v2 behaviour": tf2.enabled(),
        "control flow v2": tf.compat.v1.control_flow_v2_enabled(),
        "eager execution": tf.executing_eagerly(),
        "function-call config": context.context().function_call_options.config_proto_serialized,
        "Keras' global session": keras_backend._SESSION.session,
    }


def differences(before: tuple, after: tuple) -> list[str]:
    code_before, process_before = before
    code_after, process_after = after
    changed = [name for name in process_before if process_before[name] != process_after[name]]
    changed += [
        ".".join(key)
        for key, value in code_before.items()
        if key not in code_after or code_after[key] is not value  # replaced, or removed
    ]
    changed += [".".join(key) for key in code_after.keys() - code_before.keys() if key[0] in loaded_before]
    return sorted(changed)


def look() -> tuple:
    return code_of_libraries(), process()


def keras_model():
    model = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(3,)), tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    return model


def data():
    return np.ones((8, 3), np.float32), np.ones((8, 1), np.float32)


tf.random.set_seed(1)  # deterministic=1 below makes random ops need a seed
started = time.perf_counter()
start = look()
seconds_per_look = time.perf_counter() - started
loaded_before = {name for name in sys.modules if name.split(".")[0] in WATCHED}
import npu_bridge_compat  # noqa: E402, F401
import npu_bridge_compat.cli  # noqa: E402
import npu_bridge_compat.keras  # noqa: E402
import npu_bridge_compat.legacy.tf26  # noqa: E402
import npu_bridge_compat.logs  # noqa: E402
import npu_bridge_compat.runner  # noqa: E402
import npu_bridge_compat.session  # noqa: E402
import npu_bridge_compat.tf2.device  # noqa: E402
from npu_bridge_compat import changes, legacy  # noqa: E402

after_import = look()
# The Estimator door: from TensorFlow 2.16 importing it serves tensorflow-estimator 2.15 (listed, undone below).
import npu_bridge_compat.estimator  # noqa: E402, F401

served_by_import = [change.target for change in changes.in_force()]

# run's own pieces: graph-kernel fusion for every plan, library deprecations hidden, TensorFlow's handler deferred
# to the root logger's.
npu_bridge_compat.runner.ask_for_graph_kernel_fusion("auto")
npu_bridge_compat.logs.quiet_library_deprecations()
npu_bridge_compat.logs.defer_tensorflow_handler()

# The session door, through the adapter's import surface (npu_init patches TensorFlow's sessions): mixed precision,
# graph-kernel fusion, determinism, the N-step loop, and a graph built under the program's own horizon.
legacy.install_aliases()
from npu_bridge.npu_init import npu_config_proto, util  # noqa: E402

config = npu_config_proto()
options = config.graph_options.rewrite_options.custom_optimizers[0].parameter_map
options["deterministic"].i = 1
options["precision_mode"].s = b"allow_mix_precision"
options["enable_graph_kernel"].b = True
options["iterations_per_loop"].i = 2
with tf.Graph().as_default():
    features = tf.ones([4, 3, 3, 2])
    with tf.compat.forward_compatibility_horizon(2019, 5, 1):
        normalized = tf.compat.v1.layers.batch_normalization(features, training=True)
    step = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
        tf.reduce_mean(normalized**2), tf.compat.v1.train.get_or_create_global_step()
    )
    with tf.compat.v1.Session(config=config) as session:
        session.run(tf.compat.v1.global_variables_initializer())
        session.run(util.set_iteration_per_loop(session, step, 2))

# The Keras door.
keras_model().fit(*data(), epochs=1, verbose=0, callbacks=[npu_bridge_compat.keras.NPUCallback(iterations_per_loop=2)])

# The Estimator doors: NPUEstimator, and a plain Estimator given an NPURunConfig.
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
tf.estimator.Estimator(model_fn, config=NPURunConfig(model_dir=sys.argv[1] + "-plain")).train(input_fn, max_steps=2)

# The TF2 door: a program's tf.function (dumped, its calls through the fusion decision) and a Keras call under
# as_default().
import npu_device  # noqa: E402

os.makedirs(sys.argv[1] + "-dump")
npu_device.global_options().dump_config.enable_dump = True
npu_device.global_options().dump_config.dump_path = sys.argv[1] + "-dump"
npu_device.global_options().dump_config.dump_step = "0"
npu_device.set_npu_loop_size(1)
npu_device.open().as_default()


@tf.function
def double(x):
    return 2 * x


double(tf.constant(1.0))
keras_model().fit(*data(), epochs=1, verbose=0)

# The TF 2.6 world, then the TF 1.15 world (run --tf1's pieces) and graph-mode Keras on an NPU session.
from npu_bridge_compat.legacy.tf26 import install_tf26_world  # noqa: E402

install_tf26_world()
import keras  # noqa: E402 - the TF 2.6 world answers Keras 2.6's names
import keras.optimizer_v2  # noqa: E402, F401 - a module of TF 2.6's Keras that today's lacks

keras.mixed_precision.experimental.Policy  # noqa: B018 - a name of TF 2.6's that today's module lacks

legacy.install_aliases(tf1=True)
legacy.install_tf1_imports()
from npu_bridge.npu_init import set_keras_session_npu_config  # noqa: E402

set_keras_session_npu_config(config)

npu_bridge_compat.cli.main(["explain", "--changes"])
in_force = [change.target for change in changes.in_force()]
irreversible = [change.target for change in changes.in_force() if change.irreversible]
changes.undo()
print(
    json.dumps(
        {
            "changed_by_import": differences(start, after_import),
            "served_by_importing_the_estimator_door": served_by_import,
            "estimator_in_tensorflow": ESTIMATOR_IN_TENSORFLOW,
            "in_force": in_force,
            "left_after_undo": differences(start, look()),
            "irreversible": irreversible,
            "in_force_after_undo": [change.target for change in changes.in_force()],
            "seconds_per_look": seconds_per_look,
        }
    )
)
