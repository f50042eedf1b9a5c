"""What this host offers: TensorFlow version and devices. Every device check lives here (the differences
between TensorFlow lines: npu_bridge_compat/compat.py).

The plan takes a `HostFacts` value, so tests and `explain --host gpu` can plan for a host other than this one.
"""

from __future__ import annotations

import dataclasses
import functools
import os

from npu_bridge_compat.errors import NpuOptionValueError

CPU_FLOAT16_ENV = "NPU_BRIDGE_COMPAT_CPU_FLOAT16"
GRAPH_KERNEL_ENV = "NPU_BRIDGE_COMPAT_GRAPH_KERNEL"  # `run --graph-kernel`, `launch --graph-kernel`, a shell loop
# Graph-kernel fusion's modes: off; auto (each function's first runs measure both forms and keep the faster); on
# (always fused). The environment's values: "1", "true" and "auto" mean auto; "0", "false" and "" mean off.
GRAPH_KERNEL_MODES = ("off", "auto", "on")
_GRAPH_KERNEL_VALUES = {"": "off", "0": "off", "false": "off", "off": "off", "1": "auto", "true": "auto"}


@dataclasses.dataclass(frozen=True)
class HostFacts:
    tf_version: str
    gpu_count: int
    # Opt-in: on a CPU, emulate the NPU's float16 mixed precision instead of using bfloat16.
    cpu_float16_emulation: bool = False
    # oneDNN runs bfloat16 only on CPUs with AVX-512 (TensorFlow: "only on platforms with AVX512").
    cpu_bfloat16: bool = True
    # Graph-kernel fusion's mode asked for by the environment: off, auto or on (GRAPH_KERNEL_MODES).
    graph_kernel: str = "off"

    @property
    def has_gpu(self) -> bool:
        return self.gpu_count > 0

    @property
    def device(self) -> str:
        return "GPU" if self.has_gpu else "CPU"

    def describe(self) -> str:
        devices = f"{self.gpu_count} GPU(s)" if self.has_gpu else "CPU only"
        return f"TensorFlow {self.tf_version}, {devices}"

    def with_device(self, device: str) -> HostFacts:
        """The same host as another kind of machine, for planning elsewhere (`explain --host`, `scan --host`):
        one of HOST_KINDS. "cpu" keeps this CPU's instruction sets; the others say whether it has AVX-512."""
        if device not in HOST_KINDS:
            raise ValueError(f"unknown host kind {device!r}: one of {', '.join(HOST_KINDS)}")
        if device == "gpu":
            return dataclasses.replace(self, gpu_count=max(self.gpu_count, 1))
        bfloat16 = {"cpu": self.cpu_bfloat16, "cpu-avx512": True, "cpu-without-avx512": False}[device]
        return dataclasses.replace(self, gpu_count=0, cpu_bfloat16=bfloat16)


# What `--host` plans for: a GPU host, this CPU, or a CPU with or without AVX-512 (oneDNN's bfloat16 kernels).
HOST_KINDS = ("cpu", "cpu-avx512", "cpu-without-avx512", "gpu")


@functools.lru_cache(maxsize=1)
def detect_host() -> HostFacts:
    """The facts of this process's host (cached: devices do not change within a process)."""
    import tensorflow as tf

    flags = _cpu_flags()
    return HostFacts(
        tf_version=tf.__version__,
        gpu_count=len(tf.config.list_physical_devices("GPU")),
        cpu_float16_emulation=_switched_on(CPU_FLOAT16_ENV),
        cpu_bfloat16="avx512f" in flags,
        graph_kernel=graph_kernel_mode(os.environ.get(GRAPH_KERNEL_ENV, "")),
    )


def graph_kernel_mode(value: str) -> str:
    """The graph-kernel fusion mode (GRAPH_KERNEL_MODES) that a value of GRAPH_KERNEL_ENV asks for."""
    text = value.strip().lower()
    mode = _GRAPH_KERNEL_VALUES.get(text, text)
    if mode not in GRAPH_KERNEL_MODES:
        raise NpuOptionValueError(
            f"{GRAPH_KERNEL_ENV}={value!r} is not a graph-kernel fusion mode; allowed: auto (or 1: measure both "
            "forms, keep the faster), on (always fused), off (or 0, or empty)"
        )
    return mode


def _switched_on(variable: str) -> bool:
    return os.environ.get(variable, "") not in ("", "0", "false", "False")


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            line = next((line for line in cpuinfo if line.startswith("flags")), "")
    except OSError:
        return set()
    return set(line.partition(":")[2].split())
