"""The session door: NPUSession, the ConfigProto helpers, set_iteration_per_loop, host-kept ops."""

import numpy as np
import pytest
import tensorflow as tf
from helpers import config_with, npu_config

from npu_bridge_compat import NpuOptionValueError, scope, session, util
from npu_bridge_compat.compat import tf1_keras_api
from npu_bridge_compat.errors import NpuCompatWarning
from npu_bridge_compat.plan import HostFacts
from npu_bridge_compat.session import NPUSession, host_session_config, npu_config_proto

v1 = tf.compat.v1
v1_layers = tf1_keras_api("layers")  # Keras 2: tf_keras with Keras 3
FEATURES = np.arange(64 * 4, dtype=np.float32).reshape(64, 4) / 100.0
LABELS = FEATURES.sum(axis=1, keepdims=True)


@pytest.fixture(params=["resource", "ref"])
def variable_kind(request):
    """Both worlds: TF2-behaviour graphs (resource variables, control flow v2), and the TF1 world of ported
    scripts after disable_v2_behavior (ref variables, control flow v1)."""
    if request.param == "ref":
        v1.disable_resource_variables()
        v1.disable_control_flow_v2()
    yield request.param
    v1.enable_resource_variables()
    v1.enable_control_flow_v2()


def build_model(batch=4, optimizer=None):
    """A dataset-fed linear model; returns the pieces a session script holds."""
    iterator = v1.data.make_initializable_iterator(
        tf.data.Dataset.from_tensor_slices((FEATURES, LABELS)).repeat().batch(batch)
    )
    features, labels = iterator.get_next()
    weights = v1.get_variable("weights", [4, 1], initializer=v1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(features, weights) - labels))
    global_step = v1.train.get_or_create_global_step()
    train_op = (optimizer or v1.train.GradientDescentOptimizer(0.1)).minimize(loss, global_step=global_step)
    init = [v1.global_variables_initializer(), v1.local_variables_initializer(), iterator.initializer]
    return dict(features=features, weights=weights, loss=loss, global_step=global_step, train_op=train_op, init=init)


# --- NPUSession and helpers --------------------------------------------------------------------------------


@pytest.mark.starts_processes
def test_npusession_runs_with_the_translated_config(avx512_host):
    with tf.Graph().as_default():
        model = build_model()
        with NPUSession(config=config_with(precision_mode="allow_mix_precision")) as sess:
            rewrite = sess._config.graph_options.rewrite_options
            assert [e.name for e in rewrite.custom_optimizers] == [] and list(rewrite.optimizers) == []
            assert rewrite.auto_mixed_precision_onednn_bfloat16 == 1 and rewrite.remapping == 2
            sess.run(model["init"])
            sess.run(model["train_op"])
            step = sess.make_callable(model["global_step"])
            assert step() == 1
            assert sess.npu_plan.report.entry("precision_mode").effect == "approximated"


def test_invalid_options_fail_when_the_session_is_created():
    with tf.Graph().as_default(), pytest.raises(NpuOptionValueError, match='"iterations_per_loop" must be 1'):
        NPUSession(config=config_with(mix_compile_mode=True, iterations_per_loop=4))


def test_partial_run_and_close():
    with tf.Graph().as_default():
        a = v1.placeholder(tf.float32, [])
        b = a * 2
        c = b + 1
        sess = NPUSession(config=config_with())
        handle = sess.partial_run_setup([b, c], [a])
        assert sess.partial_run(handle, b, feed_dict={a: 3.0}) == 6.0
        assert sess.partial_run(handle, c) == 7.0
        session.close_session(sess)
        assert sess._closed


@pytest.mark.starts_processes
def test_host_session_config_serves_monitored_and_interactive_sessions():
    with tf.Graph().as_default():
        model = build_model()
        config = host_session_config(config_with(graph_run_mode=1))
        assert config.graph_options.rewrite_options.custom_optimizers == []
        scaffold = v1.train.Scaffold(local_init_op=tf.group(v1.local_variables_initializer(), *model["init"][2:]))
        with v1.train.MonitoredTrainingSession(config=config, scaffold=scaffold) as sess:
            sess.run(model["train_op"])
            assert sess.run(model["global_step"]) == 1
    with tf.Graph().as_default():
        interactive = v1.InteractiveSession(config=host_session_config(config_with()))
        assert tf.constant(2).eval() == 2
        interactive.close()


def test_npu_config_proto_helpers_match_the_adapter():
    config = npu_config_proto(npu_config_proto(v1.ConfigProto()))
    rewrite = config.graph_options.rewrite_options
    assert [entry.name for entry in rewrite.custom_optimizers] == ["NpuOptimizer"]
    assert config.allow_soft_placement and not config.log_device_placement
    assert rewrite.remapping == 2 and config.graph_options.optimizer_options.global_jit_level == -1
    assert session.npu_graph_options().optimizer_options.global_jit_level == -1
    assert session.npu_optimizer_options().global_jit_level == -1


