"""What each door calls to run with several ranks (nothing changes with one rank).

- The session door (NPUSession, and every session once npu_init is imported): `rank_session(target, config)`.
- NPUEstimator: `rank_estimator(config)`, as the adapter's NPUEstimator does when RANK_SIZE > 1.
- Keras needs no call: its distributed optimizer and broadcast callback work in eager and graph mode alike.
"""

from __future__ import annotations

import copy

from npu_bridge_compat.distributed import ranks, runtime
from npu_bridge_compat.distributed.broadcast import NPUBroadcastGlobalVariablesHook


def rank_session(target: str, config):
    """The session target and config for this rank: its own server and devices, when the script names no
    master of its own."""
    if ranks.rank_size() == 1 or target:
        return target, config
    started = runtime.start()
    return started.target, started.session_config(config)


def rank_estimator(config):
    """(config, training hooks) for this rank's Estimator: sessions on the rank's server, the broadcast hook of
    the adapter's NPUEstimator, and checkpoints and summaries written by rank 0 only (all ranks hold the same
    weights; ranks sharing a model_dir must not write it at once). Every rank restores from model_dir."""
    if ranks.rank_size() == 1:
        return config, []
    started, rank = runtime.start(), ranks.rank_id()
    config = copy.copy(config)
    config._master = started.target
    config._session_config = started.session_config(config.session_config)
    if rank != 0:
        config._save_checkpoints_steps = config._save_checkpoints_secs = None
        config._save_summary_steps = 0
        config._log_step_count_steps = None
    return config, [NPUBroadcastGlobalVariablesHook(0, rank)]
