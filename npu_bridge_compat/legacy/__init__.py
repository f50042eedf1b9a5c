"""The adapter's import paths (npu_bridge.*, hccl.*) as aliases of npu_bridge_compat's modules, and the TF 1.15
world around them (tf1/: tensorflow.contrib, tensorflow.examples, `run --tf1`'s imports).

Nothing is aliased until `install_aliases()` is called (or a script is started with
`python -m npu_bridge_compat run`): a real npu_bridge must never be shadowed by accident, so the aliases are
refused where one is installed. The files below npu_bridge/ and hccl/ mirror the adapter's module tree; each
imports the names from the module of npu_bridge_compat that implements them.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat.xla import reserve_fusion_flags
from npu_bridge_compat.errors import NpuConfigError
from npu_bridge_compat.legacy.tf1 import (  # noqa: F401
    NameStatus,
    install_tf1_imports,
    install_tf1_world,
    tf1_name_status,
)

ALIASED_PACKAGES = ("npu_bridge", "hccl", "npu_device")
# npu_device.compat.v1.<module> is npu_bridge.<module> without the adapter's loss-scale names, which the TF2
# adapter's build drops from its copy of npu_bridge (tf_adapter_2.x/compat_v1/).
TF1_UNDER_TF2 = "npu_device.compat.v1."
DROPPED_UNDER_TF2 = ("NPULossScaleOptimizer", "FixedLossScaleManager", "ExponentialUpdateLossScaleManager")


class _LegacyFinder(importlib.abc.MetaPathFinder):
    """Finds `npu_bridge.x.y` as the file of `npu_bridge_compat.legacy.npu_bridge.x.y`, loaded under the alias."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in ALIASED_PACKAGES:
            return None
        if fullname.startswith(TF1_UNDER_TF2):
            return _tf1_module_under_tf2(fullname)
        real = importlib.util.find_spec(f"{__name__}.{fullname}")
        if real is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, real.origin, submodule_search_locations=real.submodule_search_locations
        )


class _CopyLoader(importlib.abc.Loader):
    """Loads a module as a copy of another module's names, minus some."""

    def __init__(self, source: str, dropped: tuple[str, ...]) -> None:
        self._source, self._dropped = source, dropped

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        source = importlib.import_module(self._source)
        for name in dir(source):
            if name not in self._dropped and not name.startswith("__"):
                setattr(module, name, getattr(source, name))
        module.__doc__ = source.__doc__


def _tf1_module_under_tf2(fullname: str):
    source = "npu_bridge." + fullname[len(TF1_UNDER_TF2) :]
    real = importlib.util.find_spec(f"{__name__}.{source}")
    if real is None:
        return None
    return importlib.util.spec_from_loader(
        fullname, _CopyLoader(source, DROPPED_UNDER_TF2), is_package=real.submodule_search_locations is not None
    )


_finder = _LegacyFinder()


def aliases_installed() -> bool:
    return _finder in sys.meta_path


def install_aliases(tf1: bool = False) -> None:
    """Make `import npu_bridge...` and `import hccl...` resolve to npu_bridge_compat (idempotent); with `tf1`,
    also `tensorflow.contrib...` and `tensorflow.examples...` (TF 1.15's modules that TensorFlow 2.15 lacks)."""
    if tf1:
        install_tf1_world()
    if aliases_installed():
        return
    for package in ALIASED_PACKAGES:
        real = importlib.util.find_spec(package)
        if real is not None:
            raise NpuConfigError(
                f"a real '{package}' package is importable here ({real.origin}); npu_bridge_compat "
                "will not shadow it. Run the script without the aliases, or in an environment "
                "without the Ascend adapter."
            )
    changes.add_import_finder(
        _finder,
        owner=Owner.ADAPTER_ALIASES,
        reason="npu_bridge.*, hccl.* and npu_device.* resolve to npu_bridge_compat",
        packages=ALIASED_PACKAGES,
    )
    reserve_fusion_flags()  # the adapter's scripts may ask for graph-kernel fusion before TensorFlow starts
