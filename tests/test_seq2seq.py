"""tf.contrib.seq2seq as TF 1.15 had it (npu_bridge_compat.legacy.tf1.contrib.seq2seq): decoders, helpers,
attention and beam search against TF 1.15's documented behaviour, hand-checked values, variable names, and the
same results in graph mode and eagerly."""

import math

import numpy as np
import pytest
import tensorflow as tf

from npu_bridge_compat import compat
from npu_bridge_compat.legacy.tf1.contrib import seq2seq

v1 = tf.compat.v1
rnn_cell = compat.tf1_keras_api("nn.rnn_cell")  # tf.compat.v1.nn.rnn_cell: Keras 2's cells on both lines
layers = compat.tf1_keras_api("layers")

MEMORY = np.random.RandomState(0).randn(2, 5, 6).astype(np.float32)
MEMORY_LENGTHS = np.array([5, 3], np.int32)
INPUTS = np.random.RandomState(1).randn(2, 4, 3).astype(np.float32)
INPUT_LENGTHS = np.array([4, 2], np.int32)


def graph_values(build):
    """Run `build()` in a fresh graph; returns (its results, {variable name: value})."""
    with tf.Graph().as_default():
        v1.set_random_seed(0)
        results = build()
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            values = session.run(results)
            variables = {v.op.name: session.run(v) for v in v1.global_variables()}
    return values, variables


def attention_decoder(mechanism_class=seq2seq.BahdanauAttention, **mechanism_args):
    mechanism = mechanism_class(4, MEMORY, memory_sequence_length=MEMORY_LENGTHS, **mechanism_args)
    cell = seq2seq.AttentionWrapper(rnn_cell.LSTMCell(4), mechanism, attention_layer_size=3, alignment_history=True)
    helper = seq2seq.TrainingHelper(INPUTS, INPUT_LENGTHS)
    decoder = seq2seq.BasicDecoder(
        cell, helper, cell.zero_state(2, tf.float32), output_layer=layers.Dense(7, name="output_projection")
    )
    outputs, state, lengths = seq2seq.dynamic_decode(decoder, impute_finished=True)
    layers_used = [cell, mechanism.memory_layer, decoder._output_layer]
    return (outputs.rnn_output, outputs.sample_id, state.alignment_history.stack(), lengths), layers_used


# --- dynamic_decode, BasicDecoder, helpers ---------------------------------------------------------------------


def test_attention_decoder_names_its_variables_as_tf115_and_imputes_finished_steps():
    (rnn_output, sample_id, history, lengths), variables = graph_values(lambda: attention_decoder()[0])
    assert sorted(variables) == [
        "decoder/attention_wrapper/attention_layer/kernel",
        "decoder/attention_wrapper/bahdanau_attention/attention_v",
        "decoder/attention_wrapper/bahdanau_attention/query_layer/kernel",
        "decoder/attention_wrapper/lstm_cell/bias",
        "decoder/attention_wrapper/lstm_cell/kernel",
        "decoder/output_projection/bias",
        "decoder/output_projection/kernel",
        "memory_layer/kernel",
    ]
    assert variables["decoder/attention_wrapper/lstm_cell/kernel"].shape == (3 + 3 + 4, 16)  # inputs, attention, h
    assert rnn_output.shape == (2, 4, 7) and sample_id.dtype == np.int32
    np.testing.assert_array_equal(lengths, INPUT_LENGTHS)
    np.testing.assert_array_equal(rnn_output[1, 2:], 0.0)  # impute_finished: zeros after the sequence's end
    np.testing.assert_array_equal(sample_id, rnn_output.argmax(-1) * (rnn_output.any(-1)))
    assert history.shape == (4, 2, 5)  # alignment history: [time, batch, memory time]
    np.testing.assert_array_equal(history[:2, 1, 3:], 0.0)  # no attention past the memory's length
    np.testing.assert_allclose(history[:2].sum(-1), 1.0, rtol=1e-5)


def deterministic_initializer(shape, dtype=tf.float32, partition_info=None):
    """The same values in graph mode and eagerly (random initializers draw differently in the two)."""
    size = int(np.prod(shape))
    return tf.constant(0.5 * np.sin(np.arange(1, size + 1)).reshape(shape), dtype=dtype)


