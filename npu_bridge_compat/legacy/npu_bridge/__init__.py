"""`npu_bridge`: the adapter's top-level package, as an alias of npu_bridge_compat.

Importing it joins the job's collective runtime when RANK_SIZE > 1: ported scripts import npu_bridge before
TensorFlow runs anything, and eager collectives must be set up by then.
"""

if __name__ == "npu_bridge":  # a script's import through the alias, not npu_bridge_compat's own (scan)
    from npu_bridge_compat.distributed.collective_runtime import start_if_several_ranks

    start_if_several_ranks()
    del start_if_several_ranks  # not one of the adapter's names
