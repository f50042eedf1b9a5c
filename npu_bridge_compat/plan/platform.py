"""What this host offers: TensorFlow version, devices and what its CPU and GPU compute fast. Every device check
lives here (the differences between TensorFlow lines: npu_bridge_compat/compat/).

The plan takes a `HostFacts` value and a `PlanEnvironment`, so tests and `explain --host KIND` can plan for a host
other than this one (HOST_KINDS) and for any environment. Facts are data: detecting them reads /proc/cpuinfo and
lists TensorFlow's GPUs, nothing more; `detect_host` and `plan_environment` are the one place that reads the host
and the process for a plan, and the planners read nothing themselves.

Reduced precision is fast only where the hardware computes in it (the capabilities, `Support`):
- bfloat16 on a CPU: native with AVX512_BF16 or AMX-BF16 (Cooper Lake, Sapphire Rapids and later, AMD Zen 4);
  with AVX-512 alone oneDNN emulates it, converting every operand, slower than float32 (Skylake, Cascade Lake,
  Ice Lake servers); without AVX-512 TensorFlow's CPU rewrite has no bfloat16 kernels to use.
- float16 on a CPU: native with AVX512_FP16 or AMX-FP16 (Sapphire / Granite Rapids); TensorFlow's CPU float16
  rewrite emulates it either way (it rounds through float16, for numerics).
- on a GPU, the compute capability: float16 tensor cores from 7.0 (Volta), bfloat16 ones from 8.0 (Ampere); below
  7.0 float16 is no faster than float32.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import os
import platform
from collections.abc import Mapping

from npu_bridge_compat.errors import NpuOptionValueError

CPU_FLOAT16_ENV = "NPU_BRIDGE_COMPAT_CPU_FLOAT16"
GRAPH_KERNEL_ENV = "NPU_BRIDGE_COMPAT_GRAPH_KERNEL"  # `run --graph-kernel`, `launch --graph-kernel`, a shell loop
# Graph-kernel fusion's modes: off; auto (each function's first runs measure both forms and keep the faster); on
# (always fused). The environment's values: "1", "true" and "auto" mean auto; "0", "false" and "" mean off.
GRAPH_KERNEL_MODES = ("off", "auto", "on")
_GRAPH_KERNEL_VALUES = {"": "off", "0": "off", "false": "off", "off": "off", "1": "auto", "true": "auto"}

# Reduced precision where the options ask for it: auto (kept where this host runs it faster than float32, measured
# where the facts cannot tell), on (kept wherever the host has a pass for it, even slower: to compare numerics with
# the NPU), off (float32 throughout).
REDUCED_PRECISION_ENV = "NPU_BRIDGE_COMPAT_REDUCED_PRECISION"
REDUCED_PRECISION_MODES = ("auto", "on", "off")
_REDUCED_PRECISION_VALUES = {"": "auto", "1": "on", "true": "on", "0": "off", "false": "off"}

# The /proc/cpuinfo flags that say what reduced precision a CPU computes natively (x86).
NATIVE_BFLOAT16_FLAGS = ("avx512_bf16", "amx_bf16")
NATIVE_FLOAT16_FLAGS = ("avx512_fp16", "amx_fp16")
EMULATING_FLAG = "avx512f"  # oneDNN's bfloat16 kernels run here, converting every operand
_PRECISION_FLAGS = (EMULATING_FLAG, *NATIVE_BFLOAT16_FLAGS, *NATIVE_FLOAT16_FLAGS, "bf16", "fphp")  # "bf16": Arm


class Support(str, enum.Enum):
    """How a processor computes in a reduced-precision type."""

    NATIVE = "native"  # in hardware: faster than float32 where the work is matmul / conv
    EMULATED = "emulated"  # through conversions: usually slower than float32
    NONE = "none"  # TensorFlow has no kernels for it there
    UNKNOWN = "unknown"  # the flags do not say (another architecture, no /proc/cpuinfo)

    def __str__(self) -> str:
        return self.value


BFLOAT16_KERNELS = (Support.NATIVE, Support.EMULATED)  # CPUs where TensorFlow's oneDNN bfloat16 kernels run
FLOAT16_TENSOR_CORES = (7, 0)
BFLOAT16_TENSOR_CORES = (8, 0)


@dataclasses.dataclass(frozen=True)
class HostFacts:
    tf_version: str
    gpu_count: int
    # Opt-in: on a CPU, emulate the NPU's float16 mixed precision instead of using bfloat16.
    cpu_float16_emulation: bool = False
    # How the CPU computes bfloat16 and float16 (Support); `cpu_flags` the flags that said so.
    cpu_bfloat16: Support = Support.NATIVE
    cpu_float16: Support = Support.NONE
    cpu_model: str = ""
    cpu_flags: tuple[str, ...] = ()
    # The first GPU's compute capability (major, minor), where known.
    gpu_compute_capability: tuple[int, int] | None = None
    # Graph-kernel fusion's mode asked for by the environment: off, auto or on (GRAPH_KERNEL_MODES).
    graph_kernel: str = "off"
    # Reduced precision: auto, on or off (REDUCED_PRECISION_MODES), asked for by the environment.
    reduced_precision: str = "auto"

    @property
    def has_gpu(self) -> bool:
        return self.gpu_count > 0

    @property
    def device(self) -> str:
        return "GPU" if self.has_gpu else "CPU"

    def gpu_has(self, capability: tuple[int, int]) -> bool:
        """Whether the GPU reaches that compute capability (assumed where it is not known)."""
        return self.gpu_compute_capability is None or self.gpu_compute_capability >= capability

    @property
    def gpu_description(self) -> str:
        capability = self.gpu_compute_capability
        return f"compute capability {capability[0]}.{capability[1]}" if capability else "compute capability unknown"

    @property
    def cpu_description(self) -> str:
        """The CPU and its reduced-precision capabilities, for people: `AMD EPYC: bfloat16 native (avx512_bf16)`."""
        bfloat16_flags = [f for f in NATIVE_BFLOAT16_FLAGS if f in self.cpu_flags]
        if not bfloat16_flags and EMULATING_FLAG in self.cpu_flags:
            bfloat16_flags = [EMULATING_FLAG, "without avx512_bf16"]
        text = f"bfloat16 {self.cpu_bfloat16}" + (f" ({' '.join(bfloat16_flags)})" if bfloat16_flags else "")
        if self.cpu_float16 is Support.NATIVE:
            text += f", float16 native ({' '.join(f for f in NATIVE_FLOAT16_FLAGS if f in self.cpu_flags)})"
        return f"{self.cpu_model or 'this CPU'}: {text}"

    def describe(self) -> str:
        devices = f"{self.gpu_count} GPU(s)" if self.has_gpu else "CPU only"
        return f"TensorFlow {self.tf_version}, {devices}"

    def with_device(self, device: str) -> HostFacts:
        """The same host as another kind of machine, for planning elsewhere (`explain --host`, `scan --host`):
        one of HOST_KINDS. "cpu" is this CPU; the other CPU kinds name what their CPU computes in reduced
        precision, the GPU kinds their compute capability."""
        if device not in HOST_KINDS:
            raise ValueError(f"unknown host kind {device!r}: one of {', '.join(HOST_KINDS)}")
        if device == "cpu":
            return dataclasses.replace(self, gpu_count=0, gpu_compute_capability=None)
        if device in _GPU_KINDS:
            return dataclasses.replace(
                self, gpu_count=max(self.gpu_count, 1), gpu_compute_capability=_GPU_KINDS[device]
            )
        model, flags = _CPU_KINDS[device]
        bfloat16, float16 = cpu_support(flags, "x86_64")  # the kinds are x86 CPUs
        return dataclasses.replace(
            self,
            gpu_count=0,
            gpu_compute_capability=None,
            cpu_model=model,
            cpu_flags=flags,
            cpu_bfloat16=bfloat16,
            cpu_float16=float16,
        )


# What `--host` plans for, as data: the CPU kinds by their flags, the GPU kinds by their compute capability.
_CPU_KINDS = {
    "cpu-native-bfloat16": ("a CPU with native bfloat16 (Cooper Lake, AMD Zen 4)", ("avx512f", "avx512_bf16")),
    "cpu-native-float16": (
        "a CPU with native bfloat16 and float16 (Sapphire / Granite Rapids)",
        ("avx512f", "avx512_bf16", "amx_bf16", "avx512_fp16", "amx_fp16"),
    ),
    "cpu-emulated-bfloat16": ("a CPU with AVX-512 but no native bfloat16 (Skylake to Ice Lake)", ("avx512f",)),
    "cpu-without-avx512": ("a CPU without AVX-512", ("avx2",)),
}
_GPU_KINDS = {"gpu": (8, 0), "gpu-volta": (7, 0), "gpu-pascal": (6, 1)}
HOST_KINDS = ("cpu", *_CPU_KINDS, *_GPU_KINDS)


def cpu_support(flags, machine: str) -> tuple[Support, Support]:
    """(bfloat16, float16) support of a CPU with these /proc/cpuinfo flags on this machine architecture."""
    flags = set(flags)
    if machine not in ("x86_64", "AMD64", "i686"):
        return Support.UNKNOWN, Support.UNKNOWN
    if not flags:
        return Support.UNKNOWN, Support.UNKNOWN
    float16 = Support.NATIVE if flags & set(NATIVE_FLOAT16_FLAGS) else Support.NONE
    if flags & set(NATIVE_BFLOAT16_FLAGS):
        return Support.NATIVE, float16
    return (Support.EMULATED if EMULATING_FLAG in flags else Support.NONE), float16


@dataclasses.dataclass(frozen=True)
class PlanEnvironment:
    """What a plan needs of the process beyond the host's facts (read by plan_environment)."""

    # Where relative output folders go (a dump's default folder).
    working_directory: str = "."
    # (variable, index) of the device that ASCEND_DEVICE_ID, DEVICE_ID or a scheduler's local rank picks.
    device_id: tuple[str, int] | None = None
    # Why XLA's flags for graph-kernel fusion may not be in force in this process, or None.
    fusion_flags_problem: str | None = None


