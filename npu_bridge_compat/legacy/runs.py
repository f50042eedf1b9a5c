"""The two ways `run` serves a program, each the worlds it installs, in order (data): a TF 1.15 program
(`run --tf1`) or a TF2 one (`run --tf2`, written for the TF2 adapter's TensorFlow 2.6 and its Keras). The ports
were all written for NumPy < 1.24 and Python 3.7, so both get the era's world, and either may have been written for
Huawei Cloud ModelArts, so both get its `moxing` (legacy/modelarts/); TF 1.15 programs also get the
standalone Keras 2.2 / 2.3 that ran beside TensorFlow 1.15 (its module paths that the line's Keras lacks). `scan`
decides between them with the same members (scan/world.py)."""

from __future__ import annotations

import enum

from npu_bridge_compat.imports.world import World
from npu_bridge_compat.legacy.era import ERA
from npu_bridge_compat.legacy.keras2 import KERAS2
from npu_bridge_compat.legacy.modelarts import MODELARTS
from npu_bridge_compat.legacy.tf1 import TF1
from npu_bridge_compat.legacy.tf26 import TF26


class RunAs(enum.StrEnum):
    TF1 = "tf1"
    TF2 = "tf2"

    @property
    def worlds(self) -> tuple[World, ...]:
        """The worlds served to a program of this kind, in the order they are installed."""
        return _WORLDS[self]

    @property
    def flag(self) -> str:
        return f"--{self.value}"


_WORLDS = {RunAs.TF1: (TF1, KERAS2, ERA, MODELARTS), RunAs.TF2: (TF26, ERA, MODELARTS)}
