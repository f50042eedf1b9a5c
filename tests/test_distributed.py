"""Several ranks, in one process: the rank environment and its errors, cluster descriptions and ports, the
one-rank results of every collective, groups, the distributed optimizers, NPUStrategy and the launcher.
What needs several processes is in test_distributed_ranks.py."""

import ast
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from npu_bridge_compat import changes, distributed
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.distributed import cluster, collectives, keys, launch, ranks
from npu_bridge_compat.distributed.ranks import RankConfigError
from npu_bridge_compat.loss_scale import FixedLossScaleManager, NPULossScaleOptimizer, NPUOptimizer

HERE = Path(__file__).parent
SCRIPTS = HERE / "scripts"
RANK_TABLE = HERE / "data" / "rank_table_2p.json"
v1 = tf.compat.v1
JOB_VARIABLES = (
    "RANK_ID",
    "RANK_SIZE",
    "RANK_TABLE_FILE",
    "DEVICE_ID",
    "ASCEND_DEVICE_ID",
    "CM_CHIEF_IP",
    "CM_CHIEF_PORT",
    "CM_CHIEF_DEVICE",
    "CM_WORKER_SIZE",
    "CM_WORKER_IP",
    "NPU_BRIDGE_COMPAT_PORT",
    "HCCL_CONNECT_TIMEOUT",
    "HCCL_EXEC_TIMEOUT",
)


@pytest.fixture(autouse=True)
def clean_job(monkeypatch, fresh_state):
    """No job environment from the caller's shell; no group left over from another test."""
    for name in JOB_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    fresh_state(collectives.GROUPS)


def set_env(monkeypatch, **values):
    for name, value in values.items():
        monkeypatch.setenv(name, str(value))


# --- ranks ---------------------------------------------------------------------------------------------------


def test_one_rank_by_default():
    assert (ranks.rank_size(), ranks.rank_id(), ranks.device_id()) == (1, 0, None)
    assert (distributed.get_rank_size(), distributed.get_rank_id()) == (1, 0)
    assert (distributed.get_local_rank_size(), distributed.get_local_rank_id()) == (1, 0)
    assert ranks.rank_folders() == []


def test_device_id_follows_the_adapter_ascend_device_id_first(monkeypatch):
    set_env(monkeypatch, DEVICE_ID=3)
    assert ranks.device_id_source() == ("DEVICE_ID", 3)
    set_env(monkeypatch, ASCEND_DEVICE_ID=1)
    assert ranks.device_id_source() == ("ASCEND_DEVICE_ID", 1)


@pytest.mark.parametrize(
    "values, message",
    [
        ({"RANK_SIZE": 2, "CM_WORKER_SIZE": 2}, "RANK_SIZE and CM_WORK_SIZE cannot be configured at the same time"),
        ({"RANK_SIZE": 2}, "RANK_SIZE=2 but RANK_ID is not set"),
        ({"RANK_SIZE": 2, "RANK_ID": 2}, r"RANK_ID=2 is out of range for RANK_SIZE=2 \(0 to 1\)"),
        ({"RANK_SIZE": "two"}, "RANK_SIZE is invalid, should be int, such as 0, 1, 2 \\(got RANK_SIZE='two'\\)"),
        ({"RANK_SIZE": 0}, "RANK_SIZE should be >= 1"),
        ({"ASCEND_DEVICE_ID": "gpu0"}, "ASCEND_DEVICE_ID is invalid, should be int"),
        ({"DEVICE_ID": -1}, "DEVICE_ID should be >= 0"),
    ],
)
def test_bad_rank_environments_are_refused_clearly(monkeypatch, values, message):
    set_env(monkeypatch, **values)
    with pytest.raises(RankConfigError, match=message):
        ranks.rank_id()
        ranks.device_id()