def plan_environment() -> PlanEnvironment:
    """This process's PlanEnvironment: its working folder, its device variables, its XLA flags."""
    from npu_bridge_compat.compat.xla import fusion_flags_problem
    from npu_bridge_compat.distributed.ranks import device_id_source

    return PlanEnvironment(
        working_directory=os.getcwd(), device_id=device_id_source(), fusion_flags_problem=fusion_flags_problem()
    )


@functools.lru_cache(maxsize=1)
def detect_host() -> HostFacts:
    """The facts of this process's host (cached: devices do not change within a process)."""
    import tensorflow as tf

    model, flags = _cpu_model_and_flags()
    bfloat16, float16 = cpu_support(flags, platform.machine())
    gpus = tf.config.list_physical_devices("GPU")
    return HostFacts(
        tf_version=tf.__version__,
        gpu_count=len(gpus),
        cpu_float16_emulation=_switched_on(CPU_FLOAT16_ENV),
        cpu_bfloat16=bfloat16,
        cpu_float16=float16,
        cpu_model=model,
        cpu_flags=tuple(sorted(flag for flag in flags if flag in _PRECISION_FLAGS)),
        gpu_compute_capability=_compute_capability(tf, gpus[0]) if gpus else None,
        graph_kernel=requested_graph_kernel(),
        reduced_precision=reduced_precision_mode(os.environ.get(REDUCED_PRECISION_ENV, "")),
    )


