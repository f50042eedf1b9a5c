"""tensorflow-estimator 2.15 on TensorFlow 2.16 and later: what the package needs of TensorFlow's internals. Checked
on TensorFlow 2.21 with tensorflow-estimator 2.15.0 (Python 3.11, 3.12 and 3.13).

The package is pure Python. On TensorFlow 2.21 it stops importing at:
- `tensorflow.python.distribute.estimator_training`, the Estimator's distribute-coordinator steps: `served_module`
  makes a module whose `init_run_config` sets a RunConfig with a distribution strategy up as TensorFlow 2.15 did
  for local training and clusters with a master; the distribute coordinator (a strategy over a TF_CONFIG cluster
  of workers) is refused when the RunConfig is built;
- `tf_export.ESTIMATOR_API_NAME` and the estimator API's entries in `tf_export.API_ATTRS` / `API_ATTRS_V1`, which
  its `estimator_export` decorator writes the exported names under (`register_estimator_api`);
- `tensorflow.python.tpu`'s `session_support`, `tpu_embedding` (the embedding optimizers' parameter classes) and
  `tpu_embedding_gradient`, which only TPUEstimator's TPU path (use_tpu=True) and TPU embeddings reach: served as
  modules whose names raise TensorFlowVersionError naming the feature when used.
TensorFlow 2.16 also dropped `tf.estimator`, `tf.compat.v1.estimator`, `tf.compat.v2.estimator` and the
`tensorflow.python.estimator` modules that forwarded to the package (ALIASES). The world that serves all of these
paths, and the package's loading, are npu_bridge_compat/estimator_library.py's; this module holds the module paths
and the pieces that reach TensorFlow's and the package's internals. The package's Keras paths (model_to_estimator,
Keras metrics in eval_metric_ops) meet Keras 2 (tf_keras, `meet_keras_2`), also in a process whose tf.keras is
Keras 3: that is the Keras an Estimator's graph-mode models are built with.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import types
from typing import Any

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat.keras import LEGACY_KERAS_ENV
from npu_bridge_compat.compat.versions import (
    ESTIMATOR_TENSORFLOW,
    distribution_version,
    tensorflow_version,
    version_tuple,
)
from npu_bridge_compat.errors import TensorFlowVersionError

OWNER = Owner.ESTIMATOR_LIBRARY
PACKAGE = "tensorflow-estimator"
PACKAGE_VERSION = ESTIMATOR_TENSORFLOW  # the release served (2.15.x); others are refused, unchecked
API_MODULES = {  # the package's generated API modules, by the TensorFlow API they fill
    "v1": "tensorflow_estimator.python.estimator.api._v1.estimator",
    "v2": "tensorflow_estimator.python.estimator.api._v2.estimator",
}
# Module paths that TensorFlow 2.15 had and later lines lack, as the package's modules they forwarded to.
ALIASES = {
    "tensorflow.estimator": API_MODULES["v2"],
    "tensorflow.compat.v2.estimator": API_MODULES["v2"],
    "tensorflow.compat.v1.estimator": API_MODULES["v1"],
    "tensorflow.python.estimator": "tensorflow_estimator.python.estimator",
}
DISTRIBUTE_COORDINATOR = "tensorflow.python.distribute.estimator_training"
TPU_ONLY = {  # TensorFlow 2.15's TPU modules the package imports, and what uses them
    "tensorflow.python.tpu.session_support": "TPUEstimator with use_tpu=True (TPU worker watchdog and shutdown)",
    "tensorflow.python.tpu.tpu_embedding": "TPU embeddings (TPUEstimator's embedding_config_spec)",
    "tensorflow.python.tpu.tpu_embedding_gradient": "TPU embeddings (TPUEstimator's embedding_config_spec)",
}
# The package's modules whose Keras paths must meet Keras 2: model_to_estimator, and eval_metric_ops' Keras metrics.
KERAS_2_MODULES = ("tensorflow_estimator.python.estimator.keras_lib", "tensorflow_estimator.python.estimator.model_fn")
PACKAGE_MODULE = "tensorflow_estimator"
SERVED = (DISTRIBUTE_COORDINATOR, *TPU_ONLY)  # the modules TensorFlow lacks that `served_module` makes
API_PARENTS = {"tensorflow.compat.v1": "v1", "tensorflow.compat.v2": "v2"}  # the API modules that hold an estimator


def library_is_served() -> bool:
    """Whether this TensorFlow lacks tf.estimator (2.16 and later), so that this module serves the package."""
    return version_tuple(tensorflow_version()) > version_tuple(ESTIMATOR_TENSORFLOW)


def package_version() -> str | None:
    """The installed tensorflow-estimator's version, read without importing it; None when it is not installed."""
    return distribution_version(PACKAGE)