def test_cm_variables_number_the_devices_from_the_chief(monkeypatch):
    set_env(
        monkeypatch,
        CM_CHIEF_IP="127.0.0.1",
        CM_CHIEF_PORT=30100,
        CM_CHIEF_DEVICE=1,
        CM_WORKER_SIZE=3,
        ASCEND_DEVICE_ID=0,
    )
    assert (ranks.rank_size(), ranks.rank_id()) == (3, 2)  # devices 1, 2, 0 are ranks 0, 1, 2
    described = cluster.current_cluster()
    assert [slot.address for slot in described.slots] == ["127.0.0.1:30100", "127.0.0.1:30101", "127.0.0.1:30102"]
    set_env(monkeypatch, CM_WORKER_IP="198.51.100.2")
    with pytest.raises(RankConfigError, match="CM_WORKER_IP=198.51.100.2 is not CM_CHIEF_IP=127.0.0.1: .* rank table"):
        cluster.current_cluster()
    monkeypatch.delenv("CM_WORKER_IP")
    set_env(monkeypatch, RANK_TABLE_FILE=RANK_TABLE)
    with pytest.raises(RankConfigError, match="CM_CHIEF_IP and RANK_TABLE_FILE cannot be configured"):
        ranks.rank_id()
    monkeypatch.delenv("RANK_TABLE_FILE")
    monkeypatch.delenv("CM_CHIEF_PORT")
    with pytest.raises(RankConfigError, match="CM_CHIEF_IP needs CM_CHIEF_PORT and CM_CHIEF_DEVICE"):
        ranks.rank_id()


def test_hccl_timeouts_keep_their_ascend_defaults(monkeypatch):
    assert (ranks.connect_timeout_s(), ranks.exec_timeout_s()) == (120, 1836)
    set_env(monkeypatch, HCCL_CONNECT_TIMEOUT=600, HCCL_EXEC_TIMEOUT=30)
    assert (ranks.connect_timeout_s(), ranks.exec_timeout_s()) == (600, 30)


# --- cluster -------------------------------------------------------------------------------------------------


def test_ranks_of_one_host_talk_over_loopback_on_consecutive_ports(monkeypatch):
    set_env(monkeypatch, RANK_SIZE=3, RANK_ID=1)
    described = cluster.current_cluster()
    assert [slot.address for slot in described.slots] == ["127.0.0.1:29600", "127.0.0.1:29601", "127.0.0.1:29602"]
    assert described.single_host and described.local_rank == 1 and described.me.port == 29601
    assert ranks.rank_folders() == ["rank_1"]
    set_env(monkeypatch, NPU_BRIDGE_COMPAT_PORT=31000)
    assert cluster.current_cluster().me.address == "127.0.0.1:31001"
    set_env(monkeypatch, NPU_BRIDGE_COMPAT_PORT=80)
    with pytest.raises(RankConfigError, match="NPU_BRIDGE_COMPAT_PORT='80' must be a port number from 1024"):
        cluster.current_cluster()


def test_rank_table_gives_devices_and_never_the_npu_card_address(monkeypatch):
    set_env(monkeypatch, RANK_SIZE=2, RANK_ID=1, RANK_TABLE_FILE=RANK_TABLE, DEVICE_ID=1)
    described = cluster.current_cluster()
    assert [(slot.address, slot.device_id) for slot in described.slots] == [
        ("127.0.0.1:29600", 0),
        ("127.0.0.1:29601", 1),
    ]
    assert "203.0.113" not in repr(described)  # device_ip is the NPU's own card
    set_env(monkeypatch, DEVICE_ID=0)
    with pytest.raises(
        RankConfigError, match="RANK_ID=1 has device_id 1 in the rank table .* but this process was given device 0"
    ):
        cluster.current_cluster()


def test_multi_host_rank_table(monkeypatch, tmp_path):
    table = launch.rank_table(["198.51.100.1", "198.51.100.2"], 2)
    path = tmp_path / "table.json"
    path.write_text(json.dumps(table))
    set_env(monkeypatch, RANK_SIZE=4, RANK_ID=3, RANK_TABLE_FILE=path)
    described = cluster.current_cluster()
    assert not described.single_host
    assert [slot.address for slot in described.slots] == [
        "198.51.100.1:29600",
        "198.51.100.1:29601",
        "198.51.100.2:29600",
        "198.51.100.2:29601",
    ]
    assert (described.local_ranks, described.local_rank) == ([2, 3], 1)
    assert (distributed.get_local_rank_size(), distributed.get_local_rank_id()) == (2, 1)
    with pytest.raises(RankConfigError, match="RANK_ID=3 is on server 198.51.100.2 .* not belong to this machine"):
        cluster.check_address_is_local(described)  # binds a socket to the address: nothing is sent


