"""Dumps and numeric checks built into the training step itself, for steps whose tensors cannot be fetched: the
body of an NPUEstimator or set_iteration_per_loop loop (iterations_per_loop > 1) and Keras' traced steps.

`StepProbes.attach(operations, step)` is called while the step is being built, with the ops of one step and a
scalar int64 tensor holding its number (steps done before it in this training call; without one, the probes
count the steps themselves). It returns ops that the step must run:
- a dump: on a selected step, a `tf.cond` hands the step's tensors to a `numpy_function` that writes them with
  `TensorDumper` (same files and index as the fetched dumps);
- a numeric check: the NaN/Inf flags of every floating-point output; the first failure (step, op, kind) is
  recorded in a small variable that the door reads after the run and turns into a `NonFiniteValueError`; with a
  dump path the failing op's inputs are saved from inside the step.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import tensorflow as tf

from npu_bridge_compat.plan.features import NumericChecks, TensorDump
from npu_bridge_compat.runtime.dump import TensorDumper
from npu_bridge_compat.runtime.numeric import NumericCheck, check_operations

_NO_FAILURE = (-1, -1, -1, -1)  # step, check, output row, kind (0 NaN, 1 Inf)


class StepProbes:
    """The dumps and checks of one training call (or session), attached to each step its door builds."""

    def __init__(
        self,
        dump: TensorDump | None,
        check_numerics: bool,
        dump_path: str | None,
        graph_name: str = "train",
        run: Callable[[], str] | None = None,
    ) -> None:
        self._dump = dump
        self._graph_name = graph_name
        self._run = run  # a dump run folder shared with other probes (TensorDumper), or None
        self._dumper = TensorDumper(dump, graph_name, run) if dump is not None else None
        self._check_numerics = check_numerics
        self._dump_path = dump_path or None
        self._checks: list[NumericCheck] = []  # one per step built (a function may be traced more than once)
        self._lock = threading.Lock()
        self.failure = None  # int64 [4]: the first failure (step, check, row, kind), or -1s
        self._steps_done = None  # int64: the probes' own step count, made when a door has none
        if check_numerics:
            self.failure = self._local_variable(_NO_FAILURE, "npu_first_failure")

    @classmethod
    def for_plan(
        cls, plan, graph_name: str = "train", dumps: bool = True, run: Callable[[], str] | None = None
    ) -> StepProbes | None:
        """The probes the plan asks for (its dumps only where `dumps`, in the shared run folder `run` gives, if
        any), or None if it asks for none."""
        dump = plan.feature(TensorDump) if dumps else None
        checks = plan.feature(NumericChecks)
        if dump is None and checks is None:
            return None
        return cls(dump, checks is not None, checks.dump_path if checks else None, graph_name, run)

    @property
    def variables(self) -> list:
        """The probes' variables (a session door initialises them itself)."""
        return [v for v in (self.failure, self._steps_done) if v is not None]

    def start(self) -> None:
        """A new training call: dumps go to a new directory, no failure is recorded, the probes' own step count
        starts again."""
        if self._dump is not None:
            self._dumper = TensorDumper(self._dump, self._graph_name, self._run)
        if self.failure is not None:
            self.failure.assign(_NO_FAILURE)
        if self._steps_done is not None:
            self._steps_done.assign(0)

    def attach(self, operations: list, step=None, imported_as: str = "") -> list:
        """The ops that dump and check `operations`, one step numbered `step` (None: the probes count), built in
        the current graph. Ops of a copy imported under the scope `imported_as` keep their original names."""
        with tf.xla.experimental.jit_scope(compile_ops=False):  # graph-kernel fusion leaves the probes out
            return self._attach(operations, step, imported_as)

    def _attach(self, operations: list, step, imported_as: str) -> list:
        counting = step is None
        if counting:
            if self._steps_done is None:
                self._steps_done = self._local_variable(0, "npu_steps_done")
            step = self._steps_done.read_value()
        built = []
        if self._dumper is not None:
            built += self._dump_op(operations, step, imported_as)
        if self._check_numerics:
            built += self._check_op(operations, step, imported_as)
        if counting:
            with tf.control_dependencies(built):
                built = [self._steps_done.assign_add(1).op]
        return built

    def raise_if_failed(self, failure: np.ndarray) -> None:
        """Raise NonFiniteValueError for a failure recorded in a run (the failure variable's value)."""
        step, check, row, kind = (int(value) for value in failure)
        if step >= 0:
            self._checks[check].raise_for(row, "NaN" if kind == 0 else "Inf", step)

    def _dump_op(self, operations: list, step, imported_as: str) -> list:
        tensors = self._dumper.tensors(operations, imported_as)
        if not tensors:
            return []
        keys = sorted(tensors)

        def write(step_value, *values) -> np.ndarray:
            with self._lock:  # Keras may run steps of several functions at once; one writer at a time
                self._dumper.write(int(step_value), dict(zip(keys, values)))
            return np.zeros([], np.int32)

        with tf.name_scope("npu_dump"):
            return [
                tf.cond(
                    self._selected(step),
                    lambda: tf.numpy_function(write, [step, *(tensors[k] for k in keys)], tf.int32, stateful=True),
                    lambda: tf.zeros([], tf.int32),
                ).op
            ]

    def _selected(self, step):
        ranges = self._dump.steps
        if not ranges:
            return tf.constant(True)
        return tf.reduce_any(tf.stack([(step >= first) & (step <= last) for first, last in ranges]))

    def _check_op(self, operations: list, step, imported_as: str) -> list:
        check = check_operations(operations, self._dump_path, imported_as, no_earlier_failure=self.failure[0] < 0)
        if check is None:
            return []
        failure = self.failure
        self._checks.append(check)
        index = len(self._checks) - 1
        with tf.name_scope("npu_numeric_checks"):
            bad = tf.reduce_any(check.flags, axis=1)
            row = tf.argmax(tf.cast(bad, tf.int32), output_type=tf.int64)
            kind = tf.cast(tf.logical_not(tf.gather(check.flags, row)[0]), tf.int64)
            record = tf.stack([tf.cast(step, tf.int64), tf.constant(index, tf.int64), row, kind])

            def keep_first_failure():
                with tf.control_dependencies([failure.assign(record)]):
                    return tf.zeros([], tf.int32)

            return [
                tf.cond(tf.reduce_any(bad) & (failure[0] < 0), keep_first_failure, lambda: tf.zeros([], tf.int32)).op
            ]

    @staticmethod
    def _local_variable(initial, name: str):
        with tf.init_scope():  # outside any loop or function: the door reads it after the run
            if tf.executing_eagerly():
                return tf.Variable(initial, dtype=tf.int64, trainable=False, name=name)
            # a graph's local variable: a new session starts from scratch
            return tf.compat.v1.Variable(
                initial,
                dtype=tf.int64,
                trainable=False,
                use_resource=True,
                name=name,
                collections=[tf.compat.v1.GraphKeys.LOCAL_VARIABLES],
            )
