"""Dumps, overflow/exception checks, profiling and debug graph dumps."""

from __future__ import annotations

from npu_bridge_compat.options.grammars import ProfilingOptions
from npu_bridge_compat.options.spec import Effect
from npu_bridge_compat.plan.contribution import Contribution
from npu_bridge_compat.plan.features import GraphDumps, NumericChecks, ProfilerTrace, TensorDump


def plan_debugging(options, working_directory: str) -> Contribution:
    result = Contribution()
    if options.enable_dump:
        steps = options.parsed_value("dump_step") if options.dump_step else ()
        result.features.append(
            TensorDump(
                path=options.dump_path,
                steps=steps,
                mode=options.dump_mode,
                data=options.dump_data,
                layers=tuple(options.dump_layer.split()),
            )
        )
        which = "every step" if not steps else f"steps {options.dump_step}"
        result.say(
            "enable_dump",
            Effect.TRANSLATED,
            f"op {options.dump_mode} tensors of {which} written as .npy files with an index under {options.dump_path}",
        )
    checks_reason = []
    if options.enable_dump_debug:
        checks_reason.append("enable_dump_debug")
    if options.is_set("enable_exception_dump") and options.enable_exception_dump > 0:
        checks_reason.append("enable_exception_dump")
    if checks_reason:
        result.features.append(NumericChecks(options.dump_path or None))
        saved = (
            f"; the inputs of ops with Inf/NaN outputs are saved under {options.dump_path}/exception"
            if options.dump_path
            else ""
        )
        for key in checks_reason:
            result.say(
                key,
                Effect.APPROXIMATED,
                "numeric checks stop training at the first op (in graph order) with an Inf/NaN output and "
                f"name it{saved} (float16 saturation itself is not detected)",
            )
    elif options.is_set("enable_exception_dump"):
        result.say("enable_exception_dump", Effect.TRANSLATED, "off")
    if options.profiling_mode:
        # Profiling on without options: the newest adapter's default options.
        profiling = options.parsed.get("profiling_options") or ProfilingOptions.DEFAULT
        output = profiling.get("output", "./")
        result.features.append(ProfilerTrace(output=output, options=profiling))
        result.say(
            "profiling_mode",
            Effect.TRANSLATED,
            f"TensorFlow profiler trace of the training steps under {output} (TensorBoard profile plugin)",
        )
        ascend_only = sorted(key for key in profiling if key != "output")
        if ascend_only:
            result.say(
                "profiling_options",
                Effect.TRANSLATED,
                f"output={output} is the trace directory; Ascend collection switches "
                f"{', '.join(ascend_only)} have no host counterpart (the host trace records ops and steps)",
            )
    if options.op_debug_level > 0 or options.debug_dir:
        directory = options.debug_dir or working_directory
        result.features.append(GraphDumps(directory))
        how = f"TensorFlow graphs (TF_DUMP_GRAPH_PREFIX) and XLA HLO (--xla_dump_to) dumped under {directory}"
        for key in ("op_debug_level", "debug_dir"):
            if options.is_set(key):
                result.say(key, Effect.APPROXIMATED, how)
    return result
