"""What importing npu_init does to TensorFlow's sessions, as the adapter's import does.

Every Session / InteractiveSession created with a config that carries NpuOptimizer options gets the host config
(validated, reported once), and with several ranks every session runs on the rank's server;
`tf.compat.v1.Session` itself becomes NPUSession, so scripts also get N-iteration fetches, the mixed-compute
checks and host-kept ops.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Iterator

import tensorflow as tf

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat.batchnorm import install_horizon_gate
from npu_bridge_compat.compat.sessions import tf1_session_classes
from npu_bridge_compat.distributed.rank_doors import rank_session
from npu_bridge_compat.options import npu_optimizer_entries
from npu_bridge_compat.session import NPUSession, host_session_config

OWNER = Owner.NPU_INIT


@contextlib.contextmanager
def _forgotten_when_undone(module: str) -> Iterator[None]:
    yield
    sys.modules.pop(module, None)


def decorator_tf_session(init):
    """Wrap a session `__init__` so that NpuOptimizer options in its config are translated for this host."""

    @functools.wraps(init)
    def translated_init(self, target="", graph=None, config=None, *args, **kwargs):
        if config is not None and npu_optimizer_entries(config):
            config = host_session_config(config)
        target, config = rank_session(target, config)
        return init(self, target, graph, config, *args, **kwargs)

    return translated_init


def _v1_api_modules() -> list:
    """Every module object a program reaches TF1's API through: `tf.compat.v1`, and the copies behind
    `tf.compat.v1.compat.v1` (what `tf.compat.v1` gives a program whose `tf` is already TF1's, as under
    `run --tf1`) and `tf.compat.v2.compat.v1`."""
    reached = [tf.compat.v1, tf.compat.v1.compat.v1, tf.compat.v2.compat.v1]
    return list({id(module): module for module in reached}.values())


def patch_sessions(imported_by: str) -> None:
    """Install the session translation (idempotent, through the changes registry), as importing the module
    `imported_by` (npu_init) does; undoing it forgets that module too, so that importing it again installs it
    again."""
    api_modules = _v1_api_modules()
    if changes.is_replaced(api_modules[0], "Session"):
        return
    changes.enter(
        _forgotten_when_undone(imported_by),
        f"sys.modules[{imported_by!r}]",
        owner=OWNER,
        reason="the module whose import patches the sessions; imported again once they are restored",
    )
    for session_class in tf1_session_classes():
        changes.replace_attribute(
            session_class,
            "__init__",
            decorator_tf_session(session_class.__init__),
            owner=OWNER,
            reason="sessions given a config with NpuOptimizer options get the host config (and the rank's server)",
        )
    for api in api_modules:
        changes.replace_attribute(
            api,
            "Session",
            NPUSession,
            owner=OWNER,
            reason="tf.compat.v1.Session is NPUSession, as importing the adapter's npu_init makes it",
            label=api.__name__,
        )
    install_horizon_gate()  # a script's forward_compatibility_horizon(2019, 5, 1) gives the pre-V3 batch norm
