"""HCCL's groups and collectives (`hccl.manage.api`, `npu_bridge.hccl.hccl_ops`) on TensorFlow's collective runtime.

Each collective is a TensorFlow collective op (CollectiveReduceV2, CollectiveGatherV2, CollectiveBcastSendV2 /
CollectiveBcastRecvV2) between the ranks' servers (see collective_runtime.py); in graph mode it runs in the session
of the rank's door, in eager mode and in traced functions at once. A group of one rank gives the one-rank result
with no collective at all. What the CPU has no kernel for is built from what it has: reduce_scatter is an allreduce
and a slice, reduce an allreduce (every rank, not only the root, gets the result), the all-to-all variants an
allgather and a slice, send/receive a broadcast inside a group of the two ranks.

Keys: keys.py gives every collective the group and instance keys every rank derives alike. A collective carries
no timeout of its own (each would cost a sleeping thread for the whole timeout): a rank's session runs have a
deadline of HCCL_EXEC_TIMEOUT per step, whose error names the collectives of the graph that waited
(`keys.collectives_of`), and a lost rank is found by its missing heartbeats (collective_runtime.py).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence

import tensorflow as tf

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.distributed import collective_runtime, ranks
from npu_bridge_compat.distributed.cluster import current_cluster
from npu_bridge_compat.distributed.keys import WORLD_KEY, instance_key, stable_key
from npu_bridge_compat.distributed.ranks import WORLD_GROUP, RankConfigError

REDUCTIONS = {"sum": "Add", "prod": "Mul", "max": "Max", "min": "Min"}
MAX_GROUP_NAME = 127  # HCCL: 128 bytes with the terminating NUL
# The dtypes TensorFlow's collectives accept; others travel as the carrier type and are cast back.
_REDUCE_TYPES = (tf.bfloat16, tf.float16, tf.float32, tf.float64, tf.int32, tf.int64)
_GATHER_TYPES = (tf.float16, tf.float32, tf.float64, tf.int32, tf.int64)
_BROADCAST_TYPES = (tf.bool, tf.float16, tf.float32, tf.float64, tf.int32, tf.int64)


class CollectiveError(RankConfigError):
    """A collective or group call with arguments HCCL would refuse."""


@dataclasses.dataclass(frozen=True)
class Group:
    name: str
    members: tuple[int, ...]  # world ranks, in group-rank order
    key: int

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def rank(self) -> int:
        """This process's rank in the group."""
        world = ranks.rank_id()
        if world not in self.members:
            raise CollectiveError(
                f"rank {world} is not in group '{self.name}' (ranks {list(self.members)}); only "
                "the group's members can use it"
            )
        return self.members.index(world)

    def check_rank(self, group_rank: int, argument: str) -> int:
        if isinstance(group_rank, bool) or not isinstance(group_rank, int) or not 0 <= group_rank < self.size:
            raise CollectiveError(
                f"{argument}={group_rank!r} must be a rank of group '{self.name}' (0 to {self.size - 1})"
            )
        return group_rank


_lock = threading.Lock()
GROUPS = changes.ProcessState("the HCCL groups created (hccl.manage.api.create_group)", Owner.RANKS, dict)


def find_group(name: str = WORLD_GROUP) -> Group:
    if name == WORLD_GROUP:
        return Group(WORLD_GROUP, tuple(range(ranks.rank_size())), WORLD_KEY)
    groups = changes.state(GROUPS)
    if name not in groups:
        known = ", ".join([WORLD_GROUP, *groups])
        raise CollectiveError(f"group '{name}' does not exist (groups: {known}); create it with create_group")
    return groups[name]


# --- hccl.manage.api ----------------------------------------------------------------------------------------


def create_group(group: str, rank_num: int, rank_ids: Sequence[int]) -> None:
    """A group of the world ranks `rank_ids` (their order gives the group ranks), created by each member."""
    if not isinstance(group, str) or not group or len(group) > MAX_GROUP_NAME:
        raise CollectiveError(f"group name must be a string of 1 to {MAX_GROUP_NAME} characters, got {group!r}")
    if group == WORLD_GROUP:
        raise CollectiveError(f"'{WORLD_GROUP}' exists from the start and cannot be created")
    members = list(rank_ids)
    size = ranks.rank_size()
    if rank_num != len(members):
        raise CollectiveError(f"create_group('{group}'): rank_num={rank_num} but rank_ids has {len(members)} ranks")
    if len(set(members)) != len(members) or not all(isinstance(r, int) and 0 <= r < size for r in members):
        raise CollectiveError(
            f"create_group('{group}'): rank_ids must be distinct ranks from 0 to {size - 1}, got {members}"
        )
    if ranks.rank_id() not in members:
        raise CollectiveError(
            f"create_group('{group}'): rank {ranks.rank_id()} is not in rank_ids {members}; only "
            "the group's members create it"
        )
    with _lock:
        groups = changes.state(GROUPS)
        if group in groups:
            raise CollectiveError(f"group '{group}' already exists")
        groups[group] = Group(group, tuple(members), stable_key(group, tuple(members)))


