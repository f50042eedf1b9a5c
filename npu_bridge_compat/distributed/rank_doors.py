"""What each door calls to run with several ranks (nothing changes with one rank).

- The session door (NPUSession, and every session once npu_init is imported): `rank_session(target, config)`.
- NPUEstimator: `rank_estimator(estimator)`, as the adapter's NPUEstimator does when RANK_SIZE > 1, and
  `rank_training_done(estimator)` after each `train`.
- Keras needs no call: its distributed optimizer and broadcast callback work in eager and graph mode alike.
"""

from __future__ import annotations

import itertools
import os

from npu_bridge_compat.compat.eager import publish_to_cluster, read_from_cluster, wait_for_cluster
from npu_bridge_compat.compat.estimator import run_estimator_on
from npu_bridge_compat.distributed import collective_runtime, ranks
from npu_bridge_compat.distributed.hooks import NPUBroadcastGlobalVariablesHook

_trainings = itertools.count()
_estimators = itertools.count()  # every rank builds the same Estimators in the same order


def rank_session(target: str, config):
    """The session target and config for this rank: its own server and devices, when the script names no
    master of its own."""
    if ranks.rank_size() == 1 or target:
        return target, config
    started = collective_runtime.start()
    return started.target, started.session_config(config)


def rank_estimator(estimator) -> list:
    """Make a built Estimator this rank's: its sessions on the rank's server, and its checkpoints and summaries
    written as the adapter's NPUEstimator writes them: every rank into its own model_dir; where ranks share one,
    rank 0 alone writes it (all ranks hold the same weights) and the others restore from it. Which case holds is
    found at start, through the coordination service. Returns the training hooks the adapter's NPUEstimator adds:
    the variable broadcast."""
    if ranks.rank_size() == 1:
        return []
    started, rank = collective_runtime.start(), ranks.rank_id()
    shares = _shares_rank_0_model_dir(estimator.model_dir, rank)  # rank 0 publishes its own here
    run_estimator_on(estimator, started.target, started.session_config, writes_model_dir=not shares)
    return [NPUBroadcastGlobalVariablesHook(0, rank)]


def rank_training_done(estimator) -> None:
    """After `train`: every rank waits for the others, so that a rank that restores from rank 0's model_dir finds
    the checkpoint rank 0 wrote at the end of training (evaluate, predict, export, get_variable_value)."""
    if ranks.rank_size() > 1:
        wait_for_cluster(f"npu_bridge_compat: training {next(_trainings)} saved", ranks.exec_timeout_s() * 1000)


def _shares_rank_0_model_dir(model_dir: str | None, rank: int) -> bool:
    mine = os.path.realpath(model_dir) if model_dir else ""
    key = f"npu_bridge_compat/estimator {next(_estimators)}/model_dir of rank 0"
    if rank == 0:
        publish_to_cluster(key, mine)
        return False
    return mine == read_from_cluster(key, ranks.connect_timeout_s() * 1000)
