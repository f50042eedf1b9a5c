"""The host plan and its report, per concern, for CPU and GPU hosts (no session is started)."""

import dataclasses
import json

import pytest
from helpers import npu_config
from test_grammars import SEED_004_MIXLIST

from npu_bridge_compat.errors import NpuCompatWarning, NpuOptionValueError, UnknownOpTypeWarning
from npu_bridge_compat.keras import NPUCallback
from npu_bridge_compat.options import Effect, options_from_config_proto, options_from_kwargs
from npu_bridge_compat.plan import PlanEnvironment, build_plan, detect_host, log_once
from npu_bridge_compat.plan import features as f
from npu_bridge_compat.plan.mixlists import default_list_edits
from npu_bridge_compat.plan.platform import Support, cpu_support, reduced_precision_mode
from npu_bridge_compat.plan.precision import BFLOAT16_PASS
from npu_bridge_compat.plan.report import IGNORED

LISTS = "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_"
ON, OFF = 1, 2  # RewriterConfig.Toggle
NPU_LISTS = tuple((variable, tuple(ops)) for variable, ops in default_list_edits().items())  # the NPU's black list
KEPT, MEASURED, PROBED = f.PrecisionChoice.KEPT, f.PrecisionChoice.MEASURED, f.PrecisionChoice.PROBED


def plan(host, **values):
    return build_plan(options_from_kwargs(values), host)


def test_mixed_float16_is_grappler_amp_on_a_gpu_with_tensor_cores(gpu_host):
    result = plan(gpu_host, precision_mode="allow_mix_precision")
    assert result.mixed_precision == f.MixedPrecision("auto_mixed_precision", NPU_LISTS, dtype="float16", choice=KEPT)
    assert result.host_config().graph_options.rewrite_options.auto_mixed_precision == ON
    assert result.report.entry("precision_mode").effect == Effect.TRANSLATED.value


def test_a_gpu_without_float16_tensor_cores_keeps_float32_unless_forced(gpu_host):
    pascal = dataclasses.replace(gpu_host, gpu_compute_capability=(6, 1))
    result = plan(pascal, precision_mode="allow_mix_precision")
    assert result.mixed_precision is None
    assert result.host_config().graph_options.rewrite_options.auto_mixed_precision != ON
    how = result.report.entry("precision_mode").how
    assert "compute capability 6.1 has no float16 tensor cores" in how and "float32 kept" in how
    assert "NPU_BRIDGE_COMPAT_REDUCED_PRECISION=on" in how
    forced = plan(dataclasses.replace(pascal, reduced_precision="on"), precision_mode="allow_mix_precision")
    assert forced.mixed_precision == f.MixedPrecision("auto_mixed_precision", NPU_LISTS, dtype="float16", choice=KEPT)


@pytest.mark.parametrize(
    ("support", "choice"),
    [(Support.NATIVE, MEASURED), (Support.EMULATED, PROBED), (Support.UNKNOWN, PROBED)],
)
def test_mixed_precision_on_a_cpu_is_bfloat16_decided_by_what_the_flags_tell(cpu_host, support, choice):
    host = dataclasses.replace(cpu_host, cpu_bfloat16=support)
    result = plan(host, precision_mode_v2="mixed_float16")
    assert result.mixed_precision == f.MixedPrecision(BFLOAT16_PASS, NPU_LISTS, choice=choice)
    entry = result.report.entry("precision_mode_v2")
    assert entry.effect == Effect.APPROXIMATED.value and "bfloat16 instead of float16" in entry.how
    assert "where it pays" in entry.how and "first runs" in entry.how
    assert ("probe" in entry.how) == (choice is PROBED)
    assert "NPU_BRIDGE_COMPAT_REDUCED_PRECISION=on keeps it" in entry.how


def test_a_cpu_without_avx512_runs_float32(cpu_host):
    host = dataclasses.replace(cpu_host, cpu_bfloat16=Support.NONE, reduced_precision="on")
    for mode in ("allow_mix_precision", "allow_mix_precision_bf16"):
        result = plan(host, precision_mode=mode)
        assert result.mixed_precision is None
        assert "no AVX-512" in result.report.entry("precision_mode").how


def test_float16_emulation_is_kept_when_asked(cpu_host):
    with pytest.warns(NpuCompatWarning, match="float16-emulation pass .* segmentation fault"):
        emulating = plan(dataclasses.replace(cpu_host, cpu_float16_emulation=True), precision_mode_v2="mixed_float16")
    assert emulating.mixed_precision == f.MixedPrecision(
        "auto_mixed_precision_cpu", NPU_LISTS, dtype="float16", choice=KEPT
    )