@pytest.mark.needs_estimator
def test_npu_run_config_init_translates_a_plain_run_config(avx512_host):
    run_config = tf.estimator.RunConfig(session_config=npu_config({"precision_mode": "allow_mix_precision"}))
    converted = session.npu_run_config_init(run_config)
    rewrite = converted.session_config.graph_options.rewrite_options
    assert rewrite.custom_optimizers == [] and rewrite.auto_mixed_precision_onednn_bfloat16 == 1


def test_resources_and_ranks(monkeypatch):
    monkeypatch.setenv("RANK_ID", "0")
    monkeypatch.setenv("RANK_SIZE", "1")
    with tf.Graph().as_default():
        sess, shutdown = session.init_resource(config_with())
        session.shutdown_resource(sess, shutdown)
        session.close_session(sess)
    assert (session.get_npu_rank_id(), session.get_npu_rank_size(), session.get_npu_local_rank_id()) == (0, 1, 0)
    assert isinstance(session.NpuEmptyHook(), v1.train.SessionRunHook)


# --- iterations per loop -----------------------------------------------------------------------------------


@pytest.mark.starts_processes
def test_one_run_of_the_looped_op_runs_n_steps(variable_kind):
    with tf.Graph().as_default():
        model = build_model()
        with NPUSession(config=config_with(iterations_per_loop=5)) as sess:
            sess.run(model["init"])
            looped = util.set_iteration_per_loop(sess, model["train_op"], 5)
            assert looped.name == "npu_iterations_per_loop/IterationOp"
            sess.run(looped)
            assert sess.run(model["global_step"]) == 5
            _, features, step = sess.run([looped, model["features"], model["global_step"]])
            # the fetched batch is the last iteration's: batches 5..9 were consumed, the 10th is rows 36..39
            np.testing.assert_array_equal(features, FEATURES[36:40])
            assert sess.run(model["global_step"]) == 10


@pytest.mark.starts_processes
def test_looped_training_equals_single_steps(variable_kind):
    results = []
    for iterations, runs in ((1, 12), (4, 3)):
        with tf.Graph().as_default():
            model = build_model(optimizer=v1.train.AdamOptimizer(0.05))
            with NPUSession(config=config_with(iterations_per_loop=iterations)) as sess:
                sess.run(model["init"])
                op = util.set_iteration_per_loop(sess, model["train_op"], iterations)
                for _ in range(runs):
                    sess.run(op)
                results.append(sess.run([model["weights"], model["global_step"]]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6, atol=1e-6)
    assert results[0][1] == results[1][1] == 12


@pytest.mark.starts_processes
def test_loop_pulls_from_the_graphs_own_one_shot_iterator():
    with tf.Graph().as_default():
        value = v1.data.make_one_shot_iterator(tf.data.Dataset.range(100)).get_next()
        total = v1.get_variable("total", [], tf.int64, initializer=v1.zeros_initializer(), use_resource=True)
        train_op = total.assign_add(value).op
        with NPUSession() as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(util.set_iteration_per_loop(sess, train_op, 3))
            assert sess.run(total) == 0 + 1 + 2
            assert sess.run(value) == 3  # the same iterator, not a copy made inside the loop


@pytest.mark.starts_processes
def test_iteration_per_loop_var_can_be_reloaded():
    with tf.Graph().as_default():
        model = build_model()
        loop = util.IterationPerLoop()
        looped = loop.create_iteration_per_loop_var(model["train_op"])
        with NPUSession(config=config_with(iterations_per_loop=3)) as sess:
            sess.run(model["init"])
            loop.load_iteration_per_loop_var(sess, 3)
            sess.run(looped)
            with pytest.warns(NpuCompatWarning, match="differs from the session config"):
                loop.load_iteration_per_loop_var(sess, 1)
            sess.run(looped)
            assert sess.run(model["global_step"]) == 4


def test_set_iteration_per_loop_errors():
    with tf.Graph().as_default():
        model = build_model()
        with NPUSession(config=config_with()) as sess:
            with pytest.raises(
                NpuOptionValueError,
                match="The incoming 'train_op' type is 'SymbolicTensor', and the need type is 'Operation'",
            ):
                util.set_iteration_per_loop(sess, model["loss"], 2)
            with pytest.raises(NpuOptionValueError, match="iterations_per_loop must be positive, got 0"):
                util.set_iteration_per_loop(sess, model["train_op"], 0)
            assert util.set_iteration_per_loop(sess, model["train_op"], 1) is model["train_op"]
        with NPUSession(config=config_with(mix_compile_mode=True)) as sess:
            with pytest.raises(NpuOptionValueError, match='must be 1 with "mix_compile_mode" is True'):
                util.set_iteration_per_loop(sess, model["train_op"], 2)


@pytest.mark.starts_processes
def test_fed_graphs_repeat_the_fed_batch_and_say_so():
    with tf.Graph().as_default():
        features = v1.placeholder(tf.float32, [None, 4])
        weights = v1.get_variable("w", [4, 1], initializer=v1.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(features, weights) - 1.0))
        step = v1.train.get_or_create_global_step()
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        with NPUSession(config=config_with(iterations_per_loop=3)) as sess:
            sess.run(v1.global_variables_initializer())
            with pytest.warns(NpuCompatWarning, match="every iteration of a run trains on the same fed batch"):
                looped = util.set_iteration_per_loop(sess, train_op, 3)
            sess.run(looped, feed_dict={features: FEATURES[:4]})
            assert sess.run(step) == 3