def destroy_group(group: str) -> None:
    if group == WORLD_GROUP:
        raise CollectiveError(f"'{WORLD_GROUP}' cannot be destroyed")
    find_group(group)  # names the existing groups when it is unknown
    with _lock:
        del changes.state(GROUPS)[group]


def get_rank_size(group: str = WORLD_GROUP) -> int:
    return find_group(group).size


def get_rank_id(group: str = WORLD_GROUP) -> int:
    return find_group(group).rank


def get_local_rank_size(group: str = WORLD_GROUP) -> int:
    """The number of the group's ranks on this host."""
    return len(_local_members(find_group(group)))


def get_local_rank_id(group: str = WORLD_GROUP) -> int:
    """This process's position among the group's ranks on this host."""
    chosen = find_group(group)
    chosen.rank  # noqa: B018 - refuses a rank outside the group
    return _local_members(chosen).index(ranks.rank_id())


def _local_members(chosen: Group) -> list[int]:
    local = set(current_cluster().local_ranks) if ranks.rank_size() > 1 else {0}
    return [rank for rank in chosen.members if rank in local]


def get_world_rank_from_group_rank(group: str, group_rank_id: int) -> int:
    chosen = find_group(group)
    return chosen.members[chosen.check_rank(group_rank_id, "group_rank_id")]


def get_group_rank_from_world_rank(world_rank_id: int, group: str) -> int:
    chosen = find_group(group)
    if world_rank_id not in chosen.members:
        raise CollectiveError(f"world rank {world_rank_id!r} is not in group '{group}' (ranks {list(chosen.members)})")
    return chosen.members.index(world_rank_id)


def all_ranks_true(flag):
    """A boolean tensor: `flag` holds on every rank (one rank's False makes it False everywhere)."""
    return tf.cast(allreduce(tf.cast(flag, tf.int32), "min"), tf.bool)


# --- hccl_ops ------------------------------------------------------------------------------------------------


def _options(chosen: Group, kind: str, value, *details) -> dict:
    """group size and keys of the next collective `kind` of `value` in `chosen`, with the runtime started. No
    timeout of its own: TensorFlow keeps a sleeping thread alive for the whole timeout of every collective that
    has one (a thread per call); the rank's run deadline and the coordination service's
    heartbeats bound the wait instead (collective_runtime.py)."""
    collective_runtime.start()
    return dict(
        group_size=chosen.size,
        group_key=chosen.key,
        instance_key=instance_key(chosen.key, chosen.name, kind, value, *details),
    )


def _carrier(dtype, accepted: tuple):
    """`dtype` itself when TensorFlow's collective accepts it, else the type it travels as."""
    return dtype if dtype in accepted else tf.float32 if dtype.is_floating else tf.int64


def _carried(tensor, accepted: tuple, build):
    """`build(tensor)` with the tensor cast to a dtype TensorFlow's collective accepts, and the result cast back."""
    carrier = _carrier(tensor.dtype, accepted)
    if carrier == tensor.dtype:
        return build(tensor)
    return tf.cast(build(tf.cast(tensor, carrier)), tensor.dtype)


def _reduce(tensor, chosen: Group, reduction: str):
    def build(value):
        options = _options(chosen, "allreduce", value, reduction)
        return tf.raw_ops.CollectiveReduceV2(
            input=value, ordering_token=[], merge_op=REDUCTIONS[reduction], final_op="Id", **options
        )

    return _carried(tensor, _REDUCE_TYPES, build)


def _check_reduction(reduction) -> str:
    if reduction not in REDUCTIONS:
        raise CollectiveError(f"reduction must be one of {', '.join(REDUCTIONS)}, got {reduction!r}")
    return reduction


