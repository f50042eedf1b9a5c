"""What each door calls to run with several ranks (nothing changes with one rank).

- The session door (NPUSession, and every session once npu_init is imported): `rank_session(target, config)`.
- NPUEstimator: `rank_estimator(estimator)`, as the adapter's NPUEstimator does when RANK_SIZE > 1.
- Keras needs no call: its distributed optimizer and broadcast callback work in eager and graph mode alike.
"""

from __future__ import annotations

import copy

from npu_bridge_compat.distributed import ranks, runtime
from npu_bridge_compat.distributed.hooks import NPUBroadcastGlobalVariablesHook


def rank_session(target: str, config):
    """The session target and config for this rank: its own server and devices, when the script names no
    master of its own."""
    if ranks.rank_size() == 1 or target:
        return target, config
    started = runtime.start()
    return started.target, started.session_config(config)


def rank_estimator(estimator) -> list:
    """Make a built Estimator this rank's: its sessions on the rank's server, checkpoints and summaries written by
    rank 0 only (all ranks hold the same weights; ranks sharing a model_dir must not write it at once; every rank
    restores from it). Returns the training hooks the adapter's NPUEstimator adds: the variable broadcast."""
    if ranks.rank_size() == 1:
        return []
    started, rank = runtime.start(), ranks.rank_id()
    config = copy.copy(estimator._config)  # Estimator reads its sessions' target and saving intervals here
    config._master = started.target
    if rank != 0:
        config._save_checkpoints_steps = config._save_checkpoints_secs = None
        config._save_summary_steps = 0
        config._log_step_count_steps = None
    estimator._config = config
    estimator._session_config = started.session_config(estimator._session_config)
    return [NPUBroadcastGlobalVariablesHook(0, rank)]
