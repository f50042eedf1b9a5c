"""Keras 2 (TensorFlow 2.15's tf.keras, tf_keras) and Keras 3 (tf.keras from TensorFlow 2.16): the trainer
internals the Keras door needs, which the two name differently, and the Keras a ported script gets. Checked on
TensorFlow 2.15 (Keras 2) and 2.21 (Keras 3, tf_keras)."""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import sys
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat.versions import (
    ESTIMATOR_TENSORFLOW,
    _stand_in,
    distribution_version,
    tensorflow_version,
    version_tuple,
)
from npu_bridge_compat.errors import NpuCompatWarning, TensorFlowVersionError, warn

LEGACY_KERAS_ENV = "TF_USE_LEGACY_KERAS"


TF1_KERAS_APIS = ("layers", "nn.rnn_cell")  # the parts of tf.compat.v1 that Keras 2 implements


def tf1_keras_api(path: str) -> Any:
    """`tf.compat.v1.<path>` for the parts of TensorFlow 1's API that Keras 2 implements (`layers`,
    `nn.rnn_cell`): with Keras 3 TensorFlow has none, and they come from the tf_keras package, where TensorFlow
    itself routes them under TF_USE_LEGACY_KERAS."""
    import tensorflow as tf

    if not tf_keras_is_keras_3():
        return functools.reduce(getattr, path.split("."), tf.compat.v1)
    try:
        return importlib.import_module(f"tf_keras.api._v1.keras.__internal__.legacy.{path.split('.')[-1]}")
    except ImportError:
        raise TensorFlowVersionError(
            f"tf.compat.v1.{path} is Keras 2, which TensorFlow {tensorflow_version()} "
            "takes from the tf_keras package: pip install tf-keras."
        ) from None


def v1_layer_class() -> type:
    """`tf.compat.v1.layers.Layer`, the Keras 2 layer that names its variables by variable scope (the adapter's
    layers are such layers); without tf_keras on Keras 3, a stand-in that says what to install when used."""
    try:
        return tf1_keras_api("layers").Layer
    except TensorFlowVersionError as error:
        reason = str(error)  # Python unbinds `error` when the except clause ends; the lambda runs later
        return _stand_in("Layer", lambda what: f"{what}: {reason}")


def select_keras_2() -> None:
    """Make `tf.keras` Keras 2 for a ported script: the adapter's scripts are written for TensorFlow 1.15 or
    2.x up to 2.15, whose Keras is Keras 2 (and graph-mode Keras, which TF1 scripts use, exists only there).
    Call it before TensorFlow is imported. A TF_USE_LEGACY_KERAS the user set is left as it is; TensorFlow 2.15
    needs nothing; on later lines without the tf_keras package, a warning says what to install."""
    if LEGACY_KERAS_ENV in os.environ or _installed_tensorflow() is None:
        return
    if version_tuple(_installed_tensorflow()) <= version_tuple(ESTIMATOR_TENSORFLOW):
        return
    if importlib.util.find_spec("tf_keras") is None:
        warn(
            f"TensorFlow {_installed_tensorflow()} makes tf.keras Keras 3, and the tf_keras package (Keras 2, "
            "which scripts ported from TensorFlow 1.15 to 2.15 are written for) is not installed: pip install "
            f'"tf-keras~={".".join(map(str, version_tuple(_installed_tensorflow())))}".',
            NpuCompatWarning,
        )
        return
    if "tensorflow" in sys.modules:
        return  # too late to choose: tf.keras is whatever the process has loaded
    changes.set_environment(
        LEGACY_KERAS_ENV,
        "1",
        owner=Owner.KERAS_2,
        reason="tf.keras is Keras 2 (tf_keras), which ported scripts are written for; read when TensorFlow is imported",
    )


# The distributions that install the `tensorflow` package, most common first: asked by name before the scan of
# every installed distribution's files (packages_distributions), which takes a tenth of a second.
TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-intel", "tensorflow-gpu", "tensorflow-macos")


@functools.cache
def _installed_tensorflow() -> str | None:
    """The installed TensorFlow's version, read without importing it (TF_USE_LEGACY_KERAS is read at import)."""
    if importlib.util.find_spec("tensorflow") is None:
        return None
    versions = map(distribution_version, _tensorflow_distributions())
    return next((version for version in versions if version is not None), None)


def _tensorflow_distributions() -> Iterator[str]:
    yield from TENSORFLOW_DISTRIBUTIONS
    yield from importlib.metadata.packages_distributions().get("tensorflow", [])  # any other: the slow scan


