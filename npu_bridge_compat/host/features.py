"""Runtime features a plan asks the doors to provide (beyond ConfigProto edits and environment settings).

Plain data: each door (Estimator, session, Keras) looks for the features it supports and applies them in one
place.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

from npu_bridge_compat.options.grammars import InOutPair


@dataclasses.dataclass(frozen=True)
class StepLoop:
    """Run `iterations` training steps per session run / train-function call."""

    iterations: int


@dataclasses.dataclass(frozen=True)
class BatchNormWorkaround:
    """Build graphs with the pre-FusedBatchNormV3 ops (FusedBatchNorm / FusedBatchNormV2), for mixed compute."""


@dataclasses.dataclass(frozen=True)
class HostRegions:
    """Mixed-compute regions from in_out_pair; `on_host` is True when they stay on the host CPU."""

    pairs: tuple[InOutPair, ...]
    on_host: bool


@dataclasses.dataclass(frozen=True)
class ProfilerTrace:
    """Trace the training steps with the TensorFlow profiler into `output`."""

    output: str
    options: Mapping[str, str]


@dataclasses.dataclass(frozen=True)
class TensorDump:
    """Write op tensors of the selected steps under `path` (`steps` empty: every step)."""

    path: str
    steps: tuple[tuple[int, int], ...]
    mode: str  # input | output | all
    data: str  # tensor | stats
    layers: tuple[str, ...]  # op names to restrict the dump to; empty: all


@dataclasses.dataclass(frozen=True)
class NumericChecks:
    """Stop training at the first op (in graph order) with an Inf/NaN output, naming it."""


@dataclasses.dataclass(frozen=True)
class OpDeterminism:
    """Make TensorFlow ops deterministic."""


@dataclasses.dataclass(frozen=True)
class TensorFloat32:
    """Allow (True) or forbid (False) TF32 matmuls and convolutions on GPUs that have them."""

    enabled: bool


@dataclasses.dataclass(frozen=True)
class GpuMemoryLimit:
    """Cap the memory TensorFlow takes on the GPU."""

    megabytes: int


Feature = (StepLoop | BatchNormWorkaround | HostRegions | ProfilerTrace | TensorDump | NumericChecks
           | OpDeterminism | TensorFloat32 | GpuMemoryLimit)