def test_reduced_precision_on_keeps_the_pass_and_off_turns_it_off(cpu_host):
    emulating = dataclasses.replace(cpu_host, cpu_bfloat16=Support.EMULATED)
    forced = plan(dataclasses.replace(emulating, reduced_precision="on"), precision_mode="allow_mix_precision")
    assert forced.mixed_precision == f.MixedPrecision(BFLOAT16_PASS, NPU_LISTS, choice=KEPT)
    assert "kept: NPU_BRIDGE_COMPAT_REDUCED_PRECISION=on" in forced.report.entry("precision_mode").how
    off = plan(dataclasses.replace(emulating, reduced_precision="off"), precision_mode="allow_mix_precision")
    assert off.mixed_precision is None and dict(off.environment) == {}
    assert off.report.entry("precision_mode").how == "float32 throughout: NPU_BRIDGE_COMPAT_REDUCED_PRECISION=off"


@pytest.mark.parametrize(("value", "mode"), [("", "auto"), ("AUTO", "auto"), ("1", "on"), ("on", "on"), ("0", "off")])
def test_the_reduced_precision_switch_takes_its_modes(value, mode):
    assert reduced_precision_mode(value) == mode


def test_an_unknown_reduced_precision_value_is_refused_with_the_allowed_ones(monkeypatch):
    with pytest.raises(NpuOptionValueError, match=r"NPU_BRIDGE_COMPAT_REDUCED_PRECISION='fast'.*auto.*on.*off"):
        reduced_precision_mode("fast")
    monkeypatch.setenv("NPU_BRIDGE_COMPAT_REDUCED_PRECISION", "fast")
    detect_host.cache_clear()
    try:
        with pytest.raises(NpuOptionValueError, match="NPU_BRIDGE_COMPAT_REDUCED_PRECISION='fast'"):
            NPUCallback(precision_mode="allow_mix_precision")  # refused where the door plans, before training
    finally:
        monkeypatch.undo()
        detect_host.cache_clear()


def test_mixed_bfloat16(cpu_host, gpu_host):
    assert plan(cpu_host, precision_mode="allow_mix_precision_bf16").mixed_precision == f.MixedPrecision(
        BFLOAT16_PASS, NPU_LISTS, choice=MEASURED
    )
    assert (
        plan(cpu_host, precision_mode="allow_mix_precision_bf16").report.entry("precision_mode").effect
        == Effect.TRANSLATED.value
    )
    on_gpu = plan(gpu_host, precision_mode_v2="mixed_bfloat16")
    assert on_gpu.mixed_precision is None
    entry = on_gpu.report.entry("precision_mode_v2")
    assert entry.effect == Effect.NO_EQUIVALENT.value and "'mixed_bfloat16' policy" in entry.how


# --- host facts: what the CPU and the GPU compute fast --------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "machine", "expected"),
    [
        ({"avx512f", "avx512_bf16"}, "x86_64", (Support.NATIVE, Support.NONE)),  # Cooper Lake, Zen 4
        ({"avx512f", "amx_bf16", "avx512_fp16", "amx_fp16"}, "x86_64", (Support.NATIVE, Support.NATIVE)),  # Granite
        ({"avx512f", "avx512bw", "avx512_vnni"}, "x86_64", (Support.EMULATED, Support.NONE)),  # Cascade Lake
        ({"avx2", "fma"}, "x86_64", (Support.NONE, Support.NONE)),
        (set(), "x86_64", (Support.UNKNOWN, Support.UNKNOWN)),  # no /proc/cpuinfo
        ({"bf16", "sve"}, "aarch64", (Support.UNKNOWN, Support.UNKNOWN)),
    ],
)
def test_the_cpu_flags_name_its_capabilities(flags, machine, expected):
    assert cpu_support(flags, machine) == expected


