"""`npu_device.compat.v1`: the TF1 adapter's module tree (npu_v1.npu_init, npu_v1.estimator.npu.*, ...), which
the aliases serve from `npu_bridge` without its three loss-scale names, as the adapter's build copies it; and
SessionConfigBuilder."""

import tensorflow as tf

from npu_bridge_compat.options.readers import NPU_OPTIMIZER


class SessionConfigBuilder:
    """A session config with an NpuOptimizer entry (remapping off, as the adapter writes it)."""

    def __init__(self, config=None) -> None:
        if isinstance(config, tf.compat.v1.ConfigProto):
            self._session_proto = config
        else:
            self._session_proto = tf.compat.v1.ConfigProto(allow_soft_placement=True)
        rewrite_options = self._session_proto.graph_options.rewrite_options
        rewrite_options.remapping = rewrite_options.OFF
        self._npu_config = self._session_proto.graph_options.rewrite_options.custom_optimizers.add()
        self._npu_config.name = NPU_OPTIMIZER

    @property
    def parameter_map(self):
        return self._npu_config.parameter_map

    @property
    def session_config(self):
        return self._session_proto
