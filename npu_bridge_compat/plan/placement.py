"""Placement and training loop: mixed compute, in_out_pair regions, iterations_per_loop, graph_run_mode, devices."""

from __future__ import annotations

from npu_bridge_compat.options.spec import Effect
from npu_bridge_compat.plan.contribution import Contribution
from npu_bridge_compat.plan.features import BatchNormWorkaround, HostRegions, StepLoop, VisibleDevice
from npu_bridge_compat.plan.platform import HostFacts, PlanEnvironment


def plan_placement(options, host: HostFacts, environment: PlanEnvironment) -> Contribution:
    result = Contribution()
    if options.iterations_per_loop > 1:
        result.features.append(StepLoop(options.iterations_per_loop))
        result.say(
            "iterations_per_loop",
            Effect.TRANSLATED,
            f"{options.iterations_per_loop} training steps per session run in NPUEstimator, "
            "util.set_iteration_per_loop and NPUCallback; global_step grows by that much per run",
        )
    elif options.is_set("iterations_per_loop"):
        result.say("iterations_per_loop", Effect.TRANSLATED, "one training step per session run")
    if options.mix_compile_mode:
        result.features.append(BatchNormWorkaround())
    elif options.is_set("mix_compile_mode"):
        result.say("mix_compile_mode", Effect.NOT_NEEDED, "off: full offload, and every op runs on the host anyway")
    if options.in_out_pair:
        pairs = options.parsed_value("in_out_pair")
        on_host = not options.in_out_pair_flag
        result.features.append(HostRegions(pairs, on_host=on_host))
        where = "are kept on the host CPU" if on_host else "go to the accelerator; the rest may run anywhere"
        result.say("in_out_pair", Effect.APPROXIMATED, f"ops between {len(pairs)} input/output node set(s) {where}")
    _plan_device(options, host, environment.device_id, result)
    return result


def _plan_device(options, host: HostFacts, from_environment: tuple[str, int] | None, result: Contribution) -> None:
    """session_device_id > ASCEND_DEVICE_ID > DEVICE_ID picks the device, as on Ascend; here, the GPU index."""
    if options.session_device_id >= 0:
        source, index = "session_device_id", options.session_device_id
    elif from_environment is None:
        return
    else:
        source, index = from_environment
    if not host.has_gpu:
        how = f"device {index} requested by {source}, but this host has no GPU: runs on the CPU"
        effect = Effect.NO_EQUIVALENT
    elif index >= host.gpu_count:
        how = f"device {index} requested by {source}, but this host has {host.gpu_count} GPU(s): TensorFlow chooses"
        effect = Effect.NO_EQUIVALENT
    else:
        result.features.append(VisibleDevice(index))
        how = f"GPU {index} (ConfigProto gpu_options.visible_device_list), chosen by {source}"
        effect = Effect.APPROXIMATED
    if source == "session_device_id":
        result.say(source, effect, how)
    else:
        result.notes.append(f"environment {source}={index}: {how}")
