"""What importing npu_init does to TensorFlow's sessions, as the adapter's import does.

Every Session / InteractiveSession created with a config that carries NpuOptimizer options gets the host config
(validated, reported once), and with several ranks every session runs on the rank's server;
`tf.compat.v1.Session` itself becomes NPUSession, so scripts also get N-iteration fetches, the mixed-compute
checks and host-kept ops.
"""

from __future__ import annotations

import functools

import tensorflow.compat.v1 as tf_v1  # the module scripts see as tf.compat.v1, and as tf under `run --tf1`

from npu_bridge_compat.compat.sessions import tf1_session_classes
from npu_bridge_compat.distributed.rank_doors import rank_session
from npu_bridge_compat.options import npu_optimizer_entries
from npu_bridge_compat.session import NPUSession, host_session_config

_patched = False


def decorator_tf_session(init):
    """Wrap a session `__init__` so that NpuOptimizer options in its config are translated for this host."""

    @functools.wraps(init)
    def translated_init(self, target="", graph=None, config=None, *args, **kwargs):
        if config is not None and npu_optimizer_entries(config):
            config = host_session_config(config)
        target, config = rank_session(target, config)
        return init(self, target, graph, config, *args, **kwargs)

    return translated_init


def patch_sessions() -> None:
    """Install the session translation (idempotent)."""
    global _patched
    if _patched:
        return
    _patched = True
    for session_class in tf1_session_classes():
        session_class.__init__ = decorator_tf_session(session_class.__init__)
    tf_v1.Session = NPUSession