@pytest.mark.parametrize(
    ("kind", "pass_and_choice"),
    [
        ("cpu-native-bfloat16", (BFLOAT16_PASS, MEASURED)),
        ("cpu-native-float16", (BFLOAT16_PASS, MEASURED)),
        ("cpu-emulated-bfloat16", (BFLOAT16_PASS, PROBED)),
        ("cpu-without-avx512", None),
        ("gpu", ("auto_mixed_precision", KEPT)),
        ("gpu-volta", ("auto_mixed_precision", KEPT)),
        ("gpu-pascal", None),
    ],
)
def test_each_host_kind_plans_mixed_precision_by_its_capabilities(cpu_host, kind, pass_and_choice):
    host = cpu_host.with_device(kind)
    mixed = plan(host, precision_mode="allow_mix_precision").mixed_precision
    assert (mixed.grappler_pass, mixed.choice) == pass_and_choice if pass_and_choice else mixed is None


def test_host_kinds_are_facts_as_data(cpu_host):
    emulated = cpu_host.with_device("cpu-emulated-bfloat16")
    assert (emulated.cpu_bfloat16, emulated.cpu_flags, emulated.gpu_count) == (Support.EMULATED, ("avx512f",), 0)
    assert emulated.cpu_description.endswith("bfloat16 emulated (avx512f without avx512_bf16)")
    granite = cpu_host.with_device("cpu-native-float16")
    assert "float16 native (avx512_fp16 amx_fp16)" in granite.cpu_description
    assert cpu_host.with_device("gpu-pascal").gpu_compute_capability == (6, 1)
    assert cpu_host.with_device("cpu") == dataclasses.replace(cpu_host, gpu_count=0)
    with pytest.raises(ValueError, match="unknown host kind 'tpu'"):
        cpu_host.with_device("tpu")


@pytest.mark.parametrize("mode", ["force_fp32", "must_keep_origin_dtype"])
def test_float32_modes_keep_float32_and_turn_tf32_off(gpu_host, mode):
    result = plan(gpu_host, precision_mode=mode)
    assert result.feature(f.TensorFloat32) == f.TensorFloat32(enabled=False)
    assert result.mixed_precision is None


def test_force_fp16_forces_amp_on_gpu_only(gpu_host, cpu_host):
    on_gpu = plan(gpu_host, precision_mode="force_fp16")
    assert on_gpu.environment[LISTS + "LEVEL"] == "UNSAFE_FORCE_ALL"
    assert on_gpu.mixed_precision == f.MixedPrecision("auto_mixed_precision", force_all=True, dtype="float16")
    on_cpu = plan(cpu_host, precision_mode="force_fp16")
    assert on_cpu.report.entry("precision_mode").effect == Effect.NO_EQUIVALENT.value
    assert dict(on_cpu.environment) == {}


def test_seed_mixlist_becomes_grappler_lists_with_tf_op_names(tmp_path, gpu_host):
    path = tmp_path / "ops_info.json"
    path.write_text(SEED_004_MIXLIST, encoding="utf-8")
    result = plan(gpu_host, precision_mode_v2="mixed_float16", modify_mixlist=str(path))
    lists = {key.removeprefix(LISTS): value for key, value in result.environment.items()}
    assert lists == {
        # black to-remove Xlog1py: leaves the deny list and becomes gray (infer), as on Ascend
        "DENYLIST_REMOVE": "Xlog1py,BiasAdd",
        "INFERLIST_ADD": "Xlog1py,Conv2D",
        # black to-add Matmul (TensorFlow's MatMul) and Cast: deny, and out of every other list, beside the
        # NPU's own black list
        "DENYLIST_ADD": ",".join([*dict(NPU_LISTS)["DENYLIST_ADD"], "MatMul", "Cast"]),
        "ALLOWLIST_REMOVE": "MatMul,Cast,Conv2D",
        "INFERLIST_REMOVE": "Inv,Selu,MatMul,Cast,BiasAdd",
        "CLEARLIST_REMOVE": "MatMul,Cast,BiasAdd",
        # white to-add Bias (TensorFlow's BiasAdd)
        "ALLOWLIST_ADD": "BiasAdd",
    }
    assert "modify_mixlist: Ascend op type Matmul is TensorFlow's MatMul" in result.report.notes


def test_mixlist_op_unknown_to_tensorflow_warns_and_is_left_out(tmp_path, gpu_host):
    path = tmp_path / "ops_info.json"
    path.write_text('{"white-list": {"to-add": ["LayerNorm", "Conv2D"]}}')
    with pytest.warns(UnknownOpTypeWarning, match="LayerNorm"):
        result = plan(gpu_host, precision_mode="allow_mix_precision", modify_mixlist=str(path))
    assert result.environment[LISTS + "ALLOWLIST_ADD"] == "Conv2D"


