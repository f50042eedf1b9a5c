"""`tf.contrib.seq2seq` as TF 1.15 had it, on TensorFlow's own ops (tf.while_loop, TensorArrays, the RNN cells of
tf.compat.v1.nn.rnn_cell): decoders, helpers, attention, beam search and the sequence loss, in graph mode and
eagerly, with TF 1.15's signatures, state structures and variable names."""

from npu_bridge_compat.legacy.tf1.contrib.seq2seq.attention_wrapper import (
    AttentionMechanism,
    AttentionWrapper,
    AttentionWrapperState,
    BahdanauAttention,
    BahdanauMonotonicAttention,
    LuongAttention,
    LuongMonotonicAttention,
    hardmax,
    monotonic_attention,
    safe_cumprod,
)
from npu_bridge_compat.legacy.tf1.contrib.seq2seq.basic_decoder import BasicDecoder, BasicDecoderOutput
from npu_bridge_compat.legacy.tf1.contrib.seq2seq.beam_search_decoder import (
    BeamSearchDecoder,
    BeamSearchDecoderOutput,
    BeamSearchDecoderState,
    FinalBeamSearchDecoderOutput,
    gather_tree,
    tile_batch,
)
from npu_bridge_compat.legacy.tf1.contrib.seq2seq.decoder import Decoder, dynamic_decode
from npu_bridge_compat.legacy.tf1.contrib.seq2seq.helper import (
    CustomHelper,
    GreedyEmbeddingHelper,
    Helper,
    InferenceHelper,
    SampleEmbeddingHelper,
    ScheduledEmbeddingTrainingHelper,
    ScheduledOutputTrainingHelper,
    TrainingHelper,
)
from npu_bridge_compat.legacy.tf1.contrib.seq2seq.loss import sequence_loss

__all__ = [
    "AttentionMechanism",
    "AttentionWrapper",
    "AttentionWrapperState",
    "BahdanauAttention",
    "BahdanauMonotonicAttention",
    "BasicDecoder",
    "BasicDecoderOutput",
    "BeamSearchDecoder",
    "BeamSearchDecoderOutput",
    "BeamSearchDecoderState",
    "CustomHelper",
    "Decoder",
    "FinalBeamSearchDecoderOutput",
    "GreedyEmbeddingHelper",
    "Helper",
    "InferenceHelper",
    "LuongAttention",
    "LuongMonotonicAttention",
    "SampleEmbeddingHelper",
    "ScheduledEmbeddingTrainingHelper",
    "ScheduledOutputTrainingHelper",
    "TrainingHelper",
    "dynamic_decode",
    "gather_tree",
    "hardmax",
    "monotonic_attention",
    "safe_cumprod",
    "sequence_loss",
    "tile_batch",
]