def _compute_capability(tf, gpu) -> tuple[int, int] | None:
    capability = tf.config.experimental.get_device_details(gpu).get("compute_capability")
    return tuple(capability) if capability else None


def _switch_mode(variable: str, value: str, spellings: Mapping[str, str], modes: tuple[str, ...], refused: str) -> str:
    """The mode (one of `modes`) that a value of the environment `variable` asks for, its other `spellings`
    mapped; anything else is refused: `refused` says what the variable is and the modes allowed."""
    text = value.strip().lower()
    mode = spellings.get(text, text)
    if mode not in modes:
        raise NpuOptionValueError(f"{variable}={value!r} is not {refused}")
    return mode


def graph_kernel_mode(value: str) -> str:
    """The graph-kernel fusion mode (GRAPH_KERNEL_MODES) that a value of GRAPH_KERNEL_ENV asks for."""
    return _switch_mode(
        GRAPH_KERNEL_ENV,
        value,
        _GRAPH_KERNEL_VALUES,
        GRAPH_KERNEL_MODES,
        "a graph-kernel fusion mode; allowed: auto (or 1: measure both forms, keep the faster), on (always fused), "
        "off (or 0, or empty)",
    )


def requested_graph_kernel() -> str:
    """The graph-kernel fusion mode the environment asks for: what HostFacts carries, and what a door reads before
    it detects the host (listing the devices makes TensorFlow read XLA's flags)."""
    return graph_kernel_mode(os.environ.get(GRAPH_KERNEL_ENV, ""))


def reduced_precision_mode(value: str) -> str:
    """The reduced-precision mode (REDUCED_PRECISION_MODES) that a value of REDUCED_PRECISION_ENV asks for."""
    return _switch_mode(
        REDUCED_PRECISION_ENV,
        value,
        _REDUCED_PRECISION_VALUES,
        REDUCED_PRECISION_MODES,
        "a reduced-precision mode; allowed: auto (or empty: reduced precision where it runs faster than float32 on "
        "this host), on (or 1: wherever the host has a pass for it, even slower), off (or 0: float32 throughout)",
    )


def _switched_on(variable: str) -> bool:
    return os.environ.get(variable, "") not in ("", "0", "false", "False")


def _cpu_model_and_flags() -> tuple[str, set[str]]:
    """The CPU's model name and flags from /proc/cpuinfo (Arm names its flags "Features"); empty elsewhere."""
    model, flags = "", set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                name, _, value = line.partition(":")
                name = name.strip()
                if name == "model name" and not model:
                    model = value.strip()
                elif name in ("flags", "Features") and not flags:
                    flags = set(value.split())
                if model and flags:
                    break
    except OSError:
        pass
    return model, flags
