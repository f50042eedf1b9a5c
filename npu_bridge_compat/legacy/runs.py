"""Every world a run can serve, in one ordered list (`WORLDS`), and the two ways `run` serves a program (data
derived from it): a TF 1.15 program (`run --tf1`) or a TF2 one (`run --tf2`, written for the TF2 adapter's
TensorFlow 2.6 and its Keras).

`run` serves a program's worlds in the list's order (`for world in run_as.worlds: world.serve()`), so the list's
order is also the order in which the worlds' views answer the program's imports (imports/program.py); `explain
--worlds` lists them, and `scan` reads the same worlds' name statuses. Every run gets the adapter's import paths,
the ports' NumPy and Python era (the ports were all written for NumPy < 1.24 and Python 3.7) and tensorflow-
estimator 2.15 on TensorFlow 2.16 and later; TF 1.15 programs also get TF 1.15's trees and the standalone Keras 2.2
/ 2.3 that ran beside TensorFlow 1.15, TF2 programs TF 2.6's names; either may have been written for Huawei Cloud
ModelArts, so both get its `moxing` (legacy/modelarts/). `scan` decides between the two runs with the
same members (scan/run_decision.py), and reports each world's names as said by the command that serves them
(`command`).

Adding a world: its module, and one line in `WORLDS` (plus one in `ONLY_FOR` when only one kind of run gets it).
"""

from __future__ import annotations

import enum

from npu_bridge_compat.estimator_library import ESTIMATOR_LIBRARY
from npu_bridge_compat.imports.world import World
from npu_bridge_compat.legacy.adapter import ADAPTER
from npu_bridge_compat.legacy.era import ERA
from npu_bridge_compat.legacy.keras2 import KERAS2
from npu_bridge_compat.legacy.modelarts import MODELARTS
from npu_bridge_compat.legacy.tf1 import TF1
from npu_bridge_compat.legacy.tf26 import TF26

WORLDS: tuple[World, ...] = (
    ADAPTER,  # npu_bridge.*, hccl.*, npu_device.*
    TF1,  # tensorflow.contrib, tensorflow.examples; the program's `tensorflow` is TF 1.15's
    KERAS2,  # the standalone Keras 2.2 / 2.3 module paths
    TF26,  # TF 2.6 / Keras 2.6 module paths; the program's tensorflow.python.keras is the live Keras 2
    ERA,  # NumPy < 1.24 and Python 3.7 names
    ESTIMATOR_LIBRARY,  # tf.estimator on TensorFlow 2.16 and later
    MODELARTS,  # moxing, ModelArts' file library; obs:// and s3:// URLs
)


class RunAs(enum.StrEnum):
    TF1 = "tf1"
    TF2 = "tf2"

    @property
    def worlds(self) -> tuple[World, ...]:
        """The worlds served to a program of this kind, in the order they are served."""
        return tuple(world for world in WORLDS if ONLY_FOR.get(world.name, self) is self)

    @property
    def flag(self) -> str:
        return f"--{self.value}"


# The worlds that only one kind of run gets (by name); every other world of WORLDS is served to both.
ONLY_FOR = {TF1.name: RunAs.TF1, KERAS2.name: RunAs.TF1, TF26.name: RunAs.TF2}


def command(world: World) -> str:
    """The command that serves the world's names, as `scan` says it: `run --tf1` for a world only TF 1.15 programs
    get; `run` for every other (`run` decides a TF2 program's world itself)."""
    return f"run {RunAs.TF1.flag}" if ONLY_FOR.get(world.name) is RunAs.TF1 else "run"


def served_to_every_run(world: World) -> bool:
    return world.name not in ONLY_FOR
