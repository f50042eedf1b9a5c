"""Sessions and their hooks: the private parts of TensorFlow's TF1 session classes the doors need.

Checked on TensorFlow 2.15 and 2.21.
"""

from __future__ import annotations

import sys

from tensorflow.python.client import session as session_lib
from tensorflow.python.training import monitored_session, session_run_hook

# The modules the adapter's npu_init re-exports under these names (`session.Session`, `session_run_hook.
# SessionRunHook` in ported scripts).
TF1_SESSION_MODULE = session_lib
SESSION_RUN_HOOK_MODULE = session_run_hook


def tf1_session_classes() -> tuple[type, type]:
    """TensorFlow's own Session and InteractiveSession classes, whatever `tf.compat.v1.Session` names now (the
    session door replaces it while npu_bridge is imported). Checked on TensorFlow 2.15 and 2.21."""
    return session_lib.Session, session_lib.InteractiveSession


def session_running_hooks(session, hooks: list):
    """An object whose `run` drives `hooks` (SessionRunHooks) around `session.run`, as MonitoredSession does
    (its `_HookedSession`: TensorFlow has no public form without a MonitoredSession's own session management).
    `session` needs `graph` and `run`. Checked on TensorFlow 2.15 and 2.21."""
    return monitored_session._HookedSession(session, hooks)


def session_config_of(session):
    """The ConfigProto `session` was created with (None when it was given none). Checked on TensorFlow 2.15 and
    2.21."""
    return getattr(session, "_config", None)


def session_without_runtime(session) -> None:
    """Let `session`, a Session subclass whose `__init__` may stop before TensorFlow's own ran, be deleted quietly:
    BaseSession.__del__ reads its `_session`. Checked on TensorFlow 2.15 and 2.21."""
    session._session = None


def keras_global_session():
    """The session Keras' TF1 backend uses (`tf.compat.v1.keras.backend.set_session` sets it), None while it has
    none: `get_session()` would create one. Checked on TensorFlow 2.15 (Keras 2.15) and 2.21 (tf_keras)."""
    import tensorflow as tf

    backend = sys.modules[tf.compat.v1.keras.backend.set_session.__module__]
    return backend._SESSION.session