# --- mixed compute and host-kept ops -----------------------------------------------------------------------


def batch_norm_graph():
    x = v1.placeholder(tf.float32, [2, 2, 2, 3])
    y = v1_layers.batch_normalization(x, fused=True, training=True)
    v1.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(y))
    return x


@pytest.mark.starts_processes
def test_mixed_compute_session_runs_graphs_built_under_the_horizon():
    config = config_with(mix_compile_mode=True)  # npu_config_proto: from now on the horizon gives the pre-V3 ops
    with tf.Graph().as_default() as graph:
        with tf.compat.forward_compatibility_horizon(2019, 5, 1):
            x = batch_norm_graph()
        types = {op.type for op in graph.get_operations()}
        assert "FusedBatchNorm" in types and "FusedBatchNormV3" not in types
        with NPUSession(config=config) as sess:
            sess.run(v1.global_variables_initializer())
            out = graph.get_operation_by_name("batch_normalization/FusedBatchNorm").outputs[0]
            assert sess.run(out, {x: np.ones([2, 2, 2, 3])}).shape == (2, 2, 2, 3)


@pytest.mark.starts_processes
def test_mixed_compute_session_stops_early_on_v3_batch_norm():
    with tf.Graph().as_default():
        batch_norm_graph()
        with NPUSession(config=config_with(mix_compile_mode=True)) as sess:
            with pytest.raises(
                NpuOptionValueError,
                match=r"FusedBatchNormV3 ops \(batch_normalization/"
                r"FusedBatchNormV3.*forward_compatibility_horizon\(2019, 5, 1\)",
            ):
                sess.run(v1.global_variables_initializer())


def test_without_npu_compile_scope_keeps_ops_on_the_host(monkeypatch):
    with tf.Graph().as_default():
        with scope.without_npu_compile_scope():
            host_op = tf.add(tf.constant(1.0), 2.0, name="host_add")
        assert host_op.op.get_attr("_without_npu_compile") is True
        assert host_op.op.get_attr("_XlaCompile") is False
        assert host_op.op.device == ""  # no accelerator here: nothing to move
    monkeypatch.setattr(scope, "detect_host", lambda: HostFacts("2.15.1", gpu_count=1))
    with tf.Graph().as_default():
        with scope.without_npu_compile_scope():
            host_op = tf.add(tf.constant(1.0), 2.0)
        assert host_op.op.device == "/device:CPU:0"


@pytest.mark.starts_processes
def test_in_out_pair_regions_are_kept_on_the_host():
    pairs = str([[["pre/input"], ["pre/output"]]])
    with tf.Graph().as_default() as graph:
        with tf.name_scope("pre"):
            start = tf.constant([1.0, 2.0], name="input")
            middle = tf.square(start, name="middle")
            end = tf.identity(middle + 1.0, name="output")
        after = tf.reduce_sum(end, name="after")
        with NPUSession(config=config_with(mix_compile_mode=True, in_out_pair=pairs, in_out_pair_flag=False)) as sess:
            assert sess.run(after) == 7.0
        for name in ("pre/input", "pre/middle", "pre/output"):
            assert graph.get_operation_by_name(name).get_attr("_without_npu_compile") is True
        with pytest.raises(ValueError):
            graph.get_operation_by_name("after").get_attr("_without_npu_compile")


@pytest.mark.starts_processes
def test_in_out_pair_names_must_exist():
    with tf.Graph().as_default():
        tf.constant(1.0, name="present")
        pairs = str([[["present"], ["absent_output"]]])
        with NPUSession(config=config_with(mix_compile_mode=True, in_out_pair=pairs, in_out_pair_flag=False)) as sess:
            with pytest.raises(
                NpuOptionValueError, match="in_out_pair names nodes that are not in the graph: absent_output"
            ):
                sess.run(tf.constant(2.0))


@pytest.mark.starts_processes
def test_looped_runs_keep_the_callers_run_options():
    with tf.Graph().as_default():
        model = build_model()
        with NPUSession(config=config_with(iterations_per_loop=3)) as sess:
            assert len(sess._config.session_inter_op_thread_pool) == 1  # lets small loops run in the caller thread
            sess.run(model["init"])
            looped = util.set_iteration_per_loop(sess, model["train_op"], 3)
            metadata = v1.RunMetadata()
            sess.run(looped, options=v1.RunOptions(trace_level=v1.RunOptions.FULL_TRACE), run_metadata=metadata)
            assert sess.run(model["global_step"]) == 3 and metadata.step_stats.dev_stats