def package_is_usable() -> bool:
    """Whether the installed tensorflow-estimator is the release this module serves on the newest TensorFlow."""
    version = package_version()
    return version is not None and version_tuple(version) == version_tuple(PACKAGE_VERSION)


# --- the modules served ----------------------------------------------------------------------------------------


def _coordinator_refused(what: str) -> TensorFlowVersionError:
    return TensorFlowVersionError(
        f"{what} runs the Estimator through TensorFlow's distribute coordinator (a distribution strategy over a "
        f"TF_CONFIG cluster of workers), which npu_bridge_compat does not serve on TensorFlow {tensorflow_version()}"
        ": train each rank with python -m npu_bridge_compat launch (ranks as on Ascend), or use TensorFlow "
        f"{ESTIMATOR_TENSORFLOW}."
    )


def _init_run_config(config, tf_config: dict) -> None:
    """RunConfig(train_distribute=..., eval_distribute=..., experimental_distribute=...) as TensorFlow 2.15 set
    it up: the strategies taken from `experimental_distribute` where given there, then the cluster read from
    TF_CONFIG as for any RunConfig. Training on this machine, or in a cluster with a master, needs no
    coordinator; the coordinator's modes are refused here, when the RunConfig is built."""
    import tensorflow as tf

    experimental = config._experimental_distribute
    for name in ("train_distribute", "eval_distribute"):
        given = getattr(experimental, name, None) if experimental is not None else None
        if given:
            if getattr(config, f"_{name}"):
                raise ValueError(f"Either `{name}` or `experimental_distribute.{name}` can be set.")
            setattr(config, f"_{name}", given)
    cluster = tf.train.ClusterSpec(tf_config.get("cluster", {}))
    remote = getattr(experimental, "remote_cluster", None) if experimental is not None else None
    if config._train_distribute and (remote or (cluster.jobs and "master" not in cluster.jobs)):
        raise _coordinator_refused(
            "RunConfig(experimental_distribute=DistributeConfig(remote_cluster=...))"
            if remote
            else "RunConfig(train_distribute=...) with a TF_CONFIG cluster of workers"
        )
    config._distribute_coordinator_mode = None
    config._init_distributed_setting_from_environment_var(tf_config)
    config._maybe_overwrite_session_config_for_distributed_training()


def _should_run_distribute_coordinator(config) -> bool:
    """Never: `_init_run_config` refuses the coordinator's modes."""
    return False


def _coordinator_only(*args, **kwargs):
    raise _coordinator_refused("This Estimator call")


def _estimator_training_module() -> types.ModuleType:
    module = types.ModuleType(DISTRIBUTE_COORDINATOR, __doc__)
    module.init_run_config = _init_run_config
    module.should_run_distribute_coordinator = _should_run_distribute_coordinator
    module.train_and_evaluate = module.estimator_train = module.estimator_evaluate = _coordinator_only
    return module


class _TpuOnlyModule(types.ModuleType):
    """One of TensorFlow 2.15's TPU modules: importable, every name raises TensorFlowVersionError when used."""

    def __init__(self, name: str, feature: str) -> None:
        super().__init__(name, f"TensorFlow 2.15's {name}, for {feature}: not on TensorFlow {tensorflow_version()}.")
        self._feature = feature

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = _tpu_only(f"{self.__name__}.{name}", self._feature)
        setattr(self, name, value)  # one class per name, as a module has
        return value


