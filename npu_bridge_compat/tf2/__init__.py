"""The TF2 adapter's door (`npu_device`), side by side with the session, Estimator and Keras doors, over the same
option table, run-time core, ranks and fused kernels.

    device.py       global_options() (the option tree of options/tf2_tree.py), open().as_default(),
                    global_npu_ctx(), set_npu_loop_size, compat.enable_v1
    distribute.py   all_reduce, broadcast, shard_and_rebatch_dataset, the Keras optimizer wrapper
    loss_scale.py   train.optimizer.NpuLossScaleOptimizer: the overflow decision agreed across ranks
    kernels.py      ops.gelu

Scripts import it as `npu_device` (legacy/npu_device/ mirrors the adapter's module tree).
"""
