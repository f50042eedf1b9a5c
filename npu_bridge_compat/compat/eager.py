"""The eager context: function-call options of the calling thread, and the collective cluster a rank joins
(coordination service: task states, barriers, error reports). TensorFlow exposes these only on its private
`context` module. Checked on TensorFlow 2.15 and 2.21.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import tensorflow as tf
from tensorflow.python.eager import context

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner


def function_call_options_edited(configure: Callable[[object], None]) -> context.FunctionCallOptions:
    """The calling thread's function-call options with the ConfigProto that `configure` edits in place (a copy of
    the current one): its grappler RewriterConfig, its `global_jit_level` (XLA auto-clustering of the function's
    body). The settings travel in the config each function call carries; the context's own switches
    (`tf.config.optimizer`) are process-wide and lack some passes, such as `auto_mixed_precision_cpu`."""
    current = context.context().function_call_options
    config = tf.compat.v1.ConfigProto.FromString(current.config_proto_serialized)
    configure(config)
    return context.FunctionCallOptions(executor_type=current.executor_type, config_proto=config)


def function_call_config() -> bytes:
    """The serialized ConfigProto the calling thread's function calls carry now (a key for options made from it)."""
    return context.context().function_call_options.config_proto_serialized


class function_calls_with:  # noqa: N801 (used as a context manager, like contextlib's)
    """Meanwhile, the functions this thread calls run with `options` (made by function_call_options_edited). A
    class rather than a generator: it is entered once per call of a decided function."""

    __slots__ = ("_options", "_saved")

    def __init__(self, options: context.FunctionCallOptions) -> None:
        self._options = options

    def __enter__(self) -> None:
        local = context.context()._thread_local_data
        self._saved = local.function_call_options  # None: derived from the context's config when read
        local.function_call_options = self._options

    def __exit__(self, *exception) -> None:
        context.context()._thread_local_data.function_call_options = self._saved


def function_calls_configured(configure: Callable[[object], None]) -> function_calls_with:
    """Meanwhile, the functions this thread calls run with the current options edited by `configure`
    (function_call_options_edited)."""
    return function_calls_with(function_call_options_edited(configure))


@contextlib.contextmanager
def function_run_metadata(collected: list) -> Iterator[None]:
    """Meanwhile, the eager context records the graphs of the functions it runs; afterwards the RunMetadata
    (`function_graphs`: each one's graph before optimization and its executed partition graphs) is appended to
    `collected`. Checked on TensorFlow 2.15 and 2.21."""
    eager = context.context()
    eager.enable_run_metadata()
    eager.export_run_metadata()  # drops what the process's earlier functions left there (another model's, say)
    try:
        yield
    finally:
        collected.append(eager.export_run_metadata())
        eager.disable_run_metadata()


def eager_context_started() -> bool:
    """Whether TensorFlow's eager context has been initialized (a tensor was created, a device listed, ...):
    devices and servers can no longer be set up. Checked on TensorFlow 2.15 and 2.21."""
    return context.context()._context_handle is not None


def context_config():
    """The ConfigProto the process's eager context was configured with (tf.config's settings). Checked on
    TensorFlow 2.15 and 2.21."""
    return context.context().config


def join_collective_cluster(server_def) -> None:
    """Start this task's server of `server_def` and join the cluster's collectives and coordination service, as
    MultiWorkerMirroredStrategy does. Raises tf.errors.OpError when the cluster does not form. Checked on
    TensorFlow 2.15 and 2.21."""
    eager = context.context()
    eager.enable_collective_ops(server_def)
    eager.ensure_initialized()


def cluster_task_states(job: str, tasks: int) -> list:
    """The coordination service's state of each task of `job` (None where the task is healthy). Checked on
    TensorFlow 2.15 and 2.21."""
    return context.context().get_task_states([(job, tasks)])


def wait_for_cluster(barrier: str, timeout_ms: int) -> None:
    """Wait until every task reaches the coordination service's barrier `barrier`. Checked on TensorFlow 2.15 and
    2.21."""
    context.context().wait_at_barrier(barrier, timeout_ms)