def _tpu_only(qualified: str, feature: str) -> type:
    """A class that importing and subclassing accept and whose construction raises, naming the feature."""

    def __new__(cls, *args, **kwargs):
        raise TensorFlowVersionError(
            f"{feature} needs {qualified}, which TensorFlow removed in 2.16; this is TensorFlow "
            f"{tensorflow_version()}. On a host, TPUEstimator runs with use_tpu=False (as run --tf1's "
            f"tf.contrib.tpu.TPUEstimator does) and without TPU embeddings; or use TensorFlow {ESTIMATOR_TENSORFLOW}."
        )

    return type(qualified.rpartition(".")[2], (), {"__new__": __new__, "__module__": qualified.rpartition(".")[0]})


def served_module(name: str) -> types.ModuleType:
    """The module of SERVED called `name`, as this TensorFlow lacks it."""
    if name == DISTRIBUTE_COORDINATOR:
        return _estimator_training_module()
    return _TpuOnlyModule(name, TPU_ONLY[name])


# --- the package ---------------------------------------------------------------------------------------------


def register_estimator_api() -> None:
    """Give TensorFlow's `tf_export` the estimator API's name and attributes, which the package's
    `estimator_export` writes its exported names under (TensorFlow 2.15 had them; later lines do not)."""
    from tensorflow.python.util import tf_export

    reason = "tensorflow-estimator 2.15 exports its names under TensorFlow's estimator API"
    changes.replace_attribute(tf_export, "ESTIMATOR_API_NAME", "estimator", owner=OWNER, reason=reason)
    for table, suffix in (("API_ATTRS", ""), ("API_ATTRS_V1", "_v1")):
        changes.replace_attribute(tf_export, table, _with_estimator(table, suffix), owner=OWNER, reason=reason)


@functools.cache
def _with_estimator(table: str, suffix: str) -> dict:
    """TensorFlow's table `table` with the estimator API's attributes (one copy, so that asking again is a no-op)."""
    from tensorflow.python.util import tf_export

    attributes = tf_export._Attributes(f"_estimator_api_names{suffix}", f"_estimator_api_constants{suffix}")
    return {**changes.original(tf_export, table), "estimator": attributes}


def tensorflow_constructors() -> dict[tuple[type, str], Any]:
    """(class, `__init__` / `__new__`) -> what the class itself holds (`changes.NOTHING`: nothing), for the classes
    of TensorFlow's loaded modules."""
    found = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("tensorflow.") or not isinstance(module, types.ModuleType):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == name:
                for method in ("__init__", "__new__"):
                    found[(value, method)] = value.__dict__.get(method, changes.NOTHING)
    return found


def meet_keras_2() -> None:
    """The package reaches Keras through `tf.keras`; unless TF_USE_LEGACY_KERAS made that tf_keras, its Keras paths
    get Keras 2's API."""
    import tensorflow as tf

    if os.environ.get(LEGACY_KERAS_ENV) in ("true", "True", "1"):  # TensorFlow's own test of the variable
        return
    for name in KERAS_2_MODULES:
        module = importlib.import_module(name)
        if changes.is_replaced(module, "tf"):
            continue
        changes.replace_attribute(
            module,
            "tf",
            _TensorFlowWithKeras2(tf),
            owner=OWNER,
            reason="the Estimator's Keras paths (model_to_estimator, Keras metrics) meet Keras 2, i.e. tf_keras",
        )


class _TensorFlowWithKeras2:
    """`tensorflow` as the package's modules use it, with `keras`, `compat.v1.keras` and `compat.v2.keras` Keras
    2's (tf_keras): the same modules where TF_USE_LEGACY_KERAS made tf.keras tf_keras, Keras 2 where it is Keras 3."""

    def __init__(self, base: Any, keras: str = "tf_keras.api._v2.keras") -> None:
        self._base, self._keras = base, keras

    def __getattr__(self, name: str) -> Any:
        if name == "keras":
            return importlib.import_module(self._keras)
        if name == "compat" and self._keras.endswith("_v2.keras"):
            return _CompatWithKeras2(self._base.compat)
        return getattr(self._base, name)


class _CompatWithKeras2:
    def __init__(self, base: Any) -> None:
        self._base = base

    def __getattr__(self, name: str) -> Any:
        if name in ("v1", "v2"):
            return _TensorFlowWithKeras2(getattr(self._base, name), f"tf_keras.api._{name}.keras")
        return getattr(self._base, name)
