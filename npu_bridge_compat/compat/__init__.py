"""The differences between the TensorFlow lines this package runs on, in one place.

- TensorFlow 2.15 (Python up to 3.11): `tf.estimator` (the tensorflow-estimator package); `tf.keras` is Keras 2.
- TensorFlow 2.16 and later (Python 3.12 and 3.13 too): no `tf.estimator` of its own (this package serves
  tensorflow-estimator 2.15 on it); `tf.keras` is Keras 3, or Keras 2 (the tf_keras package) when
  TF_USE_LEGACY_KERAS=1 is set before TensorFlow is imported.

Sessions, hooks, v1 optimizers, graph-mode collectives and grappler's passes are the same on both lines, so the
session door and the run-time units need no version checks. The doors ask this package instead of checking versions:
the Estimator door for what tensorflow-estimator 2.15 needs of TensorFlow 2.16 and later (the door's base classes
themselves are npu_bridge_compat/estimator_library.py's), the Keras door for the trainer internals that Keras 2 and
Keras 3 name differently, `run` for the Keras a ported script gets.

Modules, one per part of TensorFlow they touch (every private TensorFlow, Keras or Estimator name the package
uses is in one of them, with the versions it was checked on):
- versions: the TensorFlow version and stand-ins for classes a line lacks;
- estimator: a built Estimator's internals; estimator_training: the Estimator's private training steps;
  estimator_library: what tensorflow-estimator 2.15 needs of TensorFlow 2.16 and later (what it imports that
  TensorFlow removed, the estimator API's export names);
- keras: Keras 2 and Keras 3 trainer internals, the Keras a ported script gets;
- graph: graphs, ops and v1 control flow;
- sessions: TF1 sessions and the hook driver;
- eager: the eager context's function-call options and the collective cluster of a rank;
- distribute: the one-device strategy that knows the ranks;
- batchnorm: the FusedBatchNormV3 horizon gate of mixed compute;
- optimizers: TF1 optimizers' internal state (tf.contrib.opt's Adam variants);
- measuring: what a timed run may carry besides its step (profiler, checkpoints, summaries);
- xla: XLA's process-wide fusion flags; config: process switches the public API only turns on.
What these functions replace in TensorFlow and Keras goes through npu_bridge_compat.changes.
This package's namespace re-exports the version, Estimator and Keras helpers the doors ask for.
"""

from npu_bridge_compat.compat.estimator import (  # noqa: F401
    estimator_model_fn,
    estimator_warm_start,
)
from npu_bridge_compat.compat.keras import (  # noqa: F401
    LEGACY_KERAS_ENV,
    TF1_KERAS_APIS,
    is_keras_3,
    keras_step_number,
    keras_steps_per_execution,
    remake_keras_function,
    select_keras_2,
    steps_per_execution_in_fit,
    tf1_keras_api,
    tf_keras_is_keras_3,
    v1_layer_class,
)
from npu_bridge_compat.compat.versions import (  # noqa: F401
    ESTIMATOR_TENSORFLOW,
    is_repeated,
    tensorflow_version,
    unavailable_reason,
    version_tuple,
)