def test_graph_and_eager_decode_alike():
    def build():
        with v1.variable_scope(v1.get_variable_scope(), initializer=deterministic_initializer):
            return attention_decoder(seq2seq.LuongAttention, scale=True)

    graph_results, variables = graph_values(lambda: build()[0])
    assert "decoder/attention_wrapper/luong_attention/attention_g" in variables
    results, layers_used = build()
    eager_variables = {v.name.split(":")[0]: v.numpy() for layer in layers_used for v in layer.variables}
    assert sorted(eager_variables) == sorted(variables)
    for name, value in eager_variables.items():
        np.testing.assert_array_equal(value, variables[name])
    for graph_value, eager_value in zip(graph_results, results):
        np.testing.assert_allclose(eager_value.numpy(), graph_value, rtol=1e-5, atol=1e-6)


def test_dynamic_decode_stops_at_maximum_iterations_and_outputs_time_major():
    helper = seq2seq.TrainingHelper(INPUTS, INPUT_LENGTHS)
    cell = rnn_cell.GRUCell(5)
    decoder = seq2seq.BasicDecoder(cell, helper, cell.zero_state(2, tf.float32))
    outputs, state, lengths = seq2seq.dynamic_decode(decoder, output_time_major=True, maximum_iterations=3)
    assert isinstance(outputs, seq2seq.BasicDecoderOutput)
    assert outputs.rnn_output.shape == (3, 2, 5) and state.shape == (2, 5)
    np.testing.assert_array_equal(lengths, [3, 2])
    assert decoder.output_size == seq2seq.BasicDecoderOutput(5, tf.TensorShape([]))
    with pytest.raises(TypeError, match="Expected decoder to be type Decoder"):
        seq2seq.dynamic_decode(cell)


def test_greedy_embedding_helper_stops_each_entry_at_the_end_token():
    # the "cell" echoes a fixed next token per input token: 2 -> 3 -> 1 (the end token) and 4 -> 1
    transitions = np.full((5, 5), -10.0, np.float32)
    transitions[2, 3] = transitions[3, 1] = transitions[4, 1] = transitions[1, 1] = 10.0
    helper = seq2seq.GreedyEmbeddingHelper(np.eye(5, dtype=np.float32), start_tokens=[2, 4], end_token=1)
    decoder = seq2seq.BasicDecoder(LookupCell(transitions), helper, tf.zeros([2, 1]))
    outputs, _, lengths = seq2seq.dynamic_decode(decoder, maximum_iterations=10)
    np.testing.assert_array_equal(lengths, [2, 1])
    np.testing.assert_array_equal(outputs.sample_id, [[3, 1], [1, 1]])
    with pytest.raises(ValueError, match="start_tokens must be a vector"):
        seq2seq.GreedyEmbeddingHelper(np.eye(5), start_tokens=[[2]], end_token=1)


def test_inference_custom_and_scheduled_helpers():
    start = tf.constant([[0.5], [2.0]])
    inference = seq2seq.InferenceHelper(
        sample_fn=lambda outputs: outputs * 2.0,
        sample_shape=[1],
        sample_dtype=tf.float32,
        start_inputs=start,
        end_fn=lambda samples: samples[:, 0] > 3.0,
    )
    decoder = seq2seq.BasicDecoder(IdentityCell(1), inference, tf.zeros([2, 1]))
    outputs, _, lengths = seq2seq.dynamic_decode(decoder, maximum_iterations=5)
    np.testing.assert_array_equal(lengths, [3, 1])  # 0.5 -> 1 -> 2 -> 4 stops; 2 -> 4 stops
    np.testing.assert_allclose(outputs.sample_id[0, :, 0], [1.0, 2.0, 4.0])
    custom = seq2seq.CustomHelper(
        initialize_fn=lambda: (tf.constant([False, False]), start),
        sample_fn=lambda time, outputs, state: tf.zeros([2], tf.int32),
        next_inputs_fn=lambda time, outputs, state, sample_ids: (tf.fill([2], time >= 1), outputs, state),
    )
    outputs, _, lengths = seq2seq.dynamic_decode(
        seq2seq.BasicDecoder(IdentityCell(1), custom, tf.zeros([2, 1])), maximum_iterations=5
    )
    np.testing.assert_array_equal(lengths, [2, 2])
    # always sampling: the next inputs are the sampled ids' embeddings; never sampling: the given inputs
    embedding = np.eye(3, dtype=np.float32)
    for probability, expected_ids in ((1.0, lambda ids: ids >= 0), (0.0, lambda ids: ids == -1)):
        scheduled = seq2seq.ScheduledEmbeddingTrainingHelper(
            np.zeros((2, 3, 3), np.float32), [3, 3], embedding, sampling_probability=probability
        )
        decoder = seq2seq.BasicDecoder(IdentityCell(3), scheduled, tf.zeros([2, 3]))
        outputs, _, _ = seq2seq.dynamic_decode(decoder)
        assert expected_ids(outputs.sample_id.numpy()).all()
    output_fed = seq2seq.ScheduledOutputTrainingHelper(np.ones((2, 3, 2), np.float32), [3, 3], sampling_probability=1.0)
    outputs, _, _ = seq2seq.dynamic_decode(seq2seq.BasicDecoder(IdentityCell(2), output_fed, tf.zeros([2, 2])))
    assert outputs.sample_id.dtype == tf.bool and outputs.sample_id.numpy().all()
    np.testing.assert_allclose(outputs.rnn_output, 1.0)  # the outputs fed back are the first inputs echoed