@pytest.mark.parametrize(
    "content, message",
    [
        ("not json", "is not JSON"),
        ({"server_list": []}, 'non-empty "server_list"'),
        ({"server_list": [{"device": []}]}, 'each server needs a "server_id"'),
        (
            {
                "server_list": [
                    {
                        "server_id": "127.0.0.1",
                        "device": [{"device_id": "0", "rank_id": "0"}, {"device_id": "1", "rank_id": "0"}],
                    }
                ]
            },
            "rank_id 0 appears twice",
        ),
        (
            {"server_list": [{"server_id": "127.0.0.1", "device": [{"device_id": "0", "rank_id": "0"}]}]},
            "RANK_SIZE=2 but rank table .* lists 1 devices",
        ),
        (
            {
                "server_list": [
                    {
                        "server_id": "127.0.0.1",
                        "device": [{"device_id": "0", "rank_id": "0"}, {"device_id": "1", "rank_id": "5"}],
                    }
                ]
            },
            r"rank_id values must be 0 to 1, got \[0, 5\]",
        ),
    ],
)
def test_bad_rank_tables_are_refused_clearly(monkeypatch, tmp_path, content, message):
    path = tmp_path / "table.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    set_env(monkeypatch, RANK_SIZE=2, RANK_ID=0, RANK_TABLE_FILE=path)
    with pytest.raises(RankConfigError, match=message):
        cluster.current_cluster()
    set_env(monkeypatch, RANK_TABLE_FILE=tmp_path / "absent.json")
    with pytest.raises(RankConfigError, match="cannot be read: No such file"):
        cluster.current_cluster()


# --- one rank: collectives, groups, optimizers -----------------------------------------------------------------


def test_one_rank_collectives_give_one_rank_results():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    for reduction in ("sum", "prod", "max", "min"):
        np.testing.assert_array_equal(distributed.allreduce(x, reduction).numpy(), x.numpy())
    np.testing.assert_array_equal(distributed.allgather(x, 1).numpy(), x.numpy())
    assert distributed.allgather(tf.constant(5), 1).numpy().tolist() == [5]
    assert [t.numpy().tolist() for t in distributed.broadcast([x, tf.constant(1)], 0)] == [x.numpy().tolist(), 1]
    np.testing.assert_array_equal(distributed.reduce(x, "sum", 0).numpy(), x.numpy())
    np.testing.assert_array_equal(distributed.reduce_scatter(x, "sum", 1).numpy(), x.numpy())
    data = tf.constant([1.0, 2.0, 3.0, 4.0])
    assert distributed.all_to_all_v(data, [2], [1], [2], [1]).numpy().tolist() == [0.0, 2.0, 3.0]
    assert distributed.all_to_all_v_c(data, [[3]], 0).numpy().tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: distributed.allreduce(tf.ones([2]), "avg"), "reduction must be one of sum, prod, max, min, got 'avg'"),
        (lambda: distributed.allgather(tf.ones([2]), 8), "rank_size=8 but group 'hccl_world_group' has 1 ranks"),
        (lambda: distributed.broadcast([tf.ones([2])], 1), r"root_rank=1 must be a rank of group .* \(0 to 0\)"),
        (lambda: distributed.send(tf.ones([2]), 0, 0), "dest_rank=0 is this rank itself"),
        (lambda: distributed.receive([2], tf.float32, 0, 3), "src_rank=3 must be a rank of group"),
        (lambda: distributed.allreduce(tf.ones([2]), "sum", group="mine"), "group 'mine' does not exist"),
        (lambda: distributed.npu_allreduce([tf.ones([2])], "avg"), "npu_allreduce reduction must be mean"),
        (lambda: distributed.set_split_strategy_by_idx([20, 5]), "ascending gradient indices"),
        (lambda: distributed.set_split_strategy_by_size([60, 20]), "percentages summing to 100"),
    ],
)
def test_bad_collective_arguments_are_refused_clearly(call, message):
    with pytest.raises(collectives.CollectiveError, match=message):
        call()