def test_mixlist_without_an_amp_pass_has_no_effect(tmp_path, gpu_host):
    path = tmp_path / "ops_info.json"
    path.write_text('{"white-list": {"to-add": ["Conv2D"]}}')
    result = plan(gpu_host, precision_mode="allow_mix_precision_bf16", modify_mixlist=str(path))
    assert dict(result.environment) == {}
    assert result.report.entry("modify_mixlist").effect == Effect.NO_EQUIVALENT.value


def test_loop_mixed_compute_and_regions(cpu_host):
    assert plan(cpu_host, iterations_per_loop=100).feature(f.StepLoop) == f.StepLoop(100)
    assert plan(cpu_host, iterations_per_loop=1).feature(f.StepLoop) is None
    mixed = plan(cpu_host, mix_compile_mode=True, in_out_pair="[[['a'], ['b', 'c']]]", in_out_pair_flag=False)
    assert mixed.feature(f.BatchNormWorkaround) == f.BatchNormWorkaround()
    regions = mixed.feature(f.HostRegions)
    assert regions.on_host and regions.pairs[0].outputs == ("b", "c")


def test_dump_profiling_and_numeric_checks(cpu_host, tmp_path):
    dumped = plan(
        cpu_host,
        enable_dump=True,
        dump_path=str(tmp_path),
        dump_step="0|5|10-12",
        dump_mode="all",
        dump_layer="dense/MatMul dense/BiasAdd",
    )
    assert dumped.feature(f.TensorDump) == f.TensorDump(
        path=str(tmp_path),
        steps=((0, 0), (5, 5), (10, 12)),
        mode="all",
        data="tensor",
        layers=("dense/MatMul", "dense/BiasAdd"),
    )
    profiled = plan(cpu_host, profiling_mode=True, profiling_options=f'{{"output": "{tmp_path}/prof"}}')
    assert profiled.feature(f.ProfilerTrace).output == f"{tmp_path}/prof"
    checked = plan(cpu_host, enable_dump_debug=True, dump_path=str(tmp_path))
    assert checked.feature(f.NumericChecks) == f.NumericChecks(str(tmp_path))
    assert plan(cpu_host, enable_exception_dump=1).feature(f.NumericChecks) == f.NumericChecks()
    assert plan(cpu_host, enable_exception_dump=0).feature(f.NumericChecks) is None


def test_memory_caps_the_gpu_only(cpu_host, gpu_host):
    sizes = {"graph_memory_max_size": str(2 * 1024**3), "variable_memory_max_size": str(1024**3)}
    assert plan(gpu_host, **sizes).feature(f.GpuMemoryLimit) == f.GpuMemoryLimit(3072)
    on_cpu = plan(cpu_host, **sizes)
    assert on_cpu.feature(f.GpuMemoryLimit) is None
    assert on_cpu.report.entry("graph_memory_max_size").effect == Effect.NO_EQUIVALENT.value


def test_device_choice_follows_the_adapter_priority(monkeypatch, gpu_host):
    two_gpus = gpu_host.__class__("2.15.1", 2)
    monkeypatch.setenv("DEVICE_ID", "0")
    monkeypatch.setenv("ASCEND_DEVICE_ID", "1")
    assert plan(two_gpus).feature(f.VisibleDevice) == f.VisibleDevice(1)
    assert plan(two_gpus, session_device_id=0).host_config().gpu_options.visible_device_list == "0"
    monkeypatch.delenv("ASCEND_DEVICE_ID")
    assert plan(two_gpus).feature(f.VisibleDevice) == f.VisibleDevice(0)
    too_high = plan(two_gpus, session_device_id=5)
    assert too_high.feature(f.VisibleDevice) is None
    assert "this host has 2 GPU(s)" in too_high.report.entry("session_device_id").how


def test_the_device_variables_reach_the_plan_as_its_environment(gpu_host):
    two_gpus = dataclasses.replace(gpu_host, gpu_count=2)
    options = options_from_kwargs({})
    chosen = build_plan(options, two_gpus, environment=PlanEnvironment(device_id=("ASCEND_DEVICE_ID", 1)))
    assert chosen.feature(f.VisibleDevice) == f.VisibleDevice(1)
    assert "environment ASCEND_DEVICE_ID=1: GPU 1" in " ".join(chosen.report.notes)
    assert build_plan(options, two_gpus, environment=PlanEnvironment()).feature(f.VisibleDevice) is None


class _ProcessRead(AssertionError):
    pass