def is_keras_3(model) -> bool:
    """Whether `model` is a Keras 3 model (`tf.keras` from TensorFlow 2.16, or `import keras` there)."""
    return _is_keras_3_class(type(model))


def tf_keras_is_keras_3() -> bool:
    """Whether `tf.keras` is Keras 3 (TensorFlow 2.16 and later, unless TF_USE_LEGACY_KERAS selected tf_keras)."""
    import tensorflow as tf

    return _is_keras_3_class(tf.keras.Model)


def _is_keras_3_class(model_class: type) -> bool:
    keras = sys.modules.get("keras")  # no Keras 3 model exists unless Keras 3 is loaded
    return (
        keras is not None
        and version_tuple(getattr(keras, "__version__", "0"))[0] >= 3
        and issubclass(model_class, keras.Model)
    )


def keras_step_number(model, mode: str):
    """The number of `mode`'s ("train", "test", "predict") steps done in the current call, as a tensor read in the
    traced step: Keras 2 counts them (`_train_counter` ...); Keras 3 keeps no such count, so None (the caller
    counts)."""
    counter = None if is_keras_3(model) else getattr(model, f"_{mode}_counter", None)
    return counter.read_value() if counter is not None else None


def remake_keras_function(model, mode: str):
    """The model's `mode` function made anew, so that it traces (on first call) the step methods the model has
    now. Keras 3 binds the step method when it makes the function; Keras 2 looks it up when it traces. It is made
    with a weak proxy of the model as `self`, so that the function refers to the model only weakly: the package
    keeps it beside the model, and the model is still freed with its last reference. Keras 3.4 and later make the
    train and test functions in `_make_function`, which `make_*_function` calls on the model itself: it is called
    on the proxy here. Checked on Keras 2.15 and Keras 3."""
    proxy = weakref.proxy(model)
    make_function = getattr(type(model), "_make_function", None)
    if make_function is not None and mode in ("train", "test"):
        return make_function(proxy, getattr(model, f"{mode}_step"))
    getattr(type(model), f"make_{mode}_function")(proxy, force=True)
    return getattr(model, f"{mode}_function")


def keras_steps_per_execution(model) -> int:
    """The steps per train-function call the model was compiled with."""
    if is_keras_3(model):
        return int(model.steps_per_execution)
    variable = model._steps_per_execution  # Keras 2: a variable its functions read on every call
    return 1 if variable is None else int(variable.value())  # half the time of .numpy(), read once per call


@contextlib.contextmanager
def steps_per_execution_in_fit(model, steps: int) -> Iterator[None]:
    """Run `steps` steps per train-function call in the `fit` that is starting (entered from a callback's
    `on_train_begin`), then restore the model's own number. Keras 2 reads a variable on every call. Keras 3 reads
    a number when it makes the train function and when `fit` makes its epoch iterator, before any callback runs:
    the epoch iterator of the running `fit` is told as well (it reads its number when each epoch starts)."""
    chosen = keras_steps_per_execution(model)
    if not is_keras_3(model):
        model._steps_per_execution.assign(steps)
        try:
            yield
        finally:
            model._steps_per_execution.assign(chosen)
        return
    made = []
    if chosen != steps:
        iterator = _running_fit_epoch_iterator(model)
        if iterator is None:
            raise TensorFlowVersionError(
                f"cannot run {steps} steps per train-function call in this Keras {sys.modules['keras'].__version__} "
                f"fit: compile the model with steps_per_execution={steps} instead."
            )
        made.append(_steps_per_call(iterator, steps, "<the running fit's epoch iterator>"))
    made.append(_steps_per_call(model, steps, f"<Keras model {model.name}>"))
    try:
        yield
    finally:
        changes.undo(changes=made)


def _steps_per_call(target, steps: int, label: str):
    return changes.replace_attribute(
        target,
        "steps_per_execution",
        steps,
        owner=Owner.KERAS_CALL,
        reason="iterations_per_loop: N steps per train-function call, for this fit",
        label=label,
    )


