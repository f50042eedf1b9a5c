"""Which form a session builds for a new run signature: fused (XLA auto-clustering) or not.

A session compiles each run signature (fetches, feeds, targets) into executors once, when the signature first
runs, and its graph passes read the auto-clustering level then: from the session's config, or, where the config
leaves `global_jit_level` at DEFAULT, from XLA's process-wide `tf_xla_auto_jit` flag. TensorFlow's
`TF_SetXlaAutoJitMode` sets that flag at any time (unlike the CPU flag of compat/xla.py, which is read once), so a
session configured with DEFAULT can build one signature fused and another unfused. The flag is process-wide:
while it says fused, a signature or function first run in another thread is clustered too. Checked on TensorFlow
2.15 and 2.21.
"""

from __future__ import annotations

import os

from tensorflow.python.client import pywrap_tf_session

_FUSED, _UNFUSED = "1", "-1"  # OptimizerOptions.ON_1, OFF


def build_signatures_fused(fused: bool) -> None:
    """From now on, signatures first run by sessions whose config leaves global_jit_level at DEFAULT are built
    fused (XLA clusters) or unfused."""
    pywrap_tf_session.TF_SetXlaAutoJitMode(_FUSED if fused else _UNFUSED)


def restore_signature_building() -> None:
    """Back to the process's own setting: TF_XLA_FLAGS' --tf_xla_auto_jit where the user set it, else DEFAULT."""
    chosen = [flag for flag in os.environ.get("TF_XLA_FLAGS", "").split() if flag.startswith("--tf_xla_auto_jit=")]
    pywrap_tf_session.TF_SetXlaAutoJitMode(chosen[-1].split("=", 1)[1] if chosen else "0")