class _UnreadableEnvironment(dict):
    """os.environ for the time of a plan: any read of the process environment fails the test."""

    def __getitem__(self, key):
        raise _ProcessRead(f"the plan read os.environ[{key!r}]")

    def get(self, key, default=None):
        raise _ProcessRead(f"the plan read os.environ.get({key!r})")

    def __contains__(self, key):
        raise _ProcessRead(f"the plan asked whether {key!r} is in os.environ")

    def __iter__(self):
        raise _ProcessRead("the plan listed os.environ")


def test_a_plan_given_host_and_environment_reads_nothing_of_the_process(monkeypatch, cpu_host, tmp_path):
    """Every concern planned (device, precision, dumps, profiling, fusion, settings) with the process environment
    and working folder unreadable: what a plan needs comes in as HostFacts and a PlanEnvironment."""
    import os

    options = options_from_kwargs(
        precision_mode="allow_mix_precision",
        iterations_per_loop=4,
        enable_dump=True,
        dump_path=str(tmp_path),
        dump_step="0|2",
        op_debug_level=1,
        enable_graph_kernel=True,
        stream_max_parallel_num="DNN_VM_AICPU:10,AIcoreEngine:1",
        profiling_mode=True,
        profiling_options=json.dumps({"output": str(tmp_path)}),
    )
    environment = PlanEnvironment(
        working_directory=str(tmp_path), device_id=("DEVICE_ID", 0), fusion_flags_problem="flags read too late"
    )
    monkeypatch.setattr(os, "environ", _UnreadableEnvironment())
    monkeypatch.setattr(os, "getcwd", lambda: (_ for _ in ()).throw(_ProcessRead("the plan read the working folder")))
    result = build_plan(options, cpu_host, environment=environment)
    monkeypatch.undo()
    assert result.steps_per_run == 4
    assert result.feature(f.GraphDumps).directory == str(tmp_path)
    assert "flags read too late" in result.report.entry("enable_graph_kernel").how
    assert "DEVICE_ID=0" in " ".join(result.report.notes)


def test_runtime_settings(cpu_host, tmp_path):
    result = plan(
        cpu_host,
        stream_max_parallel_num="DNN_VM_AICPU:10,AIcoreEngine:1",
        graph_exec_timeout=5000,
        deterministic=1,
        op_compiler_cache_mode="enable",
        op_compiler_cache_dir=str(tmp_path),
    )
    host = result.host_config()
    assert host.inter_op_parallelism_threads == 10 and host.operation_timeout_in_ms == 5000
    assert result.feature(f.OpDeterminism) == f.OpDeterminism()
    assert result.environment["TF_XLA_FLAGS"] == f"--tf_xla_persistent_cache_directory={tmp_path}"


def test_fusion_switch_all_off_turns_the_remapper_off(cpu_host, tmp_path):
    path = tmp_path / "fusion_switch.cfg"
    path.write_text('{"Switch": {"GraphFusion": {"ALL": "off"}}}')
    result = plan(cpu_host, fusion_switch_file=str(path))
    assert result.feature(f.GrapplerSwitch) == f.GrapplerSwitch("remapping", on=False)
    assert result.host_config().graph_options.rewrite_options.remapping == OFF


def test_host_config_strips_npu_entries_and_the_optimizer_list(gpu_host):
    config = npu_config({"precision_mode": "allow_mix_precision"}, optimizers=("pruning", "GradFusionOptimizer"))
    config.graph_options.rewrite_options.remapping = 2  # RewriterConfig.OFF, as npu_config_proto sets it
    other = config.graph_options.rewrite_options.custom_optimizers.add()
    other.name = "MyOptimizer"
    result = build_plan(options_from_config_proto(config), gpu_host, config=config)
    host = result.host_config(config)
    rewrite = host.graph_options.rewrite_options
    assert [entry.name for entry in rewrite.custom_optimizers] == ["MyOptimizer"]
    assert list(rewrite.optimizers) == []
    assert rewrite.auto_mixed_precision == 1  # ON
    assert rewrite.remapping == 2 and host.allow_soft_placement
    assert len(config.graph_options.rewrite_options.custom_optimizers) == 2  # the input is not modified
    assert any("GradFusionOptimizer" in note for note in result.report.notes)


