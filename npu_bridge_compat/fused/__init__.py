"""Ascend's fused kernels computed on a host with their documented math.

One module per family: `rnn` (DynamicRNN, DynamicGRUV2, DynamicAUGRU, basic_lstm_cell, npu_dynamic_rnn),
`optimizers` (LARS, LARSV2, the fused Adam and LAMB stages), `nn` (dropout, dropout_v3, deformable_conv2d,
randomchoicewithmask) and `profiler` (Profiler over TensorFlow's profiler). Signatures, argument checks and error
wording follow the adapter's Python API; variables keep the adapter's names, shapes and layouts so that
checkpoints move between an NPU and a host. The adapter's modules (`npu_bridge_compat.ops`, `legacy/`) import
their names from here.
"""