def test_groups_and_rank_conversions(monkeypatch):
    set_env(monkeypatch, RANK_SIZE=4, RANK_ID=2)
    distributed.create_group("evens", 2, [0, 2])
    assert (distributed.get_rank_size("evens"), distributed.get_rank_id("evens")) == (2, 1)
    assert distributed.get_world_rank_from_group_rank("evens", 1) == 2
    assert distributed.get_group_rank_from_world_rank(0, "evens") == 0
    assert (distributed.get_local_rank_size("evens"), distributed.get_local_rank_id("evens")) == (2, 1)
    for call, message in [
        (lambda: distributed.create_group("evens", 2, [0, 2]), "group 'evens' already exists"),
        (lambda: distributed.create_group("odds", 2, [1, 3]), "rank 2 is not in rank_ids"),
        (lambda: distributed.create_group("three", 2, [0, 1, 2]), "rank_num=2 but rank_ids has 3 ranks"),
        (lambda: distributed.create_group("far", 2, [2, 9]), "rank_ids must be distinct ranks from 0 to 3"),
        (lambda: distributed.create_group("x" * 128, 1, [2]), "group name must be a string of 1 to 127"),
        (lambda: distributed.create_group("hccl_world_group", 1, [2]), "exists from the start"),
        (lambda: distributed.destroy_group("hccl_world_group"), "cannot be destroyed"),
        (lambda: distributed.get_group_rank_from_world_rank(1, "evens"), "world rank 1 is not in group 'evens'"),
        (lambda: distributed.get_world_rank_from_group_rank("evens", 2), "group_rank_id=2 must be a rank"),
    ]:
        with pytest.raises(collectives.CollectiveError, match=message):
            call()
    distributed.destroy_group("evens")
    with pytest.raises(collectives.CollectiveError, match="group 'evens' does not exist"):
        distributed.get_rank_size("evens")


def test_one_rank_optimizers_leave_gradients_as_they_are():
    with tf.Graph().as_default():
        w = v1.get_variable("w", initializer=[1.0, 2.0])
        loss = tf.reduce_sum(w * w)
        optimizer = distributed.NPUDistributedOptimizer(v1.train.GradientDescentOptimizer(0.1))
        assert (
            isinstance(optimizer, v1.train.Optimizer) and optimizer.get_name() == "DistributedGradientDescentOptimizer"
        )
        ((gradient, variable),) = optimizer.compute_gradients(loss)
        assert variable is w and gradient.op.type != "CollectiveReduceV2"
        wrapped = v1.train.AdamOptimizer()
        assert distributed.npu_distributed_optimizer_wrapper(wrapped) is wrapped
    assert distributed.npu_allreduce([tf.constant([2.0])])[0].numpy().tolist() == [2.0]
    assert distributed.npu_allreduce(tf.constant([2.0]), "max").numpy().tolist() == [2.0]
    keras = tf.keras.optimizers.SGD(0.1)
    assert distributed.KerasDistributeOptimizer(keras) is keras
    assert isinstance(distributed.npu_keras_optimizer("sgd"), tf.keras.optimizers.Optimizer)