class LookupCell(rnn_cell.RNNCell):
    """Logits = one-hot input · `transitions`: the next token depends on the last one only."""

    def __init__(self, transitions):
        super().__init__()
        self._transitions = tf.constant(transitions)

    @property
    def state_size(self):
        return 1

    @property
    def output_size(self):
        return self._transitions.shape[1]

    def call(self, inputs, state):
        return tf.matmul(inputs, self._transitions), state


class IdentityCell(rnn_cell.RNNCell):
    def __init__(self, units):
        super().__init__()
        self._units = units

    @property
    def state_size(self):
        return self._units

    @property
    def output_size(self):
        return self._units

    def call(self, inputs, state):
        return inputs, state


# --- attention ---------------------------------------------------------------------------------------------------


def test_bahdanau_and_luong_scores_match_numpy():
    query = np.random.RandomState(2).randn(2, 4).astype(np.float32)

    def build():
        bahdanau = seq2seq.BahdanauAttention(4, MEMORY, memory_sequence_length=MEMORY_LENGTHS, normalize=True)
        luong = seq2seq.LuongAttention(4, MEMORY, memory_sequence_length=MEMORY_LENGTHS, name="luong")
        with v1.variable_scope("scores"):
            return bahdanau(query, None)[0], luong(query, None)[0]

    (bahdanau, luong), variables = graph_values(build)

    def softmax_masked(scores):
        scores = np.where(np.arange(5) < MEMORY_LENGTHS[:, None], scores, -np.inf)
        exp = np.exp(scores - scores.max(-1, keepdims=True))
        return exp / exp.sum(-1, keepdims=True)

    masked_memory = MEMORY * (np.arange(5) < MEMORY_LENGTHS[:, None])[..., None]
    keys = masked_memory @ variables["memory_layer/kernel"]
    v = variables["scores/bahdanau_attention/attention_v"]
    normed_v = variables["scores/bahdanau_attention/attention_g"] * v / np.linalg.norm(v)
    assert variables["scores/bahdanau_attention/attention_g"] == pytest.approx(math.sqrt(1 / 4))
    processed = query @ variables["scores/bahdanau_attention/query_layer/kernel"]
    scores = (normed_v * np.tanh(keys + processed[:, None] + variables["scores/bahdanau_attention/attention_b"])).sum(
        -1
    )
    np.testing.assert_allclose(bahdanau, softmax_masked(scores), rtol=1e-5, atol=1e-6)
    luong_keys = masked_memory @ variables["memory_layer_1/kernel"]
    np.testing.assert_allclose(luong, softmax_masked(np.einsum("bd,btd->bt", query, luong_keys)), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(luong[1, 3:], 0.0)


def test_attention_wrapper_state_structure_and_errors():
    mechanisms = [seq2seq.LuongAttention(6, MEMORY), seq2seq.BahdanauAttention(3, MEMORY)]
    cell = seq2seq.AttentionWrapper(rnn_cell.LSTMCell(6), mechanisms, attention_layer_size=[2, 3])
    state = cell.zero_state(2, tf.float32)
    assert isinstance(state, seq2seq.AttentionWrapperState)
    assert state._fields == ("cell_state", "attention", "time", "alignments", "alignment_history", "attention_state")
    assert state.attention.shape == (2, 5) and len(state.alignments) == 2 and state.alignment_history == ((), ())
    assert cell.output_size == 5 and cell.state_size.alignments == (5, 5)
    output, next_state = cell(tf.zeros([2, 1]), state)
    assert output.shape == (2, 5) and int(next_state.time) == 1
    assert next_state.clone(time=tf.constant(7)).time.numpy() == 7
    with pytest.raises(TypeError, match="attention_mechanism must be an AttentionMechanism"):
        seq2seq.AttentionWrapper(rnn_cell.LSTMCell(6), "luong")
    with pytest.raises(ValueError, match="Only one of attention_layer_size and attention_layer should be set"):
        seq2seq.AttentionWrapper(rnn_cell.LSTMCell(6), mechanisms[0], 2, attention_layer=layers.Dense(2))


def test_hardmax_and_monotonic_attention():
    np.testing.assert_array_equal(seq2seq.hardmax([[0.1, 0.7, 0.2], [3.0, 1.0, 2.0]]), [[0, 1, 0], [1, 0, 0]])
    p_choose = np.array([[0.0, 0.5, 0.5, 1.0]], np.float32)
    previous = np.array([[1.0, 0.0, 0.0, 0.0]], np.float32)
    # from entry 0: stop at 1 with 0.5, at 2 with 0.25, at 3 with the rest
    for mode in ("recursive", "parallel"):
        np.testing.assert_allclose(seq2seq.monotonic_attention(p_choose, previous, mode), [[0, 0.5, 0.25, 0.25]])
    hard = seq2seq.monotonic_attention([[0.0, 1.0, 0.0, 1.0]], [[0.0, 0.0, 1.0, 0.0]], "hard")
    np.testing.assert_array_equal(hard, [[0, 0, 0, 1]])  # the first chosen entry at or after the last one
    np.testing.assert_allclose(seq2seq.safe_cumprod([[0.5, 0.5, 0.0]], axis=1), [[0.5, 0.25, 0.0]], atol=1e-30)
    with pytest.raises(ValueError, match="mode must be 'recursive', 'parallel', or 'hard'"):
        seq2seq.monotonic_attention(p_choose, previous, "soft")


# --- beam search -------------------------------------------------------------------------------------------------


def test_gather_tree_traces_parents_back_and_ends_at_the_end_token():
    step_ids = np.array(
        [[[1, 2, 3], [10, 2, 3]], [[4, 5, 6], [4, 5, 6]], [[7, 8, 9], [7, 8, 9]]], np.int32
    )  # [time, batch, beam]
    parent_ids = np.array([[[0, 0, 0], [0, 0, 0]], [[2, 1, 0], [0, 0, 1]], [[2, 1, 0], [0, 0, 0]]], np.int32)
    beams = seq2seq.gather_tree(step_ids, parent_ids, max_sequence_lengths=[3, 2], end_token=10).numpy()
    np.testing.assert_array_equal(beams[:, 0].T, [[1, 6, 7], [2, 5, 8], [3, 4, 9]])
    # entry 1: length 2 (end_token after), beams 0 and 1 descend from an end token at step 0
    np.testing.assert_array_equal(beams[:, 1].T, [[10, 10, 10], [10, 10, 10], [2, 6, 10]])


# tokens: 0 start, 1 end, 2 A, 3 B; each row the next token's probabilities after the row's token
NEXT_TOKEN = np.array(
    [
        [0.01, 0.09, 0.5, 0.4],  # after start: A 0.5, B 0.4
        [0.01, 0.97, 0.01, 0.01],
        [0.01, 0.19, 0.1, 0.7],  # after A: B 0.7, end 0.19
        [0.01, 0.89, 0.05, 0.05],  # after B: end 0.89
    ],
    np.float32,
)


def beam_search(length_penalty_weight):
    decoder = seq2seq.BeamSearchDecoder(
        LookupCell(np.log(NEXT_TOKEN)),
        np.eye(4, dtype=np.float32),
        start_tokens=[0],
        end_token=1,
        initial_state=tf.zeros([2, 1]),
        beam_width=2,
        length_penalty_weight=length_penalty_weight,
    )
    return seq2seq.dynamic_decode(decoder, maximum_iterations=6)


def test_two_step_beam_search_finds_the_hand_computed_best_sequence():
    # step 2 keeps B,end (0.4 * 0.89 = 0.356) over A,B (0.5 * 0.7 = 0.35): greedy decoding would take A first
    outputs, state, lengths = beam_search(length_penalty_weight=0.0)
    assert isinstance(outputs, seq2seq.FinalBeamSearchDecoderOutput)
    assert isinstance(state, seq2seq.BeamSearchDecoderState)
    np.testing.assert_array_equal(outputs.predicted_ids[0].numpy().T, [[3, 1, 1], [2, 3, 1]])
    scores = outputs.beam_search_decoder_output.scores[0, -1].numpy()
    np.testing.assert_allclose(scores, np.log([0.4 * 0.89, 0.5 * 0.7 * 0.89]), rtol=1e-5)
    np.testing.assert_array_equal(state.lengths, [[2, 3]])  # a beam's end token counts in its length
    np.testing.assert_array_equal(lengths, [[2, 3]])


def test_length_penalty_reorders_the_beams():
    # ((5 + length) / 6), the length without the end token just chosen: at step 2, A,B scores
    # log(0.35) / (7/6) = -0.900 and overtakes B,end's log(0.356) / 1 = -1.033; at step 3 B,end has length 2
    # (its end token counted once chosen) and wins back with log(0.356) / (7/6)
    outputs, _, _ = beam_search(length_penalty_weight=1.0)
    steps = outputs.beam_search_decoder_output
    np.testing.assert_allclose(steps.scores[0, 1], [np.log(0.5 * 0.7) / (7 / 6), np.log(0.4 * 0.89)], rtol=1e-5)
    np.testing.assert_array_equal(steps.predicted_ids[0, 1], [3, 1])
    np.testing.assert_array_equal(steps.parent_ids[0, 1], [0, 1])  # A,B from beam 0 (A), B,end from beam 1 (B)
    np.testing.assert_allclose(
        steps.scores[0, 2], [np.log(0.4 * 0.89) / (7 / 6), np.log(0.5 * 0.7 * 0.89) / (7 / 6)], rtol=1e-5
    )
    np.testing.assert_array_equal(outputs.predicted_ids[0].numpy().T, [[3, 1, 1], [2, 3, 1]])


def test_beam_search_with_attention_in_graph_mode():
    def build():
        tiled_memory = seq2seq.tile_batch(MEMORY, 3)
        mechanism = seq2seq.BahdanauAttention(
            4, tiled_memory, memory_sequence_length=seq2seq.tile_batch(MEMORY_LENGTHS, 3)
        )
        cell = seq2seq.AttentionWrapper(rnn_cell.LSTMCell(4), mechanism, attention_layer_size=3, alignment_history=True)
        decoder = seq2seq.BeamSearchDecoder(
            cell,
            tf.random.normal([6, 2]),
            start_tokens=tf.fill([2], 0),
            end_token=1,
            initial_state=cell.zero_state(6, tf.float32),
            beam_width=3,
            output_layer=layers.Dense(6),
            length_penalty_weight=0.5,
            coverage_penalty_weight=0.2,
        )
        outputs, state, _ = seq2seq.dynamic_decode(decoder, maximum_iterations=4)
        return outputs.predicted_ids, state.cell_state.alignment_history.stack()

    (predicted, history), variables = graph_values(build)
    assert predicted.shape[0] == 2 and predicted.shape[2] == 3 and predicted.shape[1] <= 4
    assert history.shape == (predicted.shape[1], 6, 5)
    assert "decoder/attention_wrapper/bahdanau_attention/query_layer/kernel" in variables


def test_a_checkpoint_holds_tf115_names(tmp_path):
    with tf.Graph().as_default():
        attention_decoder()
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            path = v1.train.Saver().save(session, str(tmp_path / "model.ckpt"))
    names = {name for name, _ in tf.train.list_variables(path)}
    assert {
        "memory_layer/kernel",
        "decoder/attention_wrapper/bahdanau_attention/query_layer/kernel",
        "decoder/attention_wrapper/bahdanau_attention/attention_v",
        "decoder/attention_wrapper/lstm_cell/kernel",
        "decoder/attention_wrapper/lstm_cell/bias",
    } <= names


# --- a stand-in for ModelZoo's NMT scripts: train, checkpoint, restore, beam search ------------------------------

VOCABULARY, START, END = 8, 1, 2  # ids 3..7 are words


def translation_model(source, source_lengths, target_input=None, target_lengths=None, beam_width=None):
    """An NMT-style attention model as ModelZoo's NMT builds it (encoder, AttentionWrapper over an LSTM, output
    projection); returns the training logits, or the beam search's predicted ids."""
    with v1.variable_scope("nmt", reuse=v1.AUTO_REUSE):
        embedding = v1.get_variable("embedding", [VOCABULARY, 8])
        memory, encoder_state = v1.nn.dynamic_rnn(
            rnn_cell.LSTMCell(8, name="encoder_cell"),
            tf.nn.embedding_lookup(embedding, source),
            sequence_length=source_lengths,
            dtype=tf.float32,
            scope="encoder",
        )
        batch_size = tf.shape(source)[0]
        if beam_width:
            memory, source_lengths, encoder_state = seq2seq.tile_batch(
                (memory, source_lengths, encoder_state), beam_width
            )
            batch_size *= beam_width
        with v1.variable_scope("decoder") as scope:
            mechanism = seq2seq.LuongAttention(8, memory, memory_sequence_length=source_lengths, scale=True)
            cell = seq2seq.AttentionWrapper(rnn_cell.LSTMCell(8), mechanism, attention_layer_size=8, name="attention")
            initial_state = cell.zero_state(batch_size, tf.float32).clone(cell_state=encoder_state)
            projection = layers.Dense(VOCABULARY, use_bias=False, name="output_projection")
            if beam_width is None:
                helper = seq2seq.TrainingHelper(tf.nn.embedding_lookup(embedding, target_input), target_lengths)
                decoder = seq2seq.BasicDecoder(cell, helper, initial_state, output_layer=projection)
                outputs, _, _ = seq2seq.dynamic_decode(decoder, scope=scope)
                return outputs.rnn_output
            decoder = seq2seq.BeamSearchDecoder(
                cell,
                embedding,
                tf.fill([tf.shape(source)[0]], START),
                END,
                initial_state,
                beam_width,
                output_layer=projection,
                length_penalty_weight=0.2,
            )
            outputs, _, _ = seq2seq.dynamic_decode(decoder, maximum_iterations=8, scope=scope)
            return outputs.predicted_ids


def test_a_trained_attention_model_restores_for_beam_search(tmp_path):
    """The copy task: the target is the source; 150 Adam steps (well past where the copy is learned: 60 left one
    of the four decoded sequences a word off now and then, as the threads' order of sums varies), a checkpoint,
    then beam search restores it."""
    words = np.random.RandomState(3).randint(3, VOCABULARY, (16, 4)).astype(np.int32)
    lengths = np.full([16], 4, np.int32)
    target_input = np.concatenate([np.full([16, 1], START), words], 1).astype(np.int32)
    target_output = np.concatenate([words, np.full([16, 1], END)], 1).astype(np.int32)
    with tf.Graph().as_default():
        v1.set_random_seed(1)
        logits = translation_model(words, lengths, target_input, lengths + 1)
        loss = seq2seq.sequence_loss(logits, target_output, tf.ones([16, 5]))
        train = v1.train.AdamOptimizer(0.05).minimize(loss)
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            losses = [session.run([train, loss])[1] for _ in range(150)]
            path = v1.train.Saver().save(session, str(tmp_path / "nmt.ckpt"))
    assert all(np.isfinite(losses)) and losses[-1] < 0.05 * losses[0]
    names = {name for name, _ in tf.train.list_variables(path)}
    assert {"nmt/decoder/memory_layer/kernel", "nmt/decoder/attention/luong_attention/attention_g"} <= names
    assert "nmt/decoder/attention/attention_layer/kernel" in names
    with tf.Graph().as_default():
        predicted = translation_model(words[:4], lengths[:4], beam_width=3)
        with v1.Session() as session:
            v1.train.Saver().restore(session, path)
            best = session.run(predicted)[:, :, 0]  # [batch, time], the best beam
    np.testing.assert_array_equal(best[:, :4], words[:4])  # the copy, then the end token
    assert (best[:, 4] == END).all()