def report_error_to_cluster(message: str) -> None:
    """Tell the coordination service (and so every task) that this task failed. Checked on TensorFlow 2.15 and
    2.21."""
    context.context().report_error_to_cluster(tf.errors.UNKNOWN, message)


def publish_to_cluster(key: str, value: str) -> None:
    """Store `value` under `key` in the coordination service's key-value store, for every task to read. Checked on
    TensorFlow 2.15 and 2.21."""
    context.context().set_config_key_value(key, value)


def read_from_cluster(key: str, timeout_ms: int) -> str:
    """The value another task stored under `key`, waiting up to `timeout_ms` for it. Checked on TensorFlow 2.15
    and 2.21."""
    return context.context().get_config_key_value(key, timeout_ms)


def replace_function_decorator(make: Callable[[Callable], Callable], owner: Owner) -> None:
    """From now on `tf.function` is `make(original tf.function)`: functions decorated afterwards go through it
    (once; through the changes registry). TensorFlow has no hook for the functions a program traces, and the TF2
    adapter's as_default() replaces tf.function too. Checked on TensorFlow 2.15 and 2.21."""
    if not changes.is_replaced(tf, "function"):
        changes.replace_attribute(
            tf,
            "function",
            make(tf.function),
            owner=owner,
            reason="the program's tf.functions get the plan's dumps, numeric checks and keep-dtype",
        )


def checked_after_calls(function, check: Callable[[], None], owner: Owner):
    """`function`, a tf.function, made to run `check()` after each call from eager code. It stays a tf.function
    (Keras reads a decorated `call` method's signature through it; its methods are bound as TensorFlow binds
    them), so its class is swapped for a subclass, which the copies TensorFlow makes for bound methods keep.
    Checked on TensorFlow 2.15 and 2.21."""

    class Checked(type(function)):
        def __call__(self, *args, **kwargs):
            result = super().__call__(*args, **kwargs)
            if tf.executing_eagerly():  # a call from another function is checked after that one
                check()
            return result

    reason = "checked after each call from eager code (a failing probe raises), still a tf.function"
    return _with_class(function, Checked, owner, reason)


def calls_through(function, call: Callable[[Callable, tuple, dict], object], owner: Owner):
    """`function`, a tf.function, made so that each call from eager code becomes `call(run, args, kwargs)`, where
    `run(*args, **kwargs)` is the function's own call; calls from other functions stay as they are. Its class is
    swapped for a subclass (through the changes registry), as in `checked_after_calls`. Checked on TensorFlow 2.15
    and 2.21."""

    class Called(type(function)):
        def __call__(self, *args, **kwargs):
            if not tf.executing_eagerly():
                return super().__call__(*args, **kwargs)
            return call(super().__call__, args, kwargs)

    reason = "each call from eager code goes through the forms its first runs decide, still a tf.function"
    return _with_class(function, Called, owner, reason)


def _with_class(function, subclass: type, owner: Owner, reason: str):
    """`function` with its class swapped for `subclass` of it, through the changes registry. Where `owner` swapped
    the class before (checked after calls, then called through), `subclass` derives from that class and does both:
    the earlier change is undone and the new one made, so that undoing it gives back the tf.function's own."""
    subclass.__name__ = subclass.__qualname__ = type(function).__name__
    earlier = changes.attribute_change(function, "__class__")
    if earlier is not None and earlier.owner is owner:
        changes.undo(changes=[earlier])
        reason = f"{earlier.reason}; {reason}"
    changes.replace_attribute(
        function,
        "__class__",
        subclass,
        owner=owner,
        reason=reason,
        label=f"<tf.function {getattr(function, '__name__', '?')}>",
    )
    return function


def wrapping(function: Callable, wrapper: Callable) -> Callable:
    """`wrapper` presented as `function` to TensorFlow and Keras: they read a function's arguments through their
    own decorator type (Keras finds a `call` method's `training` argument so), which functools.wraps does not
    satisfy. Checked on TensorFlow 2.15 and 2.21."""
    return tf.__internal__.decorator.make_decorator(function, wrapper)