def test_several_ranks_build_tensorflow_collectives_with_distinct_keys(monkeypatch):
    """The ops are built without running: each gradient is averaged with an allreduce and IndexedSlices are
    allgathered, each collective with its own instance key."""
    set_env(monkeypatch, RANK_SIZE=2, RANK_ID=1, HCCL_EXEC_TIMEOUT=77)
    monkeypatch.setattr(distributed.collective_runtime, "start", lambda: None)  # building needs no server
    with tf.Graph().as_default():
        w = v1.get_variable("w", initializer=[1.0, 2.0])
        table = v1.get_variable("table", initializer=tf.ones([4, 2]))
        loss = tf.reduce_sum(w * w) + tf.reduce_sum(tf.gather(table, [1, 3]))
        optimizer = distributed.NPUDistributedOptimizer(v1.train.GradientDescentOptimizer(0.1))
        gradients = dict((v.op.name, g) for g, v in optimizer.compute_gradients(loss))
        assert isinstance(gradients["table"], tf.IndexedSlices)
        graph = tf.compat.v1.get_default_graph()
        collective_ops = [op for op in graph.get_operations() if op.type.startswith("Collective")]
        assert sorted(op.type for op in collective_ops) == [
            "CollectiveGatherV2",
            "CollectiveGatherV2",
            "CollectiveReduceV2",
        ]
        assert all(op.get_attr("timeout_seconds") == 0 for op in collective_ops)  # each would cost a thread
        keys = [int(tf.get_static_value(op.inputs[3])) for op in collective_ops]  # instance keys, per group
        assert len(set(keys)) == 3
        with pytest.raises(collectives.CollectiveError, match="The number of gradients is less than rank_size"):
            distributed.NPUDistributedOptimizer(v1.train.GradientDescentOptimizer(0.1), True).compute_gradients(
                tf.reduce_sum(table), var_list=[table]
            )


def test_dense_gradients_travel_fused_where_hccl_split_strategy_cuts(monkeypatch, fresh_state):
    set_env(monkeypatch, RANK_SIZE=2, RANK_ID=0)
    monkeypatch.setattr(distributed.collective_runtime, "start", lambda: None)
    fresh_state(distributed.optimizers.SPLIT_STRATEGIES)

    def reduced_sizes():
        with tf.Graph().as_default():
            weights = [v1.get_variable(f"w{i}", shape=[size]) for i, size in enumerate([10, 30, 20, 40])]
            loss = tf.add_n([tf.reduce_sum(w * w) for w in weights])
            distributed.NPUDistributedOptimizer(v1.train.GradientDescentOptimizer(0.1)).compute_gradients(loss)
            return [
                op.inputs[0].shape.num_elements()
                for op in v1.get_default_graph().get_operations()
                if op.type == "CollectiveReduceV2"
            ]

    assert reduced_sizes() == [100]  # one allreduce for all four gradients
    distributed.set_split_strategy_by_idx([0, 2])
    assert reduced_sizes() == [10, 50, 40]
    distributed.set_split_strategy_by_size([40, 60])
    assert reduced_sizes() == [40, 60]


def test_distributed_loss_scaling_skips_a_step_on_every_rank(monkeypatch):
    """With is_distributed the finite flag is the minimum over the ranks (one rank's overflow skips everyone's
    step); NPUOptimizer(is_distributed=True) also averages the gradients."""
    set_env(monkeypatch, RANK_SIZE=2, RANK_ID=0)
    monkeypatch.setattr(distributed.collective_runtime, "start", lambda: None)
    with tf.Graph().as_default():
        w = v1.get_variable("w", initializer=[1.0])
        optimizer = NPUOptimizer(
            v1.train.GradientDescentOptimizer(0.1), FixedLossScaleManager(8), is_distributed=True, is_loss_scale=True
        )
        assert isinstance(optimizer, NPULossScaleOptimizer)
        optimizer.minimize(tf.reduce_sum(w))
        merges = sorted(
            op.get_attr("merge_op").decode()
            for op in v1.get_default_graph().get_operations()
            if op.type == "CollectiveReduceV2"
        )
        assert merges == ["Add", "Min"]


def test_broadcast_hook_and_callback_do_nothing_with_one_rank():
    hooks = distributed.npu_hooks_append()
    assert isinstance(hooks[0], distributed.NPUBroadcastGlobalVariablesHook)
    with tf.Graph().as_default():
        v1.get_variable("w", initializer=[1.0])
        hooks[0].begin()
        assert not [op for op in v1.get_default_graph().get_operations() if op.type.startswith("Collective")]
    callbacks = distributed.npu_callbacks_append([])
    assert isinstance(callbacks[0], distributed.NPUBroadcastGlobalVariablesCallback)


