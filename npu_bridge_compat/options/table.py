"""OPTIONS: every session option the Ascend TF Adapter reads, declared once.

Validation (readers), cross-option rules, the host plan's report, `explain` and docs/options.md all read this
table. Keys, kinds, defaults, allowed values and the adapter's behaviour follow the adapter's public source and
documentation; historical keys of older adapter releases are included so that old scripts are understood.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

from npu_bridge_compat.options import grammars as g
from npu_bridge_compat.options.precision_modes import PRECISION_MODES, PRECISION_MODES_V2
from npu_bridge_compat.options.spec import (
    Concern as C,
)
from npu_bridge_compat.options.spec import (
    OptionKind as K,
)
from npu_bridge_compat.options.spec import (
    OptionSpec,
    approximated,
    no_equivalent,
    not_needed,
    translated,
)

_HCCL = "collective communication (HCCL) between NPUs; a host process trains alone"
_GE = "an Ascend Graph Engine setting with no counterpart in TensorFlow's runtime"
_AOE = "Ascend operator/graph auto-tuning (AOE) has no host counterpart"
_DYNAMIC = "TensorFlow runs dynamic shapes natively; the value is still validated"
_KERNEL = "chooses between Ascend kernel implementations; host kernels have no such switch"
_SHAPES = (
    "TensorFlow kernels take any input shape at run time: a host session compiles nothing per shape, and "
    "Keras traces its steps with reduce_retracing, which relaxes the dimensions that change"
)
_INPUT_COPY = "Ascend's host-to-device input copies; TensorFlow moves inputs to a GPU itself, with no such switch"

_SPECS = (
    # --- placement, loop, data -----------------------------------------------------------------------------
    OptionSpec(
        "iterations_per_loop",
        K.INT,
        1,
        C.LOOP,
        translated(
            "runs N training steps per session run (NPUEstimator, set_iteration_per_loop, "
            "NPUCallback), so global_step grows by N per run"
        ),
        "Training steps the device runs per session.run.",
        g.IntRange(1),
    ),
    OptionSpec(
        "mix_compile_mode",
        K.BOOL,
        False,
        C.PLACEMENT,
        translated(
            "every op already runs on the host; enables the FusedBatchNormV3 workaround and "
            "enforces iterations_per_loop == 1"
        ),
        "Mixed compute: ops the NPU cannot compile stay on the host.",
    ),
    OptionSpec(
        "enable_data_pre_proc",
        K.BOOL,
        False,
        C.DATA,
        not_needed("the input pipeline already runs on the host; N-step loops pull input inside the loop"),
        "Sink the dataset's GetNext to the device (needed for iterations_per_loop > 1 on the NPU).",
        deprecated="deprecated by the newest adapter",
    ),
    OptionSpec(
        "use_off_line",
        K.BOOL,
        True,
        C.PLACEMENT,
        not_needed("selects NPU (True) or host-CPU execution on Ascend; here everything runs on the host"),
        "Train on the NPU rather than on the host CPU.",
    ),
    OptionSpec(
        "lower_functional_ops",
        K.BOOL,
        False,
        C.COMPILE,
        not_needed("TensorFlow lowers functional control flow itself"),
        "Lower functional control-flow ops before partitioning.",
    ),
    OptionSpec(
        "const_input",
        K.STRING,
        "",
        C.COMPILE,
        not_needed("host graphs need no constant-input hints"),
        "Comma list of Placeholder names to treat as constants.",
        g.Pattern(r"[\w/.:-]+(,[\w/.:-]+)*", "input_ids,input_mask"),
    ),
    OptionSpec(
        "job",
        K.STRING,
        "localhost",
        C.DISTRIBUTED,
        not_needed("TensorFlow places ops on its own cluster jobs"),
        "Job name whose CPU receives host-side ops (localhost, ps, default, or a worker job).",
    ),
    OptionSpec(
        "task_index",
        K.INT,
        0,
        C.DISTRIBUTED,
        not_needed("TensorFlow places ops on its own cluster tasks"),
        "Task index paired with `job`.",
        g.IntRange(0),
    ),
    OptionSpec(
        "in_out_pair",
        K.STRING,
        "",
        C.PLACEMENT,
        approximated(
            "the region's first and last nodes delimit ops kept on the host CPU (flag False) "
            "or sent to the accelerator (flag True)"
        ),
        "Mixed compute: first and last nodes of regions that sink to the NPU or stay on the host.",
        g.InOutPairs(),
    ),
    OptionSpec(
        "in_out_pair_flag",
        K.BOOL,
        True,
        C.PLACEMENT,
        approximated("True: the region goes to the accelerator; False: the region stays on the host CPU"),
        "Whether the in_out_pair regions sink to the NPU (True) or stay on the host (False).",
        requires=("in_out_pair",),
    ),
    OptionSpec(
        "graph_run_mode",
        K.INT,
        1,
        C.RUNTIME,
        not_needed(
            "selects Ascend's online-inference (0) or training (1) compilation; a host runs the same graph either way"
        ),
        "0: online inference, 1: training.",
        g.Choice((0, 1)),
    ),
    OptionSpec(
        "graph_max_parallel_model_num",
        K.INT,
        1,
        C.RUNTIME,
        not_needed(
            "a TensorFlow session runs concurrent session.run calls in parallel itself; the threads are the caller's"
        ),
        "Online inference: threads that execute the graph in parallel.",
        g.IntRange(1, 2**31 - 1),
    ),
    OptionSpec(
        "session_device_id",
        K.INT,
        -1,
        C.PLACEMENT,
        approximated(
            "picks the GPU index (visible device list); priority session_device_id > "
            "ASCEND_DEVICE_ID > DEVICE_ID, as on Ascend"
        ),
        "Logical device the session runs on.",
        g.IntRange(0),
    ),
    OptionSpec(
        "variable_placement",
        K.STRING,
        "Device",
        C.PLACEMENT,
        not_needed("TensorFlow places variables itself"),
        "Keep variables on the device or the host.",
        g.Choice(("Device", "Host")),
    ),
    OptionSpec(
        "frozen_variable",
        K.BOOL,
        False,
        C.COMPILE,
        no_equivalent(_GE),
        "Treat variables as constants in inference graphs.",
    ),
    OptionSpec(
        "external_weight", K.BOOL, False, C.MEMORY, no_equivalent(_GE), "Keep constant weights in external files."
    ),
    OptionSpec(
        "jit_compile",
        K.STRING,
        "auto",
        C.COMPILE,
        not_needed("selects Ascend static or dynamic-shape compilation, not XLA; host XLA stays off"),
        "Ascend compile mode: true (static shapes), false (dynamic), auto.",
        g.Choice(("true", "false", "auto")),
    ),
    OptionSpec(
        "shape_generalization_mode",
        K.STRING,
        "STRICT",
        C.COMPILE,
        not_needed(_SHAPES),
        "With jit_compile='true', how shapes that change between steps are generalised: STRICT (not at "
        "all), FULL (every axis to -1), ADAPTIVE (the changed axes to -1).",
        g.Choice(("STRICT", "FULL", "ADAPTIVE")),
    ),
    OptionSpec(
        "topo_sorting_mode",
        K.INT,
        0,
        C.COMPILE,
        no_equivalent(_GE),
        "Graph Engine topological sort order.",
        g.Choice((0, 1)),
    ),
    OptionSpec(
        "insert_op_file",
        K.STRING,
        "",
        C.COMPILE,
        no_equivalent("AIPP image preprocessing configuration for the NPU's vision engine"),
        "AIPP configuration file.",
    ),
    OptionSpec(
        "es_cluster_config",
        K.STRING,
        "",
        C.DISTRIBUTED,
        no_equivalent("Ascend embedding-service cluster"),
        "Embedding-service cluster configuration.",
    ),
    OptionSpec(
        "device_type",
        K.STRING,
        "default_device_type",
        C.PLACEMENT,
        not_needed("names an Ascend device type"),
        "Ascend device type.",
    ),
    OptionSpec(
        "soc_config",
        K.STRING,
        "",
        C.PLACEMENT,
        not_needed("names an Ascend chip (SoC) configuration"),
        "Ascend SoC configuration.",
    ),
    # --- precision -----------------------------------------------------------------------------------------
    OptionSpec(
        "precision_mode",
        K.STRING,
        None,
        C.PRECISION,
        translated(
            "mixed modes become grappler auto mixed precision (float16 on a GPU, bfloat16 on a "
            "CPU); float32 modes keep float32 (TF32 off)"
        ),
        "Operator precision mode.",
        g.Choice(tuple(PRECISION_MODES)),
    ),
    OptionSpec(
        "precision_mode_v2",
        K.STRING,
        None,
        C.PRECISION,
        translated(
            "as precision_mode: mixed_float16 / mixed_bfloat16 become grappler auto mixed "
            "precision, origin keeps float32"
        ),
        "Operator precision mode, newer names.",
        g.Choice(tuple(PRECISION_MODES_V2)),
    ),
    OptionSpec(
        "modify_mixlist",
        K.STRING,
        "",
        C.PRECISION,
        translated(
            "the black/white/gray edits become grappler's mixed-precision deny/allow/infer lists "
            "(TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_* variables), over the NPU's default black list, "
            "which the host keeps in float32 too"
        ),
        "JSON file that edits the mixed-precision black/white/gray operator lists.",
        g.MixListFile(),
    ),
    OptionSpec(
        "op_precision_mode",
        K.STRING,
        "",
        C.PRECISION,
        no_equivalent(_KERNEL),
        "INI file giving a precision mode per operator type.",
    ),
    OptionSpec(
        "op_select_implmode",
        K.STRING,
        "",
        C.PRECISION,
        no_equivalent(_KERNEL),
        "High-precision or high-performance operator implementations.",
        g.Choice(("high_precision", "high_performance", "high_precision_for_all", "high_performance_for_all")),
        deprecated="deprecated by the newest adapter; use op_precision_mode",
    ),
    OptionSpec(
        "optypelist_for_implmode",
        K.STRING,
        "",
        C.PRECISION,
        no_equivalent(_KERNEL),
        "Operator types that op_select_implmode applies to.",
        g.Pattern(r"\w+(,\w+)*", "Pooling,SoftmaxV2"),
        deprecated="deprecated by the newest adapter; use op_precision_mode",
    ),
    OptionSpec(
        "customize_dtypes",
        K.STRING,
        "",
        C.PRECISION,
        no_equivalent("per-operator dtype overrides in Ascend's format"),
        "Configuration file of per-operator compute dtypes.",
    ),
    OptionSpec(
        "deterministic",
        K.INT,
        0,
        C.PRECISION,
        translated("1 enables TensorFlow op determinism (tf.config.experimental.enable_op_determinism)"),
        "Deterministic computation.",
        g.Choice((0, 1)),
    ),
    OptionSpec(
        "enable_small_channel",
        K.INT,
        0,
        C.COMPILE,
        no_equivalent("an Ascend convolution optimisation for channels <= 4"),
        "Small-channel convolution optimisation.",
        g.Choice((0, 1)),
    ),
    OptionSpec(
        "enable_reduce_precision",
        K.BOOL,
        False,
        C.PRECISION,
        not_needed("the adapter itself never reads it"),
        "Historical precision switch (not read).",
    ),
    # --- memory --------------------------------------------------------------------------------------------
    OptionSpec(
        "graph_memory_max_size",
        K.STRING,
        None,
        C.MEMORY,
        approximated("with variable_memory_max_size, caps GPU memory (TensorFlow memory limit); a CPU host has no cap"),
        "Graph (feature-map) memory in bytes.",
        g.ByteSize(),
    ),
    OptionSpec(
        "variable_memory_max_size",
        K.STRING,
        None,
        C.MEMORY,
        approximated("with graph_memory_max_size, caps GPU memory (TensorFlow memory limit); a CPU host has no cap"),
        "Variable memory in bytes.",
        g.ByteSize(),
    ),
    OptionSpec(
        "atomic_clean_policy",
        K.INT,
        0,
        C.MEMORY,
        no_equivalent(_GE),
        "0: clean atomic outputs collectively, 1: per operator.",
        g.Choice((0, 1)),
    ),
    OptionSpec(
        "static_memory_policy",
        K.INT,
        0,
        C.MEMORY,
        no_equivalent(_GE),
        "Graph Engine memory allocation: 0 dynamic, 2 / 3 / 4 expanding for static / dynamic / both shapes "
        "(1 reads as 2).",
        g.Choice((0, 1, 2, 3, 4)),
    ),
    OptionSpec(
        "variable_use_1g_huge_page",
        K.INT,
        0,
        C.MEMORY,
        no_equivalent(
            "1 GB huge pages for device memory of variables and constants; TensorFlow's allocators "
            "have no page-size switch"
        ),
        "Variables and constants on 1 GB huge pages: 0 off, 1 on (fail if none), 2 on (fall back to 2 MB).",
        g.Choice((0, 1, 2)),
    ),
    OptionSpec(
        "input_fusion_size",
        K.INT,
        131072,
        C.DATA,
        no_equivalent(_INPUT_COPY),
        "Inputs up to this many bytes are fused into one host-to-device copy (0: off).",
        g.ClampedRange(0, 32 * 1024 * 1024, " bytes"),
    ),
    OptionSpec(
        "input_batch_cpy",
        K.BOOL,
        False,
        C.DATA,
        no_equivalent(_INPUT_COPY),
        "Copy several inputs to the device in one batch.",
    ),
    OptionSpec(
        "memory_optimization_policy",
        K.STRING,
        "",
        C.MEMORY,
        no_equivalent(_GE),
        "Graph Engine memory optimisation policy, e.g. MemoryPriority.",
    ),
    OptionSpec(
        "graph_slice",
        K.STRING,
        "",
        C.MEMORY,
        no_equivalent(_GE),
        "Graph slicing for memory.",
        g.Choice(("auto", "manual")),
    ),
    OptionSpec(
        "buffer_optimize",
        K.STRING,
        "l2_optimize",
        C.MEMORY,
        no_equivalent("an Ascend L2-buffer optimisation"),
        "L2 buffer optimisation.",
        g.Choice(("l2_optimize", "off_optimize")),
    ),
    OptionSpec(
        "variable_format_optimize",
        K.BOOL,
        True,
        C.MEMORY,
        not_needed("converts variables to the NPU's internal layouts (NC1HWC0)"),
        "Convert variables to device-friendly formats.",
        deprecated="deprecated by the newest adapter",
    ),
    OptionSpec(
        "graph_compiler_cache_dir",
        K.STRING,
        "",
        C.COMPILE,
        approximated("XLA's persistent compilation cache directory, when XLA is on"),
        "Directory of the compiled-graph cache.",
    ),
    OptionSpec(
        "enable_compress_weight",
        K.BOOL,
        False,
        C.MEMORY,
        no_equivalent("Ascend weight compression"),
        "Compress weights.",
    ),
    OptionSpec(
        "compress_weight_conf",
        K.STRING,
        "",
        C.MEMORY,
        no_equivalent("Ascend weight compression"),
        "Weight-compression configuration file.",
    ),
    # --- dump and debug ------------------------------------------------------------------------------------
    OptionSpec(
        "enable_dump",
        K.BOOL,
        False,
        C.DUMP,
        translated("tensors of the selected steps are written under dump_path as .npy files with an index"),
        "Dump operator inputs/outputs.",
    ),
    OptionSpec(
        "enable_dump_debug",
        K.BOOL,
        False,
        C.DUMP,
        approximated(
            "numeric checks stop training at the first op (in graph order) with an Inf/NaN "
            "output and name it (float16 saturation is not detected)"
        ),
        "Overflow/underflow detection.",
    ),
    OptionSpec(
        "dump_path",
        K.STRING,
        "",
        C.DUMP,
        translated("directory receiving dumps"),
        "Directory for dumps (must exist).",
        g.Directory(),
        requires=("enable_dump", "enable_dump_debug"),
    ),
    OptionSpec(
        "dump_step",
        K.STRING,
        "",
        C.DUMP,
        translated("selects the session runs (steps) that are dumped"),
        "Steps to dump, e.g. 0|5|10-20 (empty: all).",
        g.DumpSteps(),
        requires=("enable_dump",),
    ),
    OptionSpec(
        "dump_mode",
        K.STRING,
        "output",
        C.DUMP,
        translated("dumps op inputs, outputs or both"),
        "What to dump.",
        g.Choice(("input", "output", "all")),
        requires=("enable_dump",),
    ),
    OptionSpec(
        "dump_debug_mode",
        K.STRING,
        "all",
        C.DUMP,
        approximated("every mode becomes the same Inf/NaN check"),
        "Which overflows to detect.",
        g.Choice(("aicore_overflow", "atomic_overflow", "all")),
        requires=("enable_dump_debug",),
    ),
    OptionSpec(
        "dump_data",
        K.STRING,
        "tensor",
        C.DUMP,
        approximated("'stats' writes summary statistics instead of whole tensors"),
        "Dump whole tensors or statistics.",
        g.Choice(("tensor", "stats")),
        requires=("enable_dump",),
    ),
    OptionSpec(
        "dump_layer",
        K.STRING,
        "",
        C.DUMP,
        translated("restricts dumps to ops with these names"),
        "Space-separated op names to dump.",
        requires=("enable_dump",),
    ),
    OptionSpec(
        "quant_dumpable",
        K.STRING,
        "0",
        C.DUMP,
        not_needed("host dumps read the graph as built, so tensors before quantisation nodes are never optimised away"),
        "Online inference of AMCT-quantised graphs: keep the tensors before quantisation dumpable (1).",
        g.Choice(("0", "1")),
    ),
    OptionSpec(
        "enable_exception_dump",
        K.INT,
        2,
        C.DUMP,
        approximated(
            "1 and 2 stop training at the first op with an Inf/NaN output and name it; with "
            "dump_path set, its inputs are saved there"
        ),
        "Dump the inputs of a failing operator: 0 off, 1 normal, 2 lite.",
        g.Choice((0, 1, 2)),
    ),
    OptionSpec(
        "op_debug_level",
        K.INT,
        0,
        C.DEBUG,
        approximated("levels above 0 dump the graphs TensorFlow and XLA build to debug_dir"),
        "Operator debug level 0-4.",
        g.Choice((0, 1, 2, 3, 4)),
        deprecated="deprecated by the newest adapter; use op_debug_config",
    ),
    OptionSpec(
        "op_debug_config",
        K.STRING,
        "",
        C.DEBUG,
        no_equivalent("Ascend operator-compiler debug configuration"),
        "Operator debug configuration file.",
    ),
    OptionSpec(
        "debug_dir",
        K.STRING,
        "",
        C.DEBUG,
        approximated("receives the graph dumps (TF_DUMP_GRAPH_PREFIX, XLA's --xla_dump_to)"),
        "Directory for debug files of operator compilation.",
    ),
    # --- profiling -----------------------------------------------------------------------------------------
    OptionSpec(
        "profiling_mode",
        K.BOOL,
        False,
        C.PROFILING,
        translated(
            "traces the training steps with the TensorFlow profiler into profiling_options' "
            "output directory (TensorBoard's profile plugin reads it)"
        ),
        "Enable profiling.",
    ),
    OptionSpec(
        "profiling_options",
        K.STRING,
        "",
        C.PROFILING,
        translated("'output' is the trace directory; the Ascend collection switches are reported"),
        "Profiling options as JSON.",
        g.ProfilingOptions(),
        requires=("profiling_mode",),
    ),
    OptionSpec(
        "fp_point",
        K.STRING,
        "",
        C.PROFILING,
        not_needed("the host trace shows forward and backward ops without markers"),
        "First forward op for the training trace (adapter 1.1 era; now inside profiling_options).",
    ),
    OptionSpec(
        "bp_point",
        K.STRING,
        "",
        C.PROFILING,
        not_needed("the host trace shows forward and backward ops without markers"),
        "Last backward op for the training trace (adapter 1.1 era; now inside profiling_options).",
    ),
    # --- dynamic shape -------------------------------------------------------------------------------------
    OptionSpec(
        "input_shape",
        K.STRING,
        "",
        C.DYNAMIC_SHAPE,
        not_needed(_DYNAMIC),
        "Input shapes with -1 for dynamic dimensions (gear mode).",
        g.InputShape(),
    ),
    OptionSpec(
        "dynamic_dims",
        K.STRING,
        "",
        C.DYNAMIC_SHAPE,
        not_needed(_DYNAMIC),
        "Gears: sizes of the -1 dimensions of input_shape.",
        g.DynamicDims(),
    ),
    OptionSpec(
        "dynamic_node_type",
        K.INT,
        -1,
        C.DYNAMIC_SHAPE,
        not_needed(_DYNAMIC),
        "Dynamic input kind: 0 dataset, 1 placeholder.",
        g.Choice((0, 1)),
    ),
    OptionSpec(
        "compile_hybrid_mode",
        K.INT,
        0,
        C.DYNAMIC_SHAPE,
        not_needed(_DYNAMIC),
        "Online inference: compile the gears and a dynamic-shape graph, run the gear graph when the shape "
        "fits (needs the gear options, dynamic_node_type 1).",
        g.Choice((0, 1)),
    ),
    OptionSpec(
        "compile_dynamic_mode",
        K.BOOL,
        False,
        C.DYNAMIC_SHAPE,
        not_needed(_SHAPES),
        "Generalise every input shape to -1, compiling static-shape graphs as dynamic ones.",
    ),
    OptionSpec(
        "all_tensor_not_empty",
        K.BOOL,
        False,
        C.DYNAMIC_SHAPE,
        not_needed("host kernels handle empty tensors themselves; there are no empty-tensor check nodes to remove"),
        "Remove the empty-tensor check nodes of dynamic-shape graphs (no tensor is ever empty).",
    ),
    OptionSpec(
        "dynamic_input",
        K.BOOL,
        False,
        C.DYNAMIC_SHAPE,
        not_needed(_DYNAMIC),
        "Inputs have dynamic shapes.",
        deprecated="deprecated by the newest adapter",
    ),
    OptionSpec(
        "dynamic_graph_execute_mode",
        K.STRING,
        "dynamic_execute",
        C.DYNAMIC_SHAPE,
        not_needed(_DYNAMIC),
        "Dynamic-shape execution mode.",
        g.Choice(("lazy_recompile", "dynamic_execute")),
        requires=("dynamic_input",),
        deprecated="deprecated by the newest adapter",
    ),
    OptionSpec(
        "dynamic_inputs_shape_range",
        K.STRING,
        "",
        C.DYNAMIC_SHAPE,
        not_needed(_DYNAMIC),
        "Shape ranges of dynamic inputs.",
        g.ShapeRanges(),
        requires=("dynamic_input",),
        deprecated="deprecated by the newest adapter",
    ),
    # --- tuning and compilation ----------------------------------------------------------------------------
    OptionSpec(
        "aoe_mode",
        K.STRING,
        "",
        C.TUNING,
        no_equivalent(_AOE),
        "AOE tuning mode: 1 subgraph, 2 operator, 4 gradient split, mdat.",
        g.Choice(("1", "2", "4", "mdat")),
    ),
    OptionSpec(
        "work_path",
        K.STRING,
        "./",
        C.TUNING,
        no_equivalent(_AOE),
        "AOE working directory.",
        g.Directory(),
        requires=("aoe_mode",),
    ),
    OptionSpec("distribute_config", K.STRING, "", C.TUNING, no_equivalent(_AOE), "AOE distributed configuration."),
    OptionSpec("aoe_config_file", K.STRING, "", C.TUNING, no_equivalent(_AOE), "AOE configuration file."),
    OptionSpec(
        "auto_tune_mode",
        K.STRING,
        "",
        C.TUNING,
        no_equivalent(_AOE),
        "Historical Auto Tune mode: GA, RL or both.",
        g.Pattern(r"(GA|RL)([|,](GA|RL))?", "RL,GA"),
        deprecated="historical (adapter 1.x, before AOE); use aoe_mode",
    ),
    OptionSpec(
        "mstune_mode",
        K.STRING,
        "",
        C.TUNING,
        no_equivalent(_AOE),
        "Historical MindStudio tuning mode.",
        g.Choice(("1", "2", "3", "4")),
        deprecated="historical (adapter r1.2-r1.3); use aoe_mode",
    ),
    OptionSpec(
        "op_tune_mode",
        K.STRING,
        "",
        C.TUNING,
        no_equivalent(_AOE),
        "Historical operator tuning mode.",
        deprecated="historical (adapter r1.3); use aoe_mode",
    ),
    OptionSpec(
        "op_compiler_cache_mode",
        K.STRING,
        "",
        C.COMPILE,
        approximated("'enable'/'force' turn on XLA's persistent compilation cache when XLA is on"),
        "Operator compilation cache.",
        g.Choice(("enable", "disable", "force")),
    ),
    OptionSpec(
        "op_compiler_cache_dir",
        K.STRING,
        "",
        C.COMPILE,
        approximated("XLA's persistent compilation cache directory, when XLA is on"),
        "Directory of the operator compilation cache.",
    ),
    OptionSpec(
        "enable_scope_fusion_passes",
        K.STRING,
        "",
        C.COMPILE,
        no_equivalent("Ascend scope-fusion passes"),
        "Scope fusion passes to enable.",
        g.Pattern(r"\w+(,\w+)*", "ScopeLayerNormPass,ScopeClipBoxesPass"),
    ),
    OptionSpec(
        "fusion_switch_file",
        K.STRING,
        "",
        C.COMPILE,
        approximated(
            '"ALL": "off" under GraphFusion turns grappler\'s remapper (op fusion) off; '
            "individual Ascend passes have no host counterpart"
        ),
        "Switches of Ascend graph and UB fusion passes.",
        g.FusionSwitchFile(),
    ),
    OptionSpec(
        "enable_graph_kernel",
        K.BOOL,
        False,
        C.COMPILE,
        translated(
            "XLA auto-clustering restricted to fusible ops (element-wise, reductions, shapes): chains of them run "
            "as fused kernels; MatMul and Conv keep their library kernels, host-kept ops and dumps/checks stay out. "
            "True means auto: each function's first runs try the fused and unfused forms and keep the faster "
            "(NPU_BRIDGE_COMPAT_GRAPH_KERNEL=on always fuses)"
        ),
        "Graph-kernel fusion (MindSpore's enable_graph_kernel): element-wise chains compiled into fused kernels. "
        "A host extension: an NPU's Graph Engine always fuses, so the adapter has no such key.",
        host_extension=True,
    ),
    OptionSpec(
        "oo_constant_folding",
        K.BOOL,
        True,
        C.COMPILE,
        translated(
            "False turns constant folding OFF in grappler and in TensorFlow's graph optimizer; "
            "True is TensorFlow's default"
        ),
        "Constant folding during graph compilation.",
    ),
    OptionSpec(
        "oo_level",
        K.STRING,
        "O3",
        C.COMPILE,
        no_equivalent(_GE),
        "Graph Engine optimisation level (read by the adapter, not in its API reference).",
    ),
    OptionSpec(
        "optimization_switch",
        K.STRING,
        "",
        C.COMPILE,
        no_equivalent(_GE),
        "Graph Engine optimisation pass switches (read by the adapter, not in its API reference).",
    ),
    OptionSpec(
        "aicore_num",
        K.STRING,
        "",
        C.COMPILE,
        approximated("the larger core count becomes TensorFlow's intra-op thread count (the most cores one op uses)"),
        "Most Cube|Vector AI Core cores operators are compiled for, e.g. '2|4'.",
        g.CoreCounts(),
    ),
    OptionSpec(
        "export_compile_stat",
        K.INT,
        1,
        C.DEBUG,
        no_equivalent(
            "Ascend's fusion_result.json lists the Graph Engine's fusion passes; grappler keeps no such record"
        ),
        "Write fusion_result.json: 0 never, 1 at normal exit, 2 after each graph compilation.",
        g.Choice((0, 1, 2)),
    ),
    # --- distributed, streams, timeouts, experimental ------------------------------------------------------
    OptionSpec(
        "hcom_parallel",
        K.BOOL,
        True,
        C.DISTRIBUTED,
        no_equivalent(_HCCL),
        "Overlap allreduce with forward/backward computation.",
    ),
    OptionSpec(
        "is_tailing_optimization",
        K.BOOL,
        False,
        C.DISTRIBUTED,
        no_equivalent(_HCCL),
        "Overlap the last allreduce with the computation that does not depend on it.",
    ),
    OptionSpec(
        "hcom_multi_mode", K.BOOL, False, C.DISTRIBUTED, no_equivalent(_HCCL), "Several HCCL communication modes."
    ),
    OptionSpec("HCCL_algorithm", K.STRING, "", C.DISTRIBUTED, no_equivalent(_HCCL), "HCCL algorithm selection."),
    OptionSpec(
        "hccl_timeout", K.INT, None, C.DISTRIBUTED, no_equivalent(_HCCL), "Collective communication timeout in seconds."
    ),
    OptionSpec(
        "local_rank_id",
        K.INT,
        -1,
        C.DISTRIBUTED,
        no_equivalent(_HCCL),
        "Rank of the process that preprocesses data for the server's devices.",
        g.IntRange(0, 7),
    ),
    OptionSpec(
        "local_device_list",
        K.STRING,
        "",
        C.DISTRIBUTED,
        no_equivalent(_HCCL),
        "Devices that local_rank_id feeds.",
        g.Pattern(r"\d+(,\d+)*", "1,2,3", "local_device_list style is invalid, example:'1,2,3'"),
    ),
    OptionSpec(
        "stream_max_parallel_num",
        K.STRING,
        "",
        C.RUNTIME,
        approximated("the largest engine parallelism becomes TensorFlow's inter-op thread count"),
        "Parallel streams per engine, e.g. DNN_VM_AICPU:10,AIcoreEngine:1.",
        g.Pattern(r"\w+:\d+(,\w+:\d+)*", "DNN_VM_AICPU:10,AIcoreEngine:1"),
    ),
    OptionSpec(
        "auto_multistream_parallel_mode",
        K.STRING,
        "",
        C.RUNTIME,
        approximated(
            "LoadBalance:n / MainStream:n: n becomes TensorFlow's inter-op thread count (unless "
            "stream_max_parallel_num sets it); cv (Cube/Vector unit parallelism) has no host "
            "counterpart"
        ),
        "Run operators on several streams: cv, LoadBalance:n or MainStream:n.",
        g.MultistreamMode(),
    ),
    OptionSpec(
        "ac_parallel_enable",
        K.STRING,
        "",
        C.RUNTIME,
        no_equivalent("AI CPU / AI Core parallelism switch"),
        "Run AI CPU and AI Core ops in parallel.",
        g.Choice(("0", "1")),
    ),
    OptionSpec("op_wait_timeout", K.INT, None, C.RUNTIME, no_equivalent(_GE), "Operator wait timeout in seconds."),
    OptionSpec(
        "op_execute_timeout", K.INT, None, C.RUNTIME, no_equivalent(_GE), "Operator execution timeout in seconds."
    ),
    OptionSpec(
        "graph_exec_timeout",
        K.INT,
        600000,
        C.RUNTIME,
        approximated("becomes the session's operation timeout (ConfigProto.operation_timeout_in_ms)"),
        "Graph execution timeout in milliseconds.",
        g.IntRange(1),
    ),
    OptionSpec(
        "stream_sync_timeout",
        K.INT,
        -1,
        C.RUNTIME,
        no_equivalent(_GE),
        "Stream synchronisation timeout in ms (-1: none).",
    ),
    OptionSpec(
        "event_sync_timeout",
        K.INT,
        -1,
        C.RUNTIME,
        no_equivalent(_GE),
        "Event synchronisation timeout in ms (-1: none).",
    ),
    OptionSpec(
        "experimental_logical_device_cluster_deploy_mode",
        K.STRING,
        "LB",
        C.EXPERIMENTAL,
        no_equivalent(_GE),
        "Logical device deployment: LB or SINGLE.",
        g.Choice(("LB", "SINGLE")),
    ),
    OptionSpec(
        "experimental_logical_device_id", K.STRING, "", C.EXPERIMENTAL, no_equivalent(_GE), "Logical device ids."
    ),
    OptionSpec(
        "experimental_model_deploy_mode", K.STRING, "", C.EXPERIMENTAL, no_equivalent(_GE), "Model deployment mode."
    ),
    OptionSpec(
        "experimental_model_deploy_devicelist",
        K.STRING,
        "",
        C.EXPERIMENTAL,
        no_equivalent(_GE),
        "Model deployment devices.",
    ),
    OptionSpec(
        "experimental_accelerate_train_mode",
        K.STRING,
        "",
        C.EXPERIMENTAL,
        no_equivalent(_GE),
        "Accelerated-training mode.",
    ),
    OptionSpec(
        "resource_config_path", K.STRING, "", C.EXPERIMENTAL, no_equivalent(_GE), "Resource configuration file."
    ),
    OptionSpec(
        "graph_parallel_option_path",
        K.STRING,
        "",
        C.EXPERIMENTAL,
        no_equivalent(_GE),
        "Graph parallelism configuration file.",
    ),
    OptionSpec(
        "enable_graph_parallel", K.BOOL, False, C.EXPERIMENTAL, no_equivalent(_GE), "Automatic graph parallelism."
    ),
    # --- keys of the TF2 adapter only (npu_device.global_options()) -----------------------------------------
    OptionSpec(
        "overflow_flag",
        K.INT,
        1,
        C.DEBUG,
        not_needed("host kernels follow IEEE arithmetic: an overflow yields Inf/NaN, which loss scaling detects"),
        "Whether the device reports floating-point overflow (1) or saturates silently (0).",
        g.Choice((0, 1)),
        tf1=False,
    ),
    OptionSpec(
        "execute_times",
        K.INT,
        -1,
        C.LOOP,
        not_needed("each tf.function call runs once, as written; the loop size is npu_device.set_npu_loop_size"),
        "How many times the device executes a graph per call (-1: the adapter decides).",
        tf1=False,
    ),
    OptionSpec(
        "logical_device_cluster_deploy_mode",
        K.STRING,
        "LB",
        C.EXPERIMENTAL,
        no_equivalent(_GE),
        "How models are deployed over logical devices.",
        g.Choice(("LB", "SINGLE")),
        tf1=False,
    ),
    OptionSpec("logical_device_id", K.STRING, "", C.EXPERIMENTAL, no_equivalent(_GE), "Logical device ids.", tf1=False),
    OptionSpec("model_deploy_mode", K.STRING, "", C.EXPERIMENTAL, no_equivalent(_GE), "Model deploy mode.", tf1=False),
    OptionSpec(
        "model_deploy_devicelist", K.STRING, "", C.EXPERIMENTAL, no_equivalent(_GE), "Model deploy devices.", tf1=False
    ),
    OptionSpec(
        "min_group_size",
        K.BOOL,
        False,
        C.DISTRIBUTED,
        not_needed("the adapter itself never reads it"),
        "Historical key written by NPUEstimator (not read).",
    ),
)


# The TF2 adapter's option tree (tf_adapter_2.x/python/npu_device/configs/): the same GE options as the rows
# above, under dotted names. Its groups, the rows each holds, and the one row it renames.
TF2_GROUPS = {
    "": (
        "graph_run_mode", "graph_memory_max_size", "variable_memory_max_size", "variable_format_optimize",
        "enable_scope_fusion_passes", "fusion_switch_file", "precision_mode", "op_select_implmode",
        "optypelist_for_implmode", "op_compiler_cache_mode", "op_compiler_cache_dir", "stream_max_parallel_num",
        "ac_parallel_enable", "quant_dumpable", "hcom_parallel", "hcom_multi_mode", "is_tailing_optimization",
        "op_debug_level", "op_debug_config", "debug_dir", "modify_mixlist", "enable_exception_dump",
        "enable_small_channel", "deterministic", "op_precision_mode", "graph_exec_timeout", "topo_sorting_mode",
        "customize_dtypes", "overflow_flag", "stream_sync_timeout", "event_sync_timeout", "execute_times",
        "external_weight", "jit_compile", "graph_compiler_cache_dir", "input_fusion_size", "compile_dynamic_mode",
        "precision_mode_v2", "export_compile_stat", "aicore_num", "oo_constant_folding", "input_batch_cpy",
        "shape_generalization_mode", "all_tensor_not_empty", "auto_multistream_parallel_mode", "oo_level",
        "optimization_switch",
        "enable_graph_kernel",  # a host extension, read by this door as by the others
    ),
    "dump_config": (
        "enable_dump", "dump_path", "dump_step", "dump_mode", "enable_dump_debug", "dump_debug_mode", "dump_data",
        "dump_layer",
    ),
    "profiling_config": ("profiling_mode", "profiling_options"),
    "memory_config": ("atomic_clean_policy", "static_memory_policy", "variable_use_1g_huge_page"),
    "aoe_config": ("aoe_mode", "work_path", "aoe_config_file"),
    "experimental": ("resource_config_path", "graph_parallel_option_path", "enable_graph_parallel"),
    "experimental.multi_branches_config": ("input_shape", "dynamic_node_type", "dynamic_dims"),
    "experimental.logical_device_deploy_config": ("logical_device_cluster_deploy_mode", "logical_device_id"),
    "experimental.model_deploy_config": ("model_deploy_mode", "model_deploy_devicelist"),
    "experimental.graph_memory_optimize_config": ("graph_slice",),
}  # fmt: skip
_TF2_RENAMED = {"profiling_mode": "enable_profiling"}


def _tf2_names() -> dict[str, str]:
    names = {}
    for group, keys in TF2_GROUPS.items():
        for key in keys:
            leaf = _TF2_RENAMED.get(key, key)
            names[key] = f"{group}.{leaf}" if group else leaf
    return names


def _index(specs: tuple[OptionSpec, ...]) -> Mapping[str, OptionSpec]:
    table: dict[str, OptionSpec] = {}
    tf2_names = _tf2_names()
    for spec in specs:
        if spec.key in table:
            raise AssertionError(f"option {spec.key} is declared twice")
        table[spec.key] = dataclasses.replace(spec, tf2_name=tf2_names.pop(spec.key, None))
    if tf2_names:
        raise AssertionError(f"TF2 names of options the table lacks: {sorted(tf2_names)}")
    return MappingProxyType(table)


OPTIONS: Mapping[str, OptionSpec] = _index(_SPECS)