def test_report_lists_every_set_option_once(cpu_host, tmp_path):
    result = plan(
        cpu_host,
        iterations_per_loop=10,
        hcom_parallel=True,
        use_off_line=True,
        enable_data_pre_proc=True,
        dump_step="0|5",
        enable_dump=False,
    )
    report = result.report
    assert [e.key for e in report.entries] == [
        "iterations_per_loop",
        "enable_data_pre_proc",
        "use_off_line",
        "enable_dump",
        "dump_step",
        "hcom_parallel",
    ]
    assert report.entry("dump_step").effect == IGNORED
    assert report.entry("enable_dump").how == "the adapter's default: nothing to change on the host"
    assert report.entry("hcom_parallel").effect == Effect.NO_EQUIVALENT.value
    assert "deprecated" in report.entry("enable_data_pre_proc").how
    text = str(report)
    assert text.index("translated:") < text.index("not needed on a host:") < text.index("no host equivalent:")
    assert "iterations_per_loop=10" in text
    with pytest.raises(KeyError, match="precision_mode"):
        report.entry("precision_mode")


def test_report_is_logged_once_per_distinct_configuration(cpu_host):
    first = plan(cpu_host, iterations_per_loop=7, deterministic=1).report
    assert log_once(first) is True
    assert log_once(plan(cpu_host, iterations_per_loop=7, deterministic=1).report) is False
    assert log_once(plan(cpu_host, iterations_per_loop=8, deterministic=1).report) is True


def test_gpu_memory_limit_becomes_one_virtual_gpu_of_that_size(gpu_host):
    result = plan(gpu_host, graph_memory_max_size=str(3 * 1024**3), variable_memory_max_size=str(1024**3))
    devices = result.host_config().gpu_options.experimental.virtual_devices
    assert len(devices) == 1 and list(devices[0].memory_limit_mb) == [4096]


def test_profiling_without_options_uses_the_adapters_default(cpu_host):
    trace = plan(cpu_host, profiling_mode=True).feature(f.ProfilerTrace)
    assert trace.output == "./" and trace.options["training_trace"] == "on"


def test_hifloat8_modes_are_accepted_and_run_float32(cpu_host, tmp_path):
    mixlist = tmp_path / "ops_info.json"
    mixlist.write_text('{"black-list": {"to-add": ["MatMulV2"]}}')
    for mode in ("mixed_hif8", "cube_hif8"):
        result = plan(cpu_host, precision_mode_v2=mode)
        assert result.mixed_precision is None
        entry = result.report.entry("precision_mode_v2")
        assert entry.effect == Effect.NO_EQUIVALENT.value and "HiFloat8" in entry.how
    plan(cpu_host, precision_mode_v2="mixed_hif8", modify_mixlist=str(mixlist))  # a mixed mode: lists allowed
    with pytest.raises(
        ValueError, match="precision_mode_v2 is assigned to 'mixed_float16' or 'mixed_bfloat16' or 'mixed_hif8'"
    ):
        plan(cpu_host, precision_mode_v2="cube_hif8", modify_mixlist=str(mixlist))


def test_the_npus_black_list_is_kept_float32_and_modify_mixlist_moves_its_ops(tmp_path, cpu_host):
    host = dataclasses.replace(cpu_host, cpu_bfloat16=Support.NATIVE)
    result = plan(host, precision_mode="allow_mix_precision")
    deny = result.environment[LISTS + "DENYLIST_ADD"].split(",")
    assert {"Selu", "Inv", "Acosh", "ResourceApplyAdam"} <= set(deny) and "L2Loss" not in deny  # grappler's own
    assert result.environment[LISTS + "INFERLIST_REMOVE"] == "Inv,Selu"
    (note,) = [note for note in result.report.notes if note.startswith("mixed-precision lists in force")]
    assert "deny (float32): Acosh, " in note and ", Selu, SoftmaxCrossEntropyWithLogits" in note
    assert "allow: BatchMatMul, BatchMatMulV2, Conv2D" in note and "infer: grappler's less Inv, Selu" in note
    path = tmp_path / "ops_info.json"
    path.write_text('{"black-list": {"to-remove": ["Selu"]}}')
    gray = plan(host, precision_mode="allow_mix_precision", modify_mixlist=str(path))
    assert "Selu" not in gray.environment[LISTS + "DENYLIST_ADD"].split(",")
    assert gray.environment[LISTS + "INFERLIST_REMOVE"] == "Inv"
    assert gray.environment[LISTS + "INFERLIST_ADD"] == gray.environment[LISTS + "DENYLIST_REMOVE"] == "Selu"