def test_npu_strategy_shards_datasets_by_rank(monkeypatch):
    set_env(monkeypatch, RANK_SIZE=3, RANK_ID=1)
    strategy = distributed.NPUStrategy()
    assert strategy.num_replicas_in_sync == 3
    shard = strategy.experimental_distribute_dataset(tf.data.Dataset.range(9))
    assert [int(x) for x in shard] == [1, 4, 7]


def test_each_rank_gets_the_gpu_of_its_device_id(monkeypatch):
    chosen = []
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind: ["gpu0", "gpu1"])
    monkeypatch.setattr(tf.config, "set_visible_devices", lambda devices, kind: chosen.append(devices))

    def select() -> changes.Change:
        """One rank's choice, in a process (a registry) of its own: TensorFlow takes it once, and it cannot be
        undone."""
        registry = changes.Registry()
        monkeypatch.setattr(changes, "change_irreversibly", registry.change_irreversibly)
        distributed.collective_runtime._select_gpu(cluster.current_cluster())
        [change] = registry.in_force()
        return change

    set_env(monkeypatch, RANK_SIZE=3, RANK_ID=1)
    first = select()  # no device id: its position on the host
    assert (first.target, first.irreversible, first.owner) == ("TensorFlow's visible GPUs", True, Owner.RANKS)
    set_env(monkeypatch, ASCEND_DEVICE_ID=0)
    select()
    with pytest.raises(changes.ChangeConflict, match="visible GPUs: ranks set it to 'GPU 0'; ranks asked for 'GPU 1'"):
        set_env(monkeypatch, ASCEND_DEVICE_ID=1)
        distributed.collective_runtime._select_gpu(cluster.current_cluster())  # a second choice in the same process
    set_env(monkeypatch, ASCEND_DEVICE_ID=5)
    with pytest.warns(UserWarning, match="rank 1 .* asks for GPU 5, but this host has 2; it runs on the CPU"):
        select()
    assert chosen == [["gpu1"], ["gpu0"], []]


@pytest.mark.starts_processes
def test_eager_collectives_set_up_too_late_are_refused_clearly():
    code = "import tensorflow as tf; from npu_bridge_compat import distributed; tf.constant(1.0); distributed.start()"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RANK_SIZE": "2", "RANK_ID": "0"},
    )
    assert result.returncode == 1
    assert (
        "RANK_SIZE=2: the collectives of several ranks must be set up before TensorFlow runs anything eagerly"
        in result.stderr
    )


def test_ranks_derive_alike_instance_keys_whatever_each_built_before(monkeypatch):
    """Keys come from what a collective is and its place among alike ones in its graph (nested functions count
    with it), so a collective one rank built in another graph (a rank-0-only op) shifts nothing."""
    set_env(monkeypatch, RANK_SIZE=2, RANK_ID=0)
    world = collectives.find_group()

    def graph_keys(extra_before: bool) -> tuple[list[int], list[str]]:
        if extra_before:
            with tf.Graph().as_default():
                keys.instance_key(world.key, world.name, "allreduce", tf.zeros([2]), "sum")
        with tf.Graph().as_default() as graph:
            vector, scalar = tf.zeros([2]), tf.zeros([])
            found_keys = [
                keys.instance_key(world.key, world.name, "allreduce", value, "sum")
                for value in (vector, vector, scalar)
            ]
            found_keys.append(keys.instance_key(world.key, world.name, "allreduce", vector, "max"))
            found_keys.append(keys.instance_key(world.key, world.name, "allgather", vector))

            @tf.function
            def nested():  # runs in the same step as the graph's own collectives
                found_keys.append(keys.instance_key(world.key, world.name, "allreduce", tf.zeros([2]), "sum"))
                return 0

            nested.get_concrete_function()
            return found_keys, keys.collectives_of(graph)

    found_keys, described = graph_keys(extra_before=False)
    assert graph_keys(extra_before=True)[0] == found_keys
    assert len(set(found_keys)) == len(found_keys)
    assert described[2] == f"allreduce sum of float32[] in group 'hccl_world_group' (instance key {found_keys[2]})"
    assert len(described) == 6


