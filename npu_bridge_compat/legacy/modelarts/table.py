"""The modules of ModelArts' `moxing` that ported programs import, and where each name lives here: the one table
behind the ModelArts world's modules, `scan`'s answers and the stand-ins of moxing's training framework.

`moxing.file` (and `moxing.tensorflow.file`, the same API) is the file API of file_api.py, bound to the world's
object storage; `set_flag` / `get_flag` keep moxing's flags, which tune only its training framework; that framework
(`mox.run`, `ModelSpec`, `get_optimizer_fn`, `ModeKeys`, the session hooks, the executor and builtin algorithms) has
no counterpart here and raises NoCounterpartError, naming what replaces it, when used.
"""

from __future__ import annotations

from npu_bridge_compat.imports.world import Module

HERE = "npu_bridge_compat.legacy.modelarts"
FILE_API = f"{HERE}.FILE_API"  # a MoxFile bound to the world's ObjectStorage
FLAGS = f"{HERE}.flags"

FRAMEWORK = (
    "moxing's TensorFlow training framework (mox.run, ModelSpec, get_optimizer_fn and their hooks) is ModelArts' "
    "own and has no counterpart here; write the training loop with tf.estimator.Estimator (NPUEstimator) or a "
    "tf.compat.v1.Session with npu_config_proto, and keep mox.file for the data"
)
FLAG_NOTE = (
    "moxing's flags tune its training framework (mox.run), which has no counterpart here: the value is kept, "
    "get_flag reads it back, and nothing else changes"
)
_FRAMEWORK_NAMES = (
    "run",
    "ModelSpec",
    "get_optimizer_fn",
    "get_model_fn",
    "ModeKeys",
    "AggregativeSessionRunHook",
    "LogEvaluationMetricHook",
    "EarlyStoppingHook",
)
_FLAG_NAMES = {"set_flag": f"{FLAGS}.set_flag", "get_flag": f"{FLAGS}.get_flag"}

_MOXING = Module(
    names=_FLAG_NAMES,
    differs={name: FLAG_NOTE for name in _FLAG_NAMES},
    missing={name: FRAMEWORK for name in _FRAMEWORK_NAMES},
    note="ModelArts' moxing: its file API on local paths and obs:// / s3:// URLs (npu_bridge_compat)",
)

_FILE = Module(sources=(FILE_API,), note="moxing's file API (npu_bridge_compat.legacy.modelarts)")

MODULES: dict[str, Module] = {
    "moxing": _MOXING,
    "moxing.file": _FILE,
    "moxing.tensorflow": _MOXING,
    "moxing.tensorflow.file": _FILE,
    "moxing.tensorflow.executor": Module(gone=FRAMEWORK),
    "moxing.tensorflow.builtin_algorithms": Module(
        gone="moxing's builtin algorithms are ModelArts' own models, not shipped outside it: take the model's code "
        "from its own repository"
    ),
}
