"""A sharded embedding lookup on Ascend's EmbeddingRankId kernel (device-only), and an RDMA helper it imports but
never calls."""
import tensorflow as tf
from npu_bridge.npu_cpu import npu_cpu_ops
from npu_bridge.estimator.npu.npu_plugin import rdma_remote_init


def rank_ids(address_table, ids, row_memory=320):
    return npu_cpu_ops.embeddingrankid(address_table, tf.cast(ids, tf.uint32), row_memory=row_memory,
                                       mode="mod")