# --- launch --------------------------------------------------------------------------------------------------


def run_launch(*arguments, timeout=240, **kwargs):
    return subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "launch", *arguments],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


@pytest.mark.starts_processes
def test_launch_gives_each_rank_its_environment_and_prefixes_its_output(tmp_path):
    script = tmp_path / "show.py"
    script.write_text(
        textwrap.dedent("""
        import json, os, sys
        table = json.load(open(os.environ["RANK_TABLE_FILE"]))
        print(json.dumps({name: os.environ[name] for name in ("RANK_ID", "RANK_SIZE", "DEVICE_ID",
                          "ASCEND_DEVICE_ID", "NPU_BRIDGE_COMPAT_PORT")}), sys.argv[1:], __name__)
        print(json.dumps(table["server_list"]))
    """)
    )
    result = run_launch("-n", "2", str(script), "--lr", "0.1", env={**os.environ, "RANK_ID": "7", "CM_CHIEF_IP": "x"})
    assert result.returncode == 0, result.stderr[-3000:]
    lines = sorted(line for line in result.stdout.splitlines() if line.startswith("[rank"))
    assert len(lines) == 4
    seen = {}
    for line in lines:
        prefix, _, text = line.partition("] ")
        if text.startswith("{"):
            values = json.loads(text[: text.index("}") + 1])
            assert text.endswith("['--lr', '0.1'] __main__")
            seen[prefix] = values
        else:
            assert json.loads(text) == [
                {
                    "server_id": "127.0.0.1",
                    "device": [{"device_id": "0", "rank_id": "0"}, {"device_id": "1", "rank_id": "1"}],
                }
            ]
    assert [(v["RANK_ID"], v["RANK_SIZE"], v["DEVICE_ID"], v["ASCEND_DEVICE_ID"]) for v in seen.values()] == [
        ("0", "2", "0", "0"),
        ("1", "2", "1", "1"),
    ]
    assert seen["[rank 0"]["NPU_BRIDGE_COMPAT_PORT"] == seen["[rank 1"]["NPU_BRIDGE_COMPAT_PORT"]


