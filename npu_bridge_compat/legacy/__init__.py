"""The adapter's import paths (npu_bridge.*, hccl.*) as aliases of npu_bridge_compat's modules.

Nothing is aliased until `install_aliases()` is called (or a script is started with
`python -m npu_bridge_compat run`): a real npu_bridge must never be shadowed by accident, so the aliases are
refused where one is installed. The files below this package mirror the adapter's module tree; each imports
the names from the module of npu_bridge_compat that implements them.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.abc
import importlib.util
import os
import sys

from npu_bridge_compat.errors import NpuConfigError

ALIASED_PACKAGES = ("npu_bridge", "hccl")
_HERE = os.path.dirname(os.path.abspath(__file__))


class _LegacyFinder(importlib.abc.MetaPathFinder):
    """Finds `npu_bridge.x.y` as the file of `npu_bridge_compat.legacy.npu_bridge.x.y`, loaded under the alias."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in ALIASED_PACKAGES:
            return None
        real = importlib.util.find_spec(f"{__name__}.{fullname}")
        if real is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, real.origin, submodule_search_locations=real.submodule_search_locations)


_finder = _LegacyFinder()


def aliases_installed() -> bool:
    return _finder in sys.meta_path


def install_aliases() -> None:
    """Make `import npu_bridge...` and `import hccl...` resolve to npu_bridge_compat (idempotent)."""
    if aliases_installed():
        return
    for package in ALIASED_PACKAGES:
        real = importlib.util.find_spec(package)
        if real is not None:
            raise NpuConfigError(f"a real '{package}' package is importable here ({real.origin}); npu_bridge_compat "
                                 "will not shadow it. Run the script without the aliases, or in an environment "
                                 "without the Ascend adapter.")
    sys.meta_path.insert(0, _finder)


def install_tf1_imports(script_dir: str) -> None:
    """`import tensorflow as tf` in the script's own files (and in the aliases) gives `tensorflow.compat.v1`,
    with TF2 behaviour disabled, for scripts written for TF 1.15."""
    import tensorflow as tf

    tf.compat.v1.disable_v2_behavior()
    roots = (os.path.abspath(script_dir) + os.sep, _HERE + os.sep)
    original_import = builtins.__import__

    def tf1_import(name, globals=None, locals=None, fromlist=(), level=0):
        importer = (globals or {}).get("__file__") or ""
        if name == "tensorflow" and level == 0 and os.path.abspath(importer).startswith(roots):
            return tf.compat.v1
        return original_import(name, globals, locals, fromlist, level)

    builtins.__import__ = tf1_import
