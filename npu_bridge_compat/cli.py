"""`python -m npu_bridge_compat explain|options|run|launch|scan`.

explain   validate an NPU configuration and print what each option does on this host (exit 2 when invalid);
          --changes lists what the package changed in this process; --ranks what the rank environment says
options   print the option table (the source of docs/options.md)
run       run a ported script unmodified: `npu_bridge` / `hccl` imports resolve to npu_bridge_compat; or a
          command (`run -- bash test/train_full_1p.sh`), every Python script it starts run so
launch    run N ranks of a ported script (`launch -n 2 train.py`), like torchrun
scan      a porting report for files and folders, read without running them
          (exit 0; 1 when --fail-on is given and a script reaches that status; 2 for a path that does not exist)
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from npu_bridge_compat import changes
from npu_bridge_compat.compat import is_repeated, select_keras_2
from npu_bridge_compat.compat.xla import FUSION_FLAGS
from npu_bridge_compat.errors import NpuConfigError
from npu_bridge_compat.options import OPTIONS, OptionKind, options_from_kwargs
from npu_bridge_compat.options.readers import config_proto_values
from npu_bridge_compat.plan import HostPlan, build_plan, detect_host
from npu_bridge_compat.plan.features import GraphKernelFusion
from npu_bridge_compat.plan.platform import GRAPH_KERNEL_ENV, HOST_KINDS
from npu_bridge_compat.processes import RANKS_VARIABLE

EXIT_INVALID = 2
EXIT_FAILED_CHECK = 1  # scan --fail-on: a script reached the given status
_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}


def _parse_assignment(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep:
        raise NpuConfigError(f"expected key=value, got {text!r}")
    return key, _typed_text(key, OPTIONS.get(key), raw)


def _typed_text(key: str, spec, raw: str) -> Any:
    if spec is None or spec.kind is OptionKind.STRING:
        return raw
    if spec.kind is OptionKind.BOOL:
        if raw.lower() not in _BOOLEANS:
            raise NpuConfigError(f'NPU option "{key}" takes true or false, got {raw!r}')
        return _BOOLEANS[raw.lower()]
    try:
        return int(raw)
    except ValueError:
        raise NpuConfigError(f'NPU option "{key}" takes an integer, got {raw!r}') from None


def _read_config_file(path: str):
    from google.protobuf import text_format
    from tensorflow.core.protobuf import config_pb2

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise NpuConfigError(f"cannot read {path}: {error.strerror}") from None
    try:
        return text_format.Parse(text, config_pb2.ConfigProto())
    except text_format.ParseError as error:
        raise NpuConfigError(f"{path} is not a ConfigProto in text format: {error}") from None


def settings_text(plan: HostPlan) -> str:
    """The concrete host settings of a plan, for people (the report says why)."""
    lines = ["Host settings:"]
    lines += [f"  ConfigProto {path} = {value}" for path, value in _set_fields(plan.host_config())]
    lines += [f"  environment {name}={value}" for name, value in plan.environment.items()]
    lines += [f"  feature {feature}" for feature in plan.features]
    if plan.feature(GraphKernelFusion) is not None:
        lines.append(f"  process TF_XLA_FLAGS with {' '.join(FUSION_FLAGS)} (set before TensorFlow reads them)")
    if len(lines) == 1:
        lines.append("  none")
    return "\n".join(lines)


def _set_fields(message, prefix: str = ""):
    """(dotted field path, value) of every field set in a protobuf message, enum values by name."""
    for field, value in message.ListFields():
        path = prefix + field.name
        if field.message_type is not None and not is_repeated(field):
            yield from _set_fields(value, path + ".")
        elif field.enum_type is not None:
            yield path, field.enum_type.values_by_number[value].name
        else:
            yield path, list(value) if is_repeated(field) else value


def explain(arguments: argparse.Namespace) -> int:
    if arguments.ranks:
        status = explain_ranks()
        if status or (not arguments.assignments and not arguments.config and not arguments.changes):
            return status
    if arguments.worlds:
        print(describe_worlds())
        if not arguments.assignments and not arguments.config and not arguments.changes:
            return 0
    if arguments.changes:
        print(changes.describe())
        if not arguments.assignments and not arguments.config:
            return 0
    if arguments.storage:
        from npu_bridge_compat.legacy.modelarts import STORAGE, use_obs_root

        try:
            print(use_obs_root(arguments.obs_root) if arguments.obs_root else STORAGE.describe())
        except NpuConfigError as error:
            print(f"error: {error}", file=sys.stderr)
            return EXIT_INVALID
        if not arguments.assignments and not arguments.config:
            return 0
    host = detect_host()
    if arguments.host:
        host = host.with_device(arguments.host)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            config = _read_config_file(arguments.config) if arguments.config else None
            if any("." in text.partition("=")[0] for text in arguments.assignments):
                plan = _measured_here(_tree_plan(arguments.assignments, host), arguments.host)
                _print_warnings(caught)
                print(plan.report)
                print(settings_text(plan))
                return 0
            assignments = dict(_parse_assignment(text) for text in arguments.assignments)
            if config is not None:  # the file's values under the command line's, validated together once
                source = f"{arguments.config} and the command line" if assignments else arguments.config
                values = {**config_proto_values(config, source=arguments.config), **assignments}
                options = options_from_kwargs(values, source=source)
            else:
                options = options_from_kwargs(assignments, source="the command line")
            plan = _measured_here(build_plan(options, host, config=config), arguments.host)
        except NpuConfigError as error:
            _print_warnings(caught)
            print(f"error: {error}", file=sys.stderr)
            return EXIT_INVALID
    _print_warnings(caught)
    print(plan.report)
    print(settings_text(plan))
    return 0


def describe_worlds() -> str:
    """The worlds `run` can serve, in the order it serves them (legacy/runs.py's one list): which runs get each,
    and what it serves."""
    from npu_bridge_compat.legacy.runs import WORLDS, RunAs

    lines = ["The worlds `run` serves, in this order:"]
    for world in WORLDS:
        runs = ", ".join(f"run {run_as.flag}" for run_as in RunAs if world in run_as.worlds)
        lines.append(f"  {world.name} ({world.era}; {runs}): {world.serves}")
    return "\n".join(lines)


def explain_ranks() -> int:
    """Print which rank this process is and where every rank listens, as the environment says (exit 2 when it
    cannot describe a job)."""
    from npu_bridge_compat.distributed.cluster import describe_ranks

    try:
        print(describe_ranks())
    except NpuConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    return 0


def _measured_here(plan: HostPlan, kind: str | None) -> HostPlan:
    """On this host's CPU, the plan as a door resolves it: what the probe of this CPU measured (measured now, in a
    child process, if it never was)."""
    if kind not in (None, "cpu"):
        return plan
    from npu_bridge_compat.runtime.precision import resolve_precision

    return resolve_precision(plan)


def _tree_plan(texts: list[str], host) -> HostPlan:
    """The plan of npu_device.global_options() assignments given as dotted names (dump_config.enable_dump=true)."""
    from npu_bridge_compat.options.tf2_tree import OptionGroup
    from npu_bridge_compat.tf2.device import plan_options

    tree = OptionGroup("")
    for text in texts:
        path, sep, raw = text.partition("=")
        if not sep:
            raise NpuConfigError(f"expected name=value, got {text!r}")
        *groups, name = path.split(".")
        target = tree
        for group in groups:
            target = getattr(target, group)
        leaf = getattr(target, name)
        setattr(target, name, _typed_text(path, leaf.spec, raw))
    return plan_options(tree, host)


def _print_warnings(caught: list) -> None:
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)


def options_table(arguments: argparse.Namespace) -> int:
    print(markdown_table())
    return 0


def markdown_table() -> str:
    """The option table as Markdown, as docs/options.md holds it."""
    rows = [
        "| option | npu_device name | kind | default | allowed | concern | on a host | what it does |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for spec in OPTIONS.values():
        allowed = spec.check.describe() if spec.check else spec.python_type.__name__
        host = f"**{spec.host.effect.value}**: {spec.host.how}"
        if spec.requires:
            host += f" (read only when {' or '.join(spec.requires)} is on)"
        doc = spec.doc + (f" *{spec.deprecated}.*" if spec.deprecated else "")
        cells = [
            f"`{spec.key}`"
            + ("" if spec.tf1 else " (TF2 adapter only)")
            + (" (host extension)" if spec.host_extension else ""),
            f"`{spec.tf2_name}`" if spec.tf2_name else "—",
            spec.kind.value,
            "unset" if spec.default is None else f"`{spec.default!r}`",
            allowed,
            spec.concern.value,
            host,
            doc,
        ]
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows)


def run_script(arguments: argparse.Namespace) -> int:
    """Run SCRIPT as `python SCRIPT ARGS` would, with the adapter's import paths aliased (runner.py)."""
    from npu_bridge_compat.processes import command_of, run_command, run_serving_children
    from npu_bridge_compat.runner import graph_kernel_request, run_program

    line = arguments.command_line
    explicit = "--" in line and line[line.index("--") + 1 : line.index("--") + 2] == [arguments.script]
    command = command_of(arguments.script, arguments.script_arguments, explicit)
    try:
        if command is not None:
            return run_command(command, _run_flags(arguments), arguments.ranks)
        if arguments.ranks is not None:
            raise NpuConfigError("--ranks is for a command that starts ranks (`run --ranks N -- bash ..._8p.sh`)")
        return run_serving_children(
            lambda: run_program(
                arguments.script,
                arguments.script_arguments,
                world=arguments.world,
                graph_kernel=graph_kernel_request(arguments.graph_kernel),
                show_deprecations=arguments.show_deprecations,
                list_changes=arguments.changes,
                obs_root=arguments.obs_root,
            ),
            [arguments.script, *arguments.script_arguments],
            _run_flags(arguments),
        )
    except NpuConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID


def _run_flags(arguments: argparse.Namespace) -> list[str]:
    """`run`'s flags, as each script of a command is given them."""
    flags = [f"--{arguments.world}"] if arguments.world else []
    for flag in ("graph_kernel", "show_deprecations", "changes"):
        if getattr(arguments, flag):
            flags.append("--" + flag.replace("_", "-"))
    if arguments.obs_root:
        flags += ["--obs-root", os.path.abspath(arguments.obs_root)]
    return flags


def launch_ranks(arguments: argparse.Namespace) -> int:
    """Start the ranks of SCRIPT on this host, each as `run` runs it."""
    from npu_bridge_compat.distributed.launch import in_private_network, launch
    from npu_bridge_compat.runner import ask_for_graph_kernel_fusion, choose_world, graph_kernel_request

    if not os.path.isfile(arguments.script):
        print(f"error: no such script: {arguments.script}", file=sys.stderr)
        return EXIT_INVALID
    hosts = [host.strip() for host in arguments.hosts.split(",") if host.strip()] if arguments.hosts else None
    run_flags = []
    if arguments.obs_root:
        from npu_bridge_compat.legacy.modelarts import ObjectStorageError, use_obs_root

        try:
            said = use_obs_root(arguments.obs_root)  # refused here, before any rank starts
        except ObjectStorageError as error:
            print(f"error: {error}", file=sys.stderr)
            return EXIT_INVALID
        print(f"launch: in every rank, {said}", file=sys.stderr)
        run_flags = ["--obs-root", os.path.abspath(os.path.expanduser(arguments.obs_root))]
    mode = graph_kernel_request(arguments.graph_kernel)
    if mode is not None:
        ask_for_graph_kernel_fusion(mode)  # the ranks inherit it
    if not hosts or len(hosts) == 1:  # one host: the ranks' servers reachable from nowhere else
        again = [sys.executable, "-m", "npu_bridge_compat", *arguments.command_line]
        refused = None if arguments.host_network else in_private_network(again)
        if refused:
            print(
                f"launch: the ranks run in this host's network, where TensorFlow's servers listen on every "
                f"interface, because {refused}; block their ports with a firewall, or run on a trusted network",
                file=sys.stderr,
            )
    try:
        return launch(
            os.path.abspath(arguments.script),
            arguments.script_arguments,
            arguments.nproc,
            hosts,
            arguments.host_index,
            choose_world(arguments.script, arguments.world),  # decided once, for every rank
            run_flags,
        )
    except NpuConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID


def scan_paths(arguments: argparse.Namespace) -> int:
    from npu_bridge_compat.estimator_library import serve_estimator_imports
    from npu_bridge_compat.scan import ScanPathError, Severity, render_json, render_text, scan
    from npu_bridge_compat.scan.progress import ProgressBar

    if arguments.trial:
        return try_paths(arguments)
    # Names are looked up as `run` gives them to a program: with Keras 2 (tf_keras from 2.16), and with TensorFlow
    # 2.15's Estimator paths served from 2.16 (else a name of them would be missing until a scanned adapter name
    # loads the library, and a file's findings would depend on the files scanned before it).
    select_keras_2()
    serve_estimator_imports()
    host = detect_host()
    if arguments.host:
        host = host.with_device(arguments.host)
    bar = ProgressBar(sys.stderr)
    try:
        report = scan(arguments.paths, host=host, progress=bar)
    except ScanPathError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    finally:
        bar.close()
    print(render_json(report) if arguments.format == "json" else render_text(report))
    if arguments.fail_on:
        threshold = Severity.BLOCKED if arguments.fail_on == "blocked" else Severity.WARNING
        if any(script.status >= threshold for script in report.scripts):
            return EXIT_FAILED_CHECK
    return 0


def try_paths(arguments: argparse.Namespace) -> int:
    from npu_bridge_compat.scan import ScanPathError, render_trial_json, render_trial_text
    from npu_bridge_compat.scan.progress import ProgressBar
    from npu_bridge_compat.scan.trial import DEFAULT_TIME_LIMIT_S, TrialOutcome, TrialSetupError, try_entry_scripts

    for flag, value in (("--jobs", arguments.jobs), ("--time-limit", arguments.time_limit)):
        if value is not None and value <= 0:
            print(f"error: {flag} takes a positive number, got {value:g}", file=sys.stderr)
            return EXIT_INVALID
    bar = ProgressBar(sys.stderr, unit="scripts", minimum=1)
    try:
        time_limit = DEFAULT_TIME_LIMIT_S if arguments.time_limit is None else arguments.time_limit
        report = try_entry_scripts(arguments.paths, arguments.jobs, time_limit, progress=bar)
    except (ScanPathError, TrialSetupError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INVALID
    finally:
        bar.close()
    print(render_trial_json(report) if arguments.format == "json" else render_trial_text(report))
    # a launch script whose Python script got as far as reading its (empty) data folder has started
    spared = {TrialOutcome.STARTED, TrialOutcome.NEEDS_DATA}
    spared |= {TrialOutcome.TIMED_OUT} if arguments.fail_on == "blocked" else set()
    if arguments.fail_on and any(trial.outcome not in spared for trial in report.trials):
        return EXIT_FAILED_CHECK
    return 0


HOST_HELP = (
    "plan for another host than this one, named by what it computes fast: this CPU; a CPU with native bfloat16 "
    "(avx512_bf16 / amx_bf16), with native bfloat16 and float16 (avx512_fp16 / amx_fp16), with AVX-512 that only "
    "emulates bfloat16, or without AVX-512; a GPU of compute capability 8.0 (gpu: float16 and bfloat16 tensor "
    "cores), 7.0 (gpu-volta: float16 ones) or 6.1 (gpu-pascal: none)"
)


def _add_world_flags(
    parser: argparse.ArgumentParser,
    tf1_help: str = "the program is written for TF 1.15: `import tensorflow` in its modules (not in installed "
    "libraries) gives tf.compat.v1, and tensorflow.contrib is importable",
    tf2_help: str = "the program is written for TensorFlow 2 (TF 2.6's names served)",
) -> None:
    """--tf1 / --tf2: the user's choice of world; without either, `run` decides from the program's signs."""
    worlds = parser.add_mutually_exclusive_group()
    worlds.add_argument("--tf1", dest="world", action="store_const", const="tf1", help=tf1_help)
    worlds.add_argument(
        "--tf2",
        dest="world",
        action="store_const",
        const="tf2",
        help=f"{tf2_help}. Without --tf1 or --tf2 the world is decided from the signs in the script and the "
        "modules of its own it imports (sessions, placeholders, tf.contrib, npu_bridge against tf.function, "
        "GradientTape, Keras, npu_device), read without running them, as `scan` reports them",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m npu_bridge_compat", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    explain_parser = commands.add_parser("explain", help="validate NPU options and report their host effect")
    explain_parser.add_argument(
        "assignments",
        nargs="*",
        metavar="key=value",
        help="NPU options, e.g. precision_mode=allow_mix_precision iterations_per_loop=10",
    )
    explain_parser.add_argument("--config", help="a file holding a tf.compat.v1.ConfigProto in text format")
    explain_parser.add_argument("--host", choices=HOST_KINDS, help=HOST_HELP)
    explain_parser.add_argument(
        "--changes",
        action="store_true",
        help="list what npu_bridge_compat changed in TensorFlow, Keras, user objects and the process that runs this "
        "(call main(['explain', '--changes']) in a program, or use `run --changes`)",
    )
    explain_parser.add_argument(
        "--worlds",
        action="store_true",
        help="list the worlds `run` serves a ported program's imports from (the adapter's paths, TF 1.15, TF 2.6, "
        "...), in the order it serves them, and which runs get each",
    )
    explain_parser.add_argument(
        "--ranks",
        action="store_true",
        help="print which rank this process is, its device and every rank's address, as Ascend's variables or the "
        "scheduler's (Slurm, MPI, torchrun-style, TF_CONFIG) say, and which variables said so",
    )
    explain_parser.add_argument(
        "--storage",
        action="store_true",
        help="say where a ModelArts program's obs:// and s3:// URLs go under `run` on this host (its endpoint and "
        "credentials, from the environment; with --obs-root DIR, the folder they map to)",
    )
    explain_parser.add_argument("--obs-root", metavar="DIR", help="with --storage: as `run --obs-root DIR`")
    explain_parser.set_defaults(run=explain)
    options_parser = commands.add_parser("options", help="print the table of NPU options as Markdown")
    options_parser.set_defaults(run=options_table)
    run_parser = commands.add_parser("run", help="run a ported script with the npu_bridge/hccl imports aliased")
    _add_world_flags(run_parser)
    run_parser.add_argument(
        "--show-deprecations",
        action="store_true",
        help="print the deprecation notices of TensorFlow and other libraries (hidden by "
        "default; PYTHONWARNINGS or -W also brings them back)",
    )
    run_parser.add_argument(
        "--graph-kernel",
        action="store_true",
        help="graph-kernel fusion (enable_graph_kernel) in every door the script uses, unless its options set "
        "enable_graph_kernel=False: XLA auto-clustering of element-wise chains, where each function's first runs "
        f"measure the fused and unfused forms and keep the faster ({GRAPH_KERNEL_ENV}=auto or 1 does the same; "
        f"{GRAPH_KERNEL_ENV}=on always fuses, =off never; a mode set there wins over this flag)",
    )
    run_parser.add_argument(
        "--changes",
        action="store_true",
        help="when the script ends, list what npu_bridge_compat changed in TensorFlow, Keras, the script's objects "
        "and the process (as `explain --changes`)",
    )
    run_parser.add_argument(
        "--obs-root",
        metavar="DIR",
        help="the program's obs:// and s3:// URLs (moxing's mox.file) are files under DIR: obs://bucket/key is "
        "DIR/bucket/key (without it they are objects of the S3-compatible endpoint AWS_ENDPOINT_URL or S3_ENDPOINT "
        "names, see docs/modelarts.md)",
    )
    run_parser.add_argument(
        "--ranks",
        type=int,
        metavar="N",
        help="a command whose shell loop starts the ranks of a job (RANK_SIZE, RANK_ID): run only ranks 0 to N-1, "
        f"on this host, with RANK_SIZE N ({RANKS_VARIABLE}=N does the same)",
    )
    run_parser.add_argument(
        "script",
        help="the Python script to run; or a command after `--` (`run -- bash test/train_full_1p.sh ...`), or a "
        ".sh script, started with every Python script it starts run as `run` runs one",
    )
    run_parser.add_argument("script_arguments", nargs=argparse.REMAINDER, help="its arguments")
    run_parser.set_defaults(run=run_script)
    launch_parser = commands.add_parser("launch", help="run N ranks of a ported script, each as `run` does")
    launch_parser.add_argument("-n", "--nproc", type=int, required=True, help="ranks on this host")
    launch_parser.add_argument("--hosts", help="all hosts of the job, comma-separated, the same list on each host")
    launch_parser.add_argument("--host-index", type=int, help="this host's position in --hosts (found by default)")
    _add_world_flags(launch_parser, "as `run --tf1`", "as `run --tf2`")
    launch_parser.add_argument("--graph-kernel", action="store_true", help="as `run --graph-kernel`, in every rank")
    launch_parser.add_argument("--obs-root", metavar="DIR", help="as `run --obs-root DIR`, in every rank")
    launch_parser.add_argument(
        "--host-network",
        action="store_true",
        help="one host: run the ranks in this host's network instead of a private one whose "
        "only interface is loopback (for scripts that reach other machines)",
    )
    launch_parser.add_argument("script", help="the Python script to run")
    launch_parser.add_argument("script_arguments", nargs=argparse.REMAINDER, help="its arguments")
    launch_parser.set_defaults(run=launch_ranks)
    scan_parser = commands.add_parser(
        "scan",
        help="report what each ported script under PATH becomes on this host, without running it",
        description="Read every Python file under the paths (never executing it) and report, per script, what its "
        "adapter imports, NPU options, TF 1.15 names and third-party imports become on this host. Exit "
        f"status: 0; {EXIT_FAILED_CHECK} when --fail-on is given and a script reaches that status; "
        f"{EXIT_INVALID} when a path does not exist.",
    )
    scan_parser.add_argument("paths", nargs="+", metavar="PATH", help="Python files or folders (read recursively)")
    scan_parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="text for people (default), json for tools"
    )
    scan_parser.add_argument(
        "--fail-on",
        choices=("blocked", "warning"),
        help=f"exit {EXIT_FAILED_CHECK} when a script is blocked (or, with 'warning', has "
        "warnings or is blocked): for CI",
    )
    scan_parser.add_argument("--host", choices=HOST_KINDS, help=HOST_HELP)
    scan_parser.add_argument(
        "--try",
        dest="trial",
        action="store_true",
        help="start every entry script (a __main__ guard or app.run) under `run ... --help`, isolated, and report "
        "which would not start and why; --fail-on blocked: one did not start (timed out spared), warning: or timed out",
    )
    scan_parser.add_argument("-j", "--jobs", type=int, help="--try: scripts started at a time (default: the cores)")
    scan_parser.add_argument("--time-limit", type=float, metavar="S", help="--try: seconds per script (default 60)")
    scan_parser.set_defaults(run=scan_paths)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    arguments.command_line = list(sys.argv[1:] if argv is None else argv)
    return arguments.run(arguments)
