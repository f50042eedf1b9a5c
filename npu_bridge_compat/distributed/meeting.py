"""The meeting point where ranks whose launcher names no other rank's host (MPI, torchrun-style) exchange their
addresses, as torchrun's TCP store and Horovod's rendezvous do: rank 0 listens at MASTER_ADDR:MASTER_PORT, every
other rank connects and says its rank and port, rank 0 answers each with every rank's address, and the meeting
ends. Addresses only: TensorFlow's own servers and coordination service take over from there.

A rank's address is the one its connection to the meeting came from (the interface that reaches rank 0's host);
rank 0's is the one the others reached. Everything is bounded by HCCL_CONNECT_TIMEOUT: a rank that cannot reach the
meeting, or a meeting missing ranks, ends with an error naming MASTER_ADDR:MASTER_PORT and the missing ranks.
"""

from __future__ import annotations

import collections
import json
import socket
import time

from npu_bridge_compat.distributed.schedulers import Place, SchedulerRanks
from npu_bridge_compat.distributed.variables import RankConfigError

RETRY_S = 0.2
VERDICT_GRACE_S = 5  # a rank waits this much past its own deadline for rank 0's answer, which may be an error
MOST_BYTES = 1 << 20


def exchange(found: SchedulerRanks, timeout_s: float) -> tuple[Place, ...]:
    """Every rank's place, in rank order, once all `found.size` ranks met (or RankConfigError)."""
    assert found.meeting is not None
    if found.rank == 0:
        return _host(found, time.monotonic() + timeout_s, timeout_s)
    return _join(found, time.monotonic() + timeout_s, timeout_s)


def _where(found: SchedulerRanks) -> str:
    return f"the meeting point MASTER_ADDR:MASTER_PORT = {found.meeting.address} ({found.variables})"


def _host(found: SchedulerRanks, deadline: float, timeout_s: float) -> tuple[Place, ...]:
    meeting = found.meeting
    try:
        listener = socket.create_server((_bind_address(meeting.host), meeting.port), reuse_port=False)
    except OSError as error:
        raise RankConfigError(f"rank 0 cannot listen at {_where(found)}: {error.strerror}") from None
    arrived: dict[int, tuple[socket.socket, Place, int]] = {}
    try:
        listener.settimeout(RETRY_S)
        while len(arrived) < found.size - 1:
            if time.monotonic() > deadline:
                missing = sorted(set(range(1, found.size)) - set(arrived))
                message = (
                    f"rank 0 waited {timeout_s:g} s (HCCL_CONNECT_TIMEOUT) at {_where(found)} and rank"
                    f"{'s' * (len(missing) > 1)} {', '.join(map(str, missing))} never arrived"
                )
                for connection, _, _ in arrived.values():
                    _send(connection, {"error": message})
                raise RankConfigError(message)
            try:
                connection, (peer, _) = listener.accept()
            except TimeoutError:
                continue
            hello = _read_line(connection, deadline, f"a rank connecting from {peer}", found)
            rank, size, port = hello.get("rank"), hello.get("size"), hello.get("port")
            if size != found.size or not isinstance(rank, int) or not 0 < rank < found.size or rank in arrived:
                problem = f"says it is rank {rank} of {size}"
                _send(connection, {"error": f"rank 0 of {found.size} refused it: it {problem}"})
                connection.close()
                raise RankConfigError(
                    f"at {_where(found)}, a process from {peer} {problem}, but this job has {found.size} ranks"
                    f"{f' and rank {rank} already arrived' if rank in arrived else ''}"
                )
            arrived[rank] = (connection, Place(peer, int(port)), connection.getsockname()[0])
        own = collections.Counter(local for _, _, local in arrived.values()).most_common(1)[0][0]
        places = (Place(own, found.port), *(arrived[rank][1] for rank in range(1, found.size)))
        answer = {"places": [[place.host, place.port] for place in places]}
        for connection, _, _ in arrived.values():
            _send(connection, answer)
        return places
    finally:
        for connection, _, _ in arrived.values():
            connection.close()
        listener.close()


def _bind_address(host: str) -> str:
    """The meeting host's address when it belongs to this machine (binding tells, sending nothing), else every
    interface (a name that resolves elsewhere, such as a Kubernetes service's)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind((host, 0))
        return host
    except OSError:
        return ""


def _join(found: SchedulerRanks, deadline: float, timeout_s: float) -> tuple[Place, ...]:
    meeting, last_error = found.meeting, "no answer"
    while True:
        try:
            connection = socket.create_connection((meeting.host, meeting.port), timeout=RETRY_S * 5)
            break
        except OSError as error:
            last_error = error.strerror or str(error)
        if time.monotonic() > deadline:
            raise RankConfigError(
                f"rank {found.rank} could not reach {_where(found)} within {timeout_s:g} s (HCCL_CONNECT_TIMEOUT): "
                f"{last_error}; rank 0 must run on MASTER_ADDR's host"
            )
        time.sleep(RETRY_S)
    with connection:
        _send(connection, {"rank": found.rank, "size": found.size, "port": found.port})
        answer = _read_line(connection, deadline + VERDICT_GRACE_S, "rank 0", found)
    if "error" in answer:
        raise RankConfigError(f"rank {found.rank} met rank 0, which ended the meeting: {answer['error']}")
    return tuple(Place(str(host), int(port)) for host, port in answer["places"])


def _send(connection: socket.socket, message: dict) -> None:
    connection.sendall(json.dumps(message).encode() + b"\n")


def _read_line(connection: socket.socket, deadline: float, who: str, found: SchedulerRanks) -> dict:
    """One JSON line from `who`, before the deadline."""
    received = b""
    while not received.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or len(received) > MOST_BYTES:
            raise RankConfigError(f"{who} sent no complete answer at {_where(found)} in time")
        connection.settimeout(left)
        try:
            chunk = connection.recv(65536)
        except TimeoutError:
            continue
        except OSError as error:
            raise RankConfigError(f"{who} at {_where(found)}: {error.strerror}") from None
        if not chunk:
            raise RankConfigError(f"{who} closed the connection at {_where(found)} before the ranks had met")
        received += chunk
    try:
        message = json.loads(received)
    except json.JSONDecodeError:
        raise RankConfigError(f"{who} at {_where(found)} does not speak npu_bridge_compat's meeting") from None
    if not isinstance(message, dict):
        raise RankConfigError(f"{who} at {_where(found)} does not speak npu_bridge_compat's meeting")
    return message
