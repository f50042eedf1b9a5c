"""The adapter's import paths (npu_bridge.*, hccl.*, npu_device.*: the adapter world, adapter.py) as aliases of
npu_bridge_compat's modules, and the TF 1.15 world around them (tf1/: tensorflow.contrib, tensorflow.examples,
`run --tf1`'s imports).

Nothing is aliased until `install_aliases()` is called (or a script is started with
`python -m npu_bridge_compat run`): a real npu_bridge must never be shadowed by accident, so the aliases are
refused where one is installed. The files below npu_bridge/, hccl/ and npu_device/ mirror the adapter's module
trees; each imports the names from the module of npu_bridge_compat that implements them.
"""

from __future__ import annotations

from npu_bridge_compat.legacy.adapter import ADAPTER, ALIASED_PACKAGES  # noqa: F401
from npu_bridge_compat.legacy.tf1 import (  # noqa: F401
    NameStatus,
    install_tf1_imports,
    install_tf1_world,
)


def aliases_installed() -> bool:
    return ADAPTER.installed()


def install_aliases(tf1: bool = False) -> None:
    """Make `import npu_bridge...` and `import hccl...` resolve to npu_bridge_compat (idempotent); with `tf1`,
    also `tensorflow.contrib...` and `tensorflow.examples...` (TF 1.15's modules that TensorFlow 2.15 lacks)."""
    if tf1:
        install_tf1_world()
    ADAPTER.install()