def _running_fit_epoch_iterator(model):
    """The epoch iterator of the Keras 3 `fit` of `model` that is calling back: the innermost frame of a `fit` on
    the model that holds one (Keras keeps it nowhere else)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "fit" and frame.f_locals.get("self") is model:
            iterator = frame.f_locals.get("epoch_iterator")
            if hasattr(iterator, "steps_per_execution"):
                return iterator
        frame = frame.f_back
    return None


def repair_tf1_layers_normalization() -> None:
    """TensorFlow loads tensorflow.python.layers.normalization (tf_slim's and contrib's batch_norm) from
    `tf_keras.legacy_tf_layers`, a path no tf_keras release has; point it at the TF1 layers module of the Keras 2
    at hand (Keras 2.15's own, or tf_keras's), which holds the same BatchNormalization and batch_normalization.
    Checked on TensorFlow 2.15 and 2.21."""
    from tensorflow.python.layers import normalization as tf_layers_normalization

    changes.replace_attribute(
        tf_layers_normalization,
        "normalization",
        tf1_keras_api("layers"),
        owner=Owner.TF1_WORLD,
        reason="TensorFlow loads it from a tf_keras path no release has; tf_slim's and contrib's batch_norm use it",
    )


# model class -> the maker of the callback its calls get
ADDED_CALLBACKS = changes.ProcessState("the callbacks every Keras call of a model class gets", Owner.TF2_DOOR, dict)


def add_callback_to_model_calls(model_class: type, callback_for: Callable[[Any], Any], owner: Owner) -> None:
    """From now on every `fit`, `evaluate` and `predict` of `model_class` runs with `callback_for(model)` added to
    the call's callbacks (when it returns one), unless the call already carries a callback of that type. Keras has
    no process-wide callback list, so the methods are wrapped (once per class, through the changes registry);
    the adapter's `as_default()` patches Keras too.
    Checked on Keras 2.15 and Keras 3 (TensorFlow 2.21)."""
    changes.state(ADDED_CALLBACKS)[model_class] = callback_for
    for method in ("fit", "evaluate", "predict"):
        if not changes.is_replaced(model_class, method):
            changes.replace_attribute(
                model_class,
                method,
                _with_added_callback(model_class, getattr(model_class, method)),
                owner=owner,
                reason="every Keras call runs with the door's callback (Keras has no process-wide callback list)",
            )


def _with_added_callback(model_class: type, original: Callable) -> Callable:
    signature = inspect.signature(original)

    @functools.wraps(original)
    def call(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        given = bound.arguments.get("callbacks") or []
        callbacks = list(given) if isinstance(given, Iterable) else [given]  # Keras takes one callback, or several
        added = changes.state(ADDED_CALLBACKS)[model_class](self)
        if added is not None and not any(isinstance(callback, type(added)) for callback in callbacks):
            callbacks.append(added)
            bound.arguments["callbacks"] = callbacks
        return original(*bound.args, **bound.kwargs)

    return call


def keras_2_loss_scale_optimizer_classes() -> tuple[type, type]:
    """Keras 2's two LossScaleOptimizer classes, for its legacy optimizers (OptimizerV2) and for the optimizers
    TensorFlow 2.11 made the default; its public LossScaleOptimizer picks one by the inner optimizer when called
    (and so cannot be subclassed for both). Checked on Keras 2.15 and tf_keras 2.21."""
    import tensorflow as tf

    module = sys.modules[tf.keras.mixed_precision.LossScaleOptimizer.__module__]
    return module.LossScaleOptimizer, module.LossScaleOptimizerV3


def loss_scale_optimizer_class(inner_optimizer) -> type:
    """The Keras class that scales the loss of `inner_optimizer`: Keras 3's LossScaleOptimizer; in Keras 2, the one
    of `keras_2_loss_scale_optimizer_classes()` for the optimizer's generation. Checked on Keras 2.15 and Keras 3
    (TensorFlow 2.21)."""
    import tensorflow as tf

    if tf_keras_is_keras_3():
        return tf.keras.mixed_precision.LossScaleOptimizer
    legacy, current = keras_2_loss_scale_optimizer_classes()
    return legacy if isinstance(inner_optimizer, tf.keras.optimizers.legacy.Optimizer) else current


def is_keras_symbolic(value) -> bool:
    """Whether `value` is a symbolic input or output of a Keras functional model under construction (Keras 2's
    and Keras 3's KerasTensor, which take Keras layers rather than arbitrary TensorFlow ops). Checked on Keras
    2.15 and Keras 3 (TensorFlow 2.21)."""
    return any(cls.__name__ == "KerasTensor" for cls in type(value).__mro__)


def callback_reads_no_logs(callback) -> None:
    """Tell Keras that `callback` reads no logs, so that Keras need not convert them to numpy for it (the flag
    Keras' own callbacks set, `_supports_tf_logs`). Checked on Keras 2.15 and Keras 3 (TensorFlow 2.21)."""
    callback._supports_tf_logs = True
