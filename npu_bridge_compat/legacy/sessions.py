"""What importing npu_init does to TensorFlow's sessions, as the adapter's import does.

Every Session / InteractiveSession created with a config that carries NpuOptimizer options gets the host config
(validated, reported once), and with several ranks every session runs on the rank's server;
`tf.compat.v1.Session` itself becomes NPUSession, so scripts also get N-iteration fetches, the mixed-compute
checks and host-kept ops.
"""

from __future__ import annotations

import functools

import tensorflow.compat.v1 as tf_v1  # the module scripts see as tf.compat.v1, and as tf under `run --tf1`

from npu_bridge_compat import changes
from npu_bridge_compat.compat.batchnorm import install_horizon_gate
from npu_bridge_compat.compat.sessions import tf1_session_classes
from npu_bridge_compat.distributed.rank_doors import rank_session
from npu_bridge_compat.options import npu_optimizer_entries
from npu_bridge_compat.session import NPUSession, host_session_config

OWNER = "npu_bridge.npu_init"


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
    """Install the session translation (idempotent, through the changes registry)."""
    if changes.is_replaced(tf_v1, "Session"):
        return
    for session_class in tf1_session_classes():
        changes.replace_attribute(
            session_class,
            "__init__",
            decorator_tf_session(session_class.__init__),
            owner=OWNER,
            reason="sessions given a config with NpuOptimizer options get the host config (and the rank's server)",
        )
    changes.replace_attribute(
        tf_v1,
        "Session",
        NPUSession,
        owner=OWNER,
        reason="tf.compat.v1.Session is NPUSession, as importing the adapter's npu_init makes it",
        label="tensorflow.compat.v1",
    )
    install_horizon_gate()  # a script's forward_compatibility_horizon(2019, 5, 1) gives the pre-V3 batch norm