def _check_rank_size(rank_size, chosen: Group) -> None:
    if rank_size != chosen.size:
        raise CollectiveError(f"rank_size={rank_size!r} but group '{chosen.name}' has {chosen.size} ranks")


def allreduce(tensor, reduction, fusion=1, fusion_id=-1, group=WORLD_GROUP):
    """The element-wise reduction ("sum", "prod", "max", "min") of `tensor` over the group's ranks. Its gradient
    is the sum of the incoming gradients, as the adapter registers it."""
    chosen, reduction = find_group(group), _check_reduction(reduction)
    tensor = tf.convert_to_tensor(tensor)
    if chosen.size == 1:
        return tf.identity(tensor)

    @tf.custom_gradient
    def reduced(value):
        return _reduce(value, chosen, reduction), lambda incoming: _reduce(incoming, chosen, "sum")

    return reduced(tensor)


def reduce(tensor, reduction, root_rank, fusion=0, fusion_id=-1, group=WORLD_GROUP):
    """The reduction of `tensor` for the root rank; built from an allreduce, so every rank receives it."""
    chosen = find_group(group)
    chosen.check_rank(root_rank, "root_rank")
    return allreduce(tensor, reduction, group=group)


def allgather(tensor, rank_size, group=WORLD_GROUP, fusion=0, fusion_id=-1):
    """The ranks' tensors concatenated along axis 0, in group-rank order."""
    chosen = find_group(group)
    _check_rank_size(rank_size, chosen)
    tensor = tf.convert_to_tensor(tensor)
    if tensor.shape.rank == 0:
        tensor = tf.reshape(tensor, [1])
    if chosen.size == 1:
        return tf.identity(tensor)

    def build(value):
        return tf.raw_ops.CollectiveGatherV2(input=value, ordering_token=[], **_options(chosen, "allgather", value))

    return _carried(tensor, _GATHER_TYPES, build)


def broadcast(tensor, root_rank, fusion=2, fusion_id=0, group=WORLD_GROUP):
    """The root rank's tensors on every rank (a list in, a list out, as the adapter's)."""
    chosen = find_group(group)
    chosen.check_rank(root_rank, "root_rank")
    tensors = [tf.convert_to_tensor(t) for t in (tensor if isinstance(tensor, (list, tuple)) else [tensor])]
    if chosen.size == 1:
        return [tf.identity(t) for t in tensors]
    return [_broadcast_one(t, chosen, root_rank) for t in tensors]


def _broadcast_one(tensor, chosen: Group, root_rank: int):
    def build(value):
        options = _options(chosen, "broadcast", value, f"from rank {root_rank}")  # alike on sender and receivers
        if chosen.rank == root_rank:
            return tf.raw_ops.CollectiveBcastSendV2(input=value, **options)
        return tf.raw_ops.CollectiveBcastRecvV2(T=value.dtype, shape=tf.shape(value), **options)

    return _carried(tensor, _BROADCAST_TYPES, build)


def reduce_scatter(tensor, reduction, rank_size, group=WORLD_GROUP, fusion=0, fusion_id=-1):
    """This rank's slice (along axis 0, in group-rank order) of the reduction over the group."""
    chosen, reduction = find_group(group), _check_reduction(reduction)
    _check_rank_size(rank_size, chosen)
    tensor = tf.convert_to_tensor(tensor)
    rows = tensor.shape[0] if tensor.shape.rank else None
    if rows is not None and rows % chosen.size:
        raise CollectiveError(
            f"reduce_scatter: the first dimension ({rows}) must be a multiple of rank_size ({chosen.size})"
        )
    reduced = allreduce(tensor, reduction, group=group)
    return tf.split(reduced, chosen.size, axis=0)[chosen.rank] if chosen.size > 1 else reduced


def _pair_group(chosen: Group, source: int, destination: int, sr_tag: int) -> Group:
    """The two-rank group a send/receive pair with this tag talks in (the sender is its rank 0)."""
    members = (chosen.members[source], chosen.members[destination])
    return Group(f"{chosen.name}/send/{sr_tag}", members, stable_key(chosen.name, members, sr_tag))


def _check_peer(chosen: Group, peer: int, argument: str) -> None:
    chosen.check_rank(peer, argument)
    if peer == chosen.rank:
        raise CollectiveError(f"{argument}={peer} is this rank itself; send and receive pair two different ranks")


