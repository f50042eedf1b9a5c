"""`npu_bridge.estimator.npu.npu_convert_dropout`: on Ascend, importing it makes Keras Dropout use
npu_ops.dropout; on a host Keras Dropout already is that op, so importing it changes nothing."""
