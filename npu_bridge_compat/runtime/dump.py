"""Data dumps: the tensors of the selected steps written as .npy files, with an index, for comparison with NPU
dumps.

Layout: `<dump_path>/<time>/<graph>/step_<n>/<op>.<input|output>.<slot>.npy` (with several ranks, `rank_<id>/`
before `<graph>`) and `index.json` beside them (op
name, input/output, slot, step, dtype, shape, file; with dump_data='stats' the index holds min/max/mean/std
instead of files). `<time>` (yyyymmddhhmmss, as in the NPU's dump layout) is when the dumper first writes, so a
later training call never overwrites an earlier one's dump. Only tensors that the run computes anyway are
dumped, so dumping changes nothing else: the session and Estimator doors fetch them with the step; inside a loop
or a traced function, where they cannot be fetched, `step_probes.py` writes them from within the step. Every
file is written to a temporary name and renamed, so a dump never leaves a half-written file.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from npu_bridge_compat.distributed.ranks import rank_folders
from npu_bridge_compat.plan.features import TensorDump
from npu_bridge_compat.runtime.graph import MERGE_OPS, original_name, step_operations
from npu_bridge_compat.runtime.timed_trial import DUMP, note_carried

_UNDUMPABLE = (tf.resource, tf.variant, tf.string)


class TensorDumper:
    def __init__(self, feature: TensorDump, graph_name: str, run: Callable[[], str] | None = None) -> None:
        self.feature = feature
        self._graph_name = safe_name(graph_name)
        self._run = run  # the `<dump_path>/<time>` folder this dumper shares with others; None: one of its own
        self._directory: str | None = None  # chosen at the first write

    def selects(self, step: int) -> bool:
        return not self.feature.steps or any(first <= step <= last for first, last in self.feature.steps)

    def fetches(self, graph, fetched_ops) -> dict[tuple[str, str, int], Any]:
        """The tensors to dump for a run of `fetched_ops`: (op, input|output, slot) -> tensor."""
        return self.tensors(step_operations(graph, fetched_ops))

    def tensors(self, operations, imported_as: str = "") -> dict[tuple[str, str, int], Any]:
        """The tensors of `operations` to dump: (op, input|output, slot) -> tensor, named as in the original graph
        when the ops are a copy imported under the scope `imported_as`."""
        layers = set(self.feature.layers)
        wanted = {}
        for op in operations:
            name = original_name(op, imported_as)
            if layers and name not in layers:
                continue
            if self.feature.mode in ("output", "all"):
                wanted.update({(name, "output", i): t for i, t in enumerate(op.outputs) if _dumpable(t)})
            if self.feature.mode in ("input", "all") and op.type not in MERGE_OPS:  # a Merge's inputs: see there
                wanted.update({(name, "input", i): t for i, t in enumerate(op.inputs) if _dumpable(t)})
        return wanted

    def write(self, step: int, values: dict[tuple[str, str, int], Any]) -> str:
        note_carried(DUMP)  # a dump written inside a step (the probes' numpy_function): that run is not timed
        directory = os.path.join(self._run_directory(), f"step_{step}")
        os.makedirs(directory, exist_ok=True)
        index = []
        for (op, kind, slot), value in sorted(values.items()):
            value = np.asarray(value)
            entry = {
                "op": op,
                "kind": kind,
                "slot": slot,
                "step": step,
                "dtype": value.dtype.name,
                "shape": list(value.shape),
            }
            if self.feature.data == "stats":
                numbers = value.astype(np.float64) if value.size else np.zeros([1])
                entry.update(
                    min=float(numbers.min()),
                    max=float(numbers.max()),
                    mean=float(numbers.mean()),
                    std=float(numbers.std()),
                )
            else:
                entry["file"] = f"{safe_name(op)}.{kind}.{slot}.npy"
                atomic_write(os.path.join(directory, entry["file"]), lambda f, v=value: np.save(f, v))
            index.append(entry)
        atomic_write(os.path.join(directory, "index.json"), lambda f: f.write(json.dumps(index, indent=1).encode()))
        return directory

    def _run_directory(self) -> str:
        """`<dump_path>/<time>/<graph>`, a new one for this dumper (a suffix keeps runs in the same second apart),
        or its graph's folder in the shared run folder."""
        if self._directory is None and self._run is not None:
            self._directory = os.path.join(self._run(), *rank_folders(), self._graph_name)
            os.makedirs(self._directory, exist_ok=True)
        if self._directory is None:
            stamp = time.strftime("%Y%m%d%H%M%S")
            for attempt in range(1000):
                candidate = os.path.join(
                    self.feature.path, f"{stamp}_{attempt}" if attempt else stamp, *rank_folders(), self._graph_name
                )
                try:
                    os.makedirs(candidate)
                except FileExistsError:
                    continue
                self._directory = candidate
                break
            else:
                raise FileExistsError(f"no free dump directory for {self._graph_name} under {self.feature.path}")
        return self._directory


def new_run_directory(dump_path: str) -> str:
    """A new `<dump_path>/<time>` folder, for dumpers that share one run (a suffix keeps runs apart)."""
    stamp = time.strftime("%Y%m%d%H%M%S")
    for attempt in range(1000):
        candidate = os.path.join(dump_path, f"{stamp}_{attempt}" if attempt else stamp)
        try:
            os.makedirs(candidate)
        except FileExistsError:
            continue
        return candidate
    raise FileExistsError(f"no free dump directory under {dump_path}")


def _dumpable(tensor) -> bool:
    """Values, not handles, and not a TF1 variable's own (ref) tensor, which is read before its initialiser ran
    and written while the step runs; the reads of the variable show its values."""
    return tensor.dtype not in _UNDUMPABLE and tensor.dtype == tensor.dtype.base_dtype


def safe_name(name: str) -> str:
    """A file name for an op name."""
    return re.sub(r"[^\w.-]", "_", name.replace("/", "."))


def atomic_write(path: str, write) -> None:
    """Write through a temporary name and rename, so no half-written file is ever left behind."""
    temporary = f"{path}.partial"
    with open(temporary, "wb") as file:
        write(file)
    os.replace(temporary, path)