def _unshaped(value) -> tf.TensorSpec:
    """`value` for a send/receive pair's key: its dtype alone (the receiver may know the shape only at run time;
    the pair's own group, one per tag, keeps pairs apart)."""
    return tf.TensorSpec(None, value.dtype)


def send(tensor, sr_tag, dest_rank, group=WORLD_GROUP):
    """Sends `tensor` to `dest_rank`, whose `receive` with the same sr_tag gets it; returns the send op."""
    chosen = find_group(group)
    _check_peer(chosen, dest_rank, "dest_rank")
    pair = _pair_group(chosen, chosen.rank, dest_rank, sr_tag)
    sent = _carried(
        tf.convert_to_tensor(tensor),
        _BROADCAST_TYPES,
        lambda value: tf.raw_ops.CollectiveBcastSendV2(input=value, **_options(pair, "send/receive", _unshaped(value))),
    )
    return sent.op


def receive(shape, data_type, sr_tag, src_rank, group=WORLD_GROUP):
    """The tensor `src_rank` sends with the same sr_tag."""
    chosen = find_group(group)
    _check_peer(chosen, src_rank, "src_rank")
    pair = _pair_group(chosen, src_rank, chosen.rank, sr_tag)
    dtype = tf.as_dtype(data_type)
    carrier = _carrier(dtype, _BROADCAST_TYPES)
    options = _options(pair, "send/receive", tf.TensorSpec(None, carrier))
    received = tf.raw_ops.CollectiveBcastRecvV2(T=carrier, shape=tf.cast(shape, tf.int64), **options)
    return tf.cast(received, dtype) if carrier != dtype else received


def all_to_all_v(send_data, send_counts, send_displacements, recv_counts, recv_displacements, group=WORLD_GROUP):
    """Rank i's `send_data[send_displacements[j]:][:send_counts[j]]` lands in rank j's result at
    `recv_displacements[i]` (flat data, element counts)."""
    chosen = find_group(group)
    data = tf.reshape(tf.convert_to_tensor(send_data), [-1])
    counts = _allgather_rows(tf.cast(send_counts, tf.int64), chosen)
    offsets = _allgather_rows(tf.cast(send_displacements, tf.int64), chosen)
    recv_displacements = tf.cast(recv_displacements, tf.int64)
    size = tf.reduce_max(recv_displacements + tf.cast(recv_counts, tf.int64))
    return _exchange(data, chosen, counts[:, chosen.rank], offsets[:, chosen.rank], recv_displacements, size)


def all_to_all_v_c(send_data, send_count_matrix, rank, fusion=0, fusion_id=-1, group=WORLD_GROUP):
    """`send_count_matrix[i][j]` elements go from rank i to rank j; each rank sends its blocks in destination
    order and receives them in source order."""
    chosen = find_group(group)
    chosen.check_rank(rank, "rank")
    data = tf.reshape(tf.convert_to_tensor(send_data), [-1])
    matrix = tf.cast(send_count_matrix, tf.int64)
    counts = matrix[:, chosen.rank]
    offsets = tf.cumsum(matrix, axis=1, exclusive=True)[:, chosen.rank]
    return _exchange(data, chosen, counts, offsets, tf.cumsum(counts, exclusive=True), tf.reduce_sum(counts))


def _allgather_rows(vector, chosen: Group):
    """[size, size]: row i is rank i's vector."""
    return tf.reshape(allgather(vector, chosen.size, group=chosen.name), [chosen.size, -1])


def _exchange(data, chosen: Group, counts, offsets, placements, size):
    """Every rank's flat `data` gathered; from source i, `counts[i]` elements at `offsets[i]`, written at
    `placements[i]` of a result of `size` elements."""
    if chosen.size == 1:
        sources = [data]
    else:  # ranks may send different amounts: pad to the longest before gathering
        length = tf.shape(data, out_type=tf.int64)[0]
        longest = allreduce(length, "max", group=chosen.name)
        padded = tf.pad(data, [[0, longest - length]])
        sources = tf.split(allgather(padded, chosen.size, group=chosen.name), chosen.size)
    values = [tf.slice(source, [offsets[i]], [counts[i]]) for i, source in enumerate(sources)]
    indices = [placements[i] + tf.range(counts[i], dtype=tf.int64) for i in range(chosen.size)]
    return tf.scatter_nd(tf.concat(indices, 0)[:, None], tf.concat(values, 0), tf.reshape(size, [1]))
