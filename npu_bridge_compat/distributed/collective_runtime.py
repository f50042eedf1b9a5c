"""This rank's part of TensorFlow's collective runtime: its gRPC server, the coordination service, lost ranks.

`start()` (once per process, before the first collective runs) gives the eager context the job's ServerDef
(`enable_collective_ops`, as MultiWorkerMirroredStrategy does): TensorFlow starts this rank's gRPC server, whose
target also serves the graph-mode sessions of the session and Estimator doors (`session_config` names the
collective group leader and keeps each rank's graphs on its own devices). Rank 0's server hosts TensorFlow's
coordination service: every rank registers there at start (waiting up to HCCL_CONNECT_TIMEOUT for the others)
and sends it heartbeats.

A lost rank. The service marks a rank that stops sending heartbeats (killed, crashed, machine gone) as failed;
a rank that raises reports its error to the service on its way out. A watchdog thread asks the service for the
ranks' states every second; when another rank has failed it names that rank on stderr and ends this process with
EXIT_RANK_LOST: a collective waiting for the lost rank could not complete, and graph-mode collectives cannot be
cancelled from outside. A rank waiting for one that is alive but never joins (diverging graphs) is ended by the
deadline of its session runs: HCCL_EXEC_TIMEOUT per step (N times that for an N-step run). The deadline is the
run's, not each collective's: TensorFlow keeps a sleeping thread alive for the whole timeout of every collective
given one, a thread per call. At a normal exit the ranks wait for each other (two barriers of the coordination
service: every rank finished, every watchdog stopped), so that no rank leaves while another's watchdog could read
its departure as a loss, and rank 0, which hosts the service, is never left early.

Security: TensorFlow's gRPC servers have no authentication, and TensorFlow (2.15 to 2.21) always listens on every
interface of its network (grpc_server_lib.cc binds "0.0.0.0:<port>"; no option changes it). `launch` runs a
single-host job in a network namespace whose only interface is loopback (launch.py); ranks started otherwise can be
reached from outside the host: they must sit on a trusted network, and a rank a scheduler started says so once at
start, naming its port.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import sys
import threading
import time

import tensorflow as tf
from tensorflow.core.protobuf import config_pb2, tensorflow_server_pb2

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat.eager import (
    cluster_task_states,
    context_config,
    eager_context_started,
    join_collective_cluster,
    report_error_to_cluster,
    wait_for_cluster,
)
from npu_bridge_compat.distributed import ranks, schedulers
from npu_bridge_compat.distributed.cluster import JOB, Cluster, check_address_is_local, current_cluster
from npu_bridge_compat.distributed.keys import collectives_of
from npu_bridge_compat.distributed.ranks import EXIT_RANK_LOST, RankConfigError
from npu_bridge_compat.errors import NpuCompatWarning, warn
from npu_bridge_compat.logs import log_line

HEARTBEAT_TIMEOUT_S = 20
POLL_INTERVAL_S = 1.0
MOST_COLLECTIVES_NAMED = 6
# TensorFlow's words when a rank's step ends (its buffers freed) while a peer still receives from its collective
PEER_LEFT_THE_STEP = "Delete called on non-empty BufRendezvous"


@dataclasses.dataclass
class RankRuntime:
    """The started runtime of this rank."""

    cluster: Cluster
    config: config_pb2.ConfigProto  # the server's: collective leader, device filters, coordination service

    @property
    def target(self) -> str:
        return f"grpc://{self.cluster.me.address}"

    def session_config(self, config: config_pb2.ConfigProto | None = None) -> config_pb2.ConfigProto:
        """`config` (copied) for a session on this rank's server: the collective group leader, this rank's own
        devices only (without the filter a session would place ops on other ranks' devices), and a deadline per
        run (HCCL_EXEC_TIMEOUT) unless the config sets its own."""
        result = config_pb2.ConfigProto()
        if config is not None:
            result.CopyFrom(config)
        if not result.experimental.collective_group_leader:
            result.experimental.collective_group_leader = self.config.experimental.collective_group_leader
        if not result.device_filters:
            result.device_filters.extend(self.config.device_filters)
        del result.session_inter_op_thread_pool[:]  # a distributed session refuses them
        rewrites = result.graph_options.rewrite_options
        if rewrites.auto_mixed_precision_onednn_bfloat16 == rewrites.ON:
            # The remapper fuses bfloat16 Conv2D+BiasAdd+Relu into a _FusedConv2D that only the oneDNN rewrite
            # of a local session can run; a rank's gRPC session never makes that rewrite (TensorFlow 2.15, 2.21).
            rewrites.remapping = rewrites.OFF
        if not result.operation_timeout_in_ms:
            result.operation_timeout_in_ms = collective_run_deadline_ms()
        return result


_lock = threading.Lock()
_runtime: RankRuntime | None = None
_failed = threading.Event()  # an uncaught exception ends this rank: it does not wait for the others at exit


def started() -> RankRuntime | None:
    return _runtime


def start() -> RankRuntime:
    """Join the job's collective runtime (idempotent). Blocks until every rank has started, or fails after
    HCCL_CONNECT_TIMEOUT naming the cluster."""
    global _runtime
    with _lock:
        if _runtime is not None:
            return _runtime
        cluster = current_cluster()
        if cluster.size == 1:
            raise RankConfigError("the collective runtime is for several ranks; RANK_SIZE is 1")
        if not cluster.single_host:
            check_address_is_local(cluster)
        if eager_context_started() and tf.executing_eagerly():
            raise RankConfigError(
                f"RANK_SIZE={cluster.size}: the collectives of several ranks must be set up before TensorFlow runs "
                "anything eagerly, and this process has already created tensors. Import npu_bridge (npu_init, "
                "hccl_ops, ...) or call npu_bridge_compat.distributed.start() at the top of the script, before "
                "TensorFlow creates any tensor."
            )
        if not eager_context_started():
            _select_gpu(cluster)
        _say_who_can_reach_it(cluster)
        config = _server_config(cluster)
        server_def = tensorflow_server_pb2.ServerDef(
            cluster=cluster.cluster_spec().as_cluster_def(),
            default_session_config=config,
            job_name=JOB,
            task_index=cluster.rank,
            protocol="grpc",
        )
        try:
            changes.change_irreversibly(
                "TensorFlow's collective runtime",
                f"rank {cluster.rank} of {cluster.size}",
                lambda: join_collective_cluster(server_def),  # starts the server, registers with the service
                owner=Owner.RANKS,
                reason="this rank's gRPC server and the coordination service, which TensorFlow cannot stop",
            )
        except tf.errors.OpError as error:
            raise RankConfigError(
                f"{cluster.describe(cluster.rank)} could not join the {cluster.size} ranks of the "
                f"{cluster.source} within HCCL_CONNECT_TIMEOUT={ranks.connect_timeout_s()} s: "
                f"{error.message}"
            ) from None
        _runtime = RankRuntime(cluster=cluster, config=config)
        watchdog = _Watchdog(_runtime)
        watchdog.start()
        _report_uncaught_errors(cluster)
        changes.add_exit_handler(
            functools.partial(_leave_together, cluster, watchdog),
            owner=Owner.RANKS,
            reason="at a normal exit the ranks wait for each other, so that none reads another's departure as a loss",
            label="the ranks leave together",
        )
        return _runtime


def _say_who_can_reach_it(cluster: Cluster) -> None:
    """A rank a scheduler started sits in its host's network, where its server listens on every interface."""
    found = ranks.scheduler()
    if found is None:
        return
    log_line(
        f"npu_bridge_compat: rank {cluster.rank} of the {found.scheduler} job listens on port {cluster.me.port} of "
        "every interface of this host, and TensorFlow's servers have no authentication: open the job's ports only "
        "between its hosts"
    )


def collective_run_deadline_ms() -> int:
    """How long one step's session run may wait on this rank's collectives (HCCL_EXEC_TIMEOUT); 0 without the
    runtime. Bounding the run costs nothing per collective, unlike a collective's own timeout."""
    return ranks.exec_timeout_s() * 1000 if _runtime is not None else 0


def start_if_several_ranks() -> None:
    """Start now when the environment asks for several ranks. Ported scripts import npu_bridge before anything
    runs, and eager collectives need the runtime from the start."""
    if ranks.rank_size() > 1:
        start()


def _server_config(cluster: Cluster) -> config_pb2.ConfigProto:
    """The server's ConfigProto. It creates the rank's devices and thread pools, so it starts from the process's
    own settings (tf.config.threading, ...), as MultiWorkerMirroredStrategy does."""
    config = config_pb2.ConfigProto()
    config.CopyFrom(context_config())
    config.experimental.collective_group_leader = cluster.task(0)
    config.device_filters.append(f"/job:{JOB}/task:{cluster.rank}")
    coordination = config.experimental.coordination_config
    coordination.service_type = "standalone"
    coordination.service_leader = cluster.task(0)
    coordination.cluster_register_timeout_in_ms = ranks.connect_timeout_s() * 1000
    coordination.heartbeat_timeout_in_ms = HEARTBEAT_TIMEOUT_S * 1000
    coordination.shutdown_barrier_timeout_in_ms = ranks.exec_timeout_s() * 1000
    job = coordination.coordinated_job_list.add()
    job.name, job.num_tasks = JOB, cluster.size
    return config


def _select_gpu(cluster: Cluster) -> None:
    """One GPU per rank: the one its device id names (its position on its host when no id is given). A rank a
    scheduler started takes the GPU at its local rank among those the scheduler left visible, and stops when
    there are too few."""
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return
    device, found = ranks.device_id(), ranks.scheduler()
    index = cluster.local_rank if device is None else device
    if found is not None and ranks.device_id_source()[0] == found.local_rank_variable:
        index = schedulers.gpu_index(found, len(gpus))
    if index >= len(gpus):
        warn(
            f"{cluster.describe(cluster.rank)} asks for GPU {index}, but this host has {len(gpus)}; it runs on the "
            "CPU.",
            NpuCompatWarning,
        )
    chosen = [] if index >= len(gpus) else [gpus[index]]
    changes.change_irreversibly(
        "TensorFlow's visible GPUs",
        f"GPU {index}" if chosen else "none",
        lambda: tf.config.set_visible_devices(chosen, "GPU"),
        owner=Owner.RANKS,
        reason="one GPU per rank (TensorFlow fixes its devices when its runtime starts)",
    )


class _Watchdog(threading.Thread):
    """Ends this rank when the coordination service reports another one failed."""

    def __init__(self, runtime: RankRuntime) -> None:
        super().__init__(name="npu_bridge_compat rank watchdog", daemon=True)
        self._cluster = runtime.cluster
        self._stopping = threading.Event()  # (not `_stop`: threading.Thread has a method of that name)

    def stop(self) -> None:
        self._stopping.set()

    def run(self) -> None:
        while not self._stopping.wait(POLL_INTERVAL_S):
            lost = self._lost_ranks()
            if lost and not self._stopping.is_set():
                _end_rank(self._cluster, lost)

    def _lost_ranks(self) -> list[tuple[int, str]]:
        cluster = self._cluster
        try:
            states = cluster_task_states(JOB, cluster.size)
        except tf.errors.OpError as error:  # the service itself is gone: rank 0, which hosts it, was lost
            return [(0, error.message)]
        return [
            (rank, getattr(state, "message", str(state)))
            for rank, state in enumerate(states)
            if state is not None and rank != cluster.rank
        ]


def _leave_together(cluster: Cluster, watchdog: _Watchdog) -> None:
    """At a normal exit, wait for every rank to finish, then stop the watchdog, then wait for every watchdog to
    stop: a rank that finished first, rank 0 above all (it hosts the coordination service), must not leave while
    another rank's watchdog could still read its departure as its loss. While this rank waits, its watchdog still
    ends it if another rank fails. A rank leaving on an uncaught exception does not wait."""
    if _failed.is_set():
        watchdog.stop()
        return
    timeout_ms = ranks.exec_timeout_s() * 1000
    try:
        wait_for_cluster("npu_bridge_compat: every rank finished", timeout_ms)
        watchdog.stop()
        wait_for_cluster("npu_bridge_compat: every watchdog stopped", timeout_ms)
    except tf.errors.OpError as error:
        watchdog.stop()
        sys.stderr.write(
            f"npu_bridge_compat: rank {cluster.rank} leaves without seeing every rank finish within "
            f"HCCL_EXEC_TIMEOUT={ranks.exec_timeout_s()} s: {_one_line(error.message)}\n"
        )


def _end_rank(cluster: Cluster, lost: list[tuple[int, str]]) -> None:
    names = "; ".join(f"{cluster.describe(rank)}: {_one_line(reason)}" for rank, reason in lost)
    sys.stdout.flush()
    sys.stderr.write(
        f"npu_bridge_compat: lost {names}. Stopping rank {cluster.rank}: its collectives cannot "
        "complete without every rank.\n"
    )
    sys.stderr.flush()
    if cluster.rank == 0:  # rank 0 hosts the service: let the others read which rank failed before it goes
        time.sleep(3 * POLL_INTERVAL_S)
    os._exit(EXIT_RANK_LOST)


def _one_line(reason: str) -> str:
    """A status message without gRPC's appended debug JSON, on one line."""
    return " ".join(reason.split("Additional GRPC error information")[0].split()).rstrip(".")[:300]


def _report_uncaught_errors(cluster: Cluster) -> None:
    """A rank that dies of an exception says so (naming the rank a failed collective was talking to) and tells
    the others at once; they would otherwise wait for its heartbeats to stop."""
    previous = sys.excepthook

    def report(kind, value, traceback) -> None:
        _failed.set()
        previous(kind, value, traceback)
        peers = _peers_named(str(value), cluster)
        talking = f" talking to {', '.join(cluster.describe(rank) for rank in peers)}" if peers else ""
        sys.stderr.write(
            f"npu_bridge_compat: rank {cluster.rank} failed: {kind.__name__}{talking}"
            f"{', which was probably lost' if peers and issubclass(kind, tf.errors.UnavailableError) else ''}"
            f"{_deadline_note(kind, value, traceback)}{_step_ended_note(kind, value)}.\n"
        )
        try:
            report_error_to_cluster(f"rank {cluster.rank} failed: {kind.__name__}{talking}")
        except (tf.errors.OpError, ValueError):
            pass  # the service is already gone; the others learn from the heartbeats

    changes.replace_attribute(
        sys,
        "excepthook",
        report,
        owner=Owner.RANKS,
        reason="a rank that dies of an exception names itself and its peer, and tells the other ranks at once",
    )


def _deadline_note(kind: type, value: BaseException, traceback) -> str:
    if not issubclass(kind, tf.errors.DeadlineExceededError) or "Operation timed out" not in str(value):
        return ""
    waiting = _collectives_of_failed_run(traceback)
    shown = "; ".join(waiting[:MOST_COLLECTIVES_NAMED]) + (" ..." if len(waiting) > MOST_COLLECTIVES_NAMED else "")
    return (
        f": a session run waited longer than HCCL_EXEC_TIMEOUT={ranks.exec_timeout_s()} s per step, most likely "
        "for a collective that another rank never joined (every rank must run the same collectives in the same "
        f"order){f'; the collectives of its graph: {shown}' if waiting else ''}"
    )


def _step_ended_note(kind: type, value: BaseException) -> str:
    if not issubclass(kind, tf.errors.InternalError) or PEER_LEFT_THE_STEP not in str(value):
        return ""
    return (
        ": that rank ended its step while this collective was still exchanging data with it, most likely because "
        "its input ran out (OutOfRangeError) while a collective that does not depend on the step's input ran in "
        "the same step (a hook's collective fetched with every step, say). A collective cannot finish once one "
        "rank has left its step, and TensorFlow then refuses this rank's later collectives: make it depend on the "
        "step's batch, or run it after the step (a hook's after_run)"
    )


def _collectives_of_failed_run(traceback) -> list[str]:
    """The collectives built in the graph of the session whose run raised (found among the traceback's frames)."""
    while traceback is not None:
        session = traceback.tb_frame.f_locals.get("self")
        if isinstance(session, tf.compat.v1.Session):
            return collectives_of(session.graph)
        traceback = traceback.tb_next
    return []


def _peers_named(message: str, cluster: Cluster) -> list[int]:
    """The other ranks an error message names, by task or by address."""
    named = {int(task) for task in re.findall(rf"/job:{JOB}/(?:replica:0/)?task:(\d+)", message)}
    named |= {slot.rank for slot in cluster.slots if slot.address in message}
    return sorted(rank for rank in named if rank != cluster.rank and rank < cluster.size)