@pytest.mark.starts_processes
def test_launch_stops_every_rank_when_one_fails(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text(
        textwrap.dedent("""
        import os, sys, time
        print("pid", os.getpid(), flush=True)
        if os.environ["RANK_ID"] == "1":
            time.sleep(2)
            sys.exit(3)
        time.sleep(600)
    """)
    )
    started = time.monotonic()
    result = run_launch("-n", "3", str(script))
    assert result.returncode == 3 and time.monotonic() - started < 120
    assert "launch: rank 1 exited with status 3; stopping the other ranks" in result.stderr
    assert "rank 0 was killed by SIGTERM" not in result.stderr  # stopped ranks are not failures of their own
    pids = [int(line.split()[-1]) for line in result.stdout.splitlines() if " pid " in line]
    assert len(pids) == 3 and not [pid for pid in pids if Path(f"/proc/{pid}").exists()]


@pytest.mark.starts_processes
def test_launch_refuses_bad_arguments(tmp_path):
    assert "no such script" in run_launch("-n", "2", str(tmp_path / "absent.py")).stderr
    script = tmp_path / "ok.py"
    script.write_text("")
    result = run_launch("-n", "2", "--hosts", "198.51.100.1,198.51.100.2", str(script))
    assert result.returncode == 2 and "none of them is an address of this machine; give --host-index" in result.stderr
    assert (
        "--host-index 5 is out of range for 2 hosts"
        in run_launch("-n", "2", "--hosts", "198.51.100.1,198.51.100.2", "--host-index", "5", str(script)).stderr
    )
    assert "-n must be at least 1" in run_launch("-n", "0", str(script)).stderr


def test_free_port_block_is_free():
    first = launch.free_port_block(3, start=40000)
    assert all(launch._port_is_free(port) for port in range(first, first + 3))


# --- what TensorFlow 2.15 cannot do ---------------------------------------------------------------------------

# 127.0.0.1, ::1 and ::ffff:127.0.0.1, as /proc/net/tcp{,6} write them
LOOPBACK_PREFIXES = ("0100007F:", "00000000000000000000000001000000:", "0000000000000000FFFF00000100007F:")


def tcp_sockets(pid: int) -> list[tuple[str, str, str]]:
    """(state, local address, remote address) of process `pid`'s TCP sockets, as /proc/net/tcp{,6} writes them
    (hex address:port; state 0A is LISTEN, 01 ESTABLISHED)."""
    sockets = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            sockets.add(target[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in sockets:
                found.append((fields[3], fields[1], fields[2]))
    return found


def listening_addresses(pid: int) -> list[str]:
    return [local for state, local, _ in tcp_sockets(pid) if state == "0A"]


def network_of_ranks(*arguments: str) -> dict[int, dict]:
    result = run_launch(*arguments, "-n", "2", str(SCRIPTS / "dist_network_port.py"), timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return {
        report["rank"]: report
        for report in (json.loads(line.split("] ", 1)[1]) for line in result.stdout.splitlines() if '{"rank"' in line)
    }


USER_NAMESPACES = (
    shutil.which("unshare") is not None
    and subprocess.run(["unshare", "--user", "--map-root-user", "--net", "true"], capture_output=True).returncode == 0
)


@pytest.mark.starts_processes
@pytest.mark.skipif(not USER_NAMESPACES, reason="this system refuses user network namespaces (launch then says so)")
def test_a_single_host_job_is_reachable_over_loopback_only():
    """TensorFlow's servers listen on every interface of their network (grpc_server_lib.cc binds 0.0.0.0): launch
    runs one host's ranks in a network of their own whose only interface is loopback."""
    ranks = network_of_ranks()
    assert sorted(ranks) == [0, 1]
    assert ranks[0]["netns"] == ranks[1]["netns"] != os.readlink("/proc/self/ns/net")  # one network, not ours
    assert all(report["interfaces"] == ["lo"] for report in ranks.values())
    on_host = network_of_ranks("--host-network")  # on purpose, for scripts that reach other machines
    assert all(report["netns"] == os.readlink("/proc/self/ns/net") for report in on_host.values())


def test_the_modules_of_distributed_import_each_other_without_a_loop():
    """Imports inside functions count: a loop hidden in one is a loop still."""
    package = HERE.parent / "npu_bridge_compat" / "distributed"
    imports = {}
    for path in package.glob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("npu_bridge_compat.distributed"):
                names = [node.module.split(".")[2]] if node.module.count(".") >= 2 else [a.name for a in node.names]
                found.update(name for name in names if (package / f"{name}.py").is_file())
        imports[path.stem] = found - {path.stem}

    def loop_from(module: str, path: tuple[str, ...]) -> tuple[str, ...] | None:
        for imported in sorted(imports.get(module, ())):
            if imported in path:
                return (*path[path.index(imported) :], imported)
            found = loop_from(imported, (*path, imported))
            if found:
                return found
        return None

    loops = {module: loop_from(module, (module,)) for module in imports if module != "__init__"}
    assert not any(loops.values()), {module: " -> ".join(loop) for module, loop in loops.items() if loop}


def test_a_rank_cut_off_by_a_peer_that_left_its_step_is_told_why():
    """A collective fetched with the step in which the input runs out: the rank whose step ends first frees its
    buffers while the other still receives; that rank's error says what happened and what to change."""
    cut_off = tf.errors.InternalError(
        None, None, "Collective ops is aborted by: Delete called on non-empty BufRendezvous\nAdditional GRPC ..."
    )
    note = distributed.collective_runtime._step_ended_note(type(cut_off), cut_off)
    assert note.startswith(": that rank ended its step while this collective was still exchanging data with it")
    assert "run it after the step (a hook's after_run)" in note
    other = tf.errors.InternalError(None, None, "Collective ops is aborted by: something else")
    assert distributed.collective_runtime._step_ended_note(type(other), other) == ""
