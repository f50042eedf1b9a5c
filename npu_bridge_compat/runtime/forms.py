"""The forms a traced function's calls run in, as its first calls' times decide: both doors that time their
functions (the Keras calls' functions, a TF2 program's own tf.functions) call through one `CallForms`.

Per input shapes, mixed precision is decided first (bfloat16 or float32: runtime/precision.py), then graph-kernel
fusion in its auto mode (fused or not: runtime/fusion.py), unfused until then; fusion "on" is always fused. The
options around the call (the plan's: `HostPlan.configure_function_calls`) are the baseline form: a measured mixed
precision off, fusion as its mode says. Any other form is a set of function-call options made once from them and
entered per call: a function that keeps the baseline runs as it would without the trials, and a decided call in
another form costs a lookup beyond the function's own (a Keras fit's calls, one iterator for every step, look
their form up once).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from typing import Any

from npu_bridge_compat.compat.eager import function_call_config, function_call_options_edited, function_calls_with
from npu_bridge_compat.plan.features import GraphKernelFusion, MixedPrecision
from npu_bridge_compat.runtime.fusion import fusion_trials, shape_key
from npu_bridge_compat.runtime.precision import precision_trials

# Runs the call in its fused form the first time that form runs (the Keras door reports what XLA clustered).
FirstFusedCall = Callable[[Callable[..., Any], tuple, dict], Any]


class CallForms:
    """The forms of one traced function's calls. `fusion`: the plan's graph-kernel fusion (None: none);
    `mixed`: its mixed precision where each function's runs decide it (None: the plan's own choice stands);
    `first_fused_call`: how the first fused call runs (None: as any other)."""

    def __init__(
        self,
        where: str,
        fusion: GraphKernelFusion | None,
        mixed: MixedPrecision | None,
        first_fused_call: FirstFusedCall | None = None,
    ) -> None:
        self._where, self._fusion, self._mixed = where, fusion, mixed
        self._first_fused_call = first_fused_call
        self._fusion_trials = fusion_trials()
        self._precision = precision_trials(mixed.dtype) if mixed is not None else None
        self._options: dict[tuple[bytes, bool, bool], Any] = {}  # per options around and form: its options, or None
        self._settled: tuple[weakref.ref, tuple[bool, Any]] | None = None  # an iterator, its form (fused, options)

    @property
    def changes_forms(self) -> bool:
        """Whether any call may run in a form other than the options around it."""
        return self._fusion is not None or self._mixed is not None

    @property
    def trials(self) -> int:
        """How many trials (one per input shapes and kind) its calls started."""
        return len(self._fusion_trials) + (len(self._precision) if self._precision is not None else 0)

    def call(self, run: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """`run(*args, **kwargs)` in the form decided for these inputs' shapes, deciding it where it is not yet."""
        if not self.changes_forms:
            return run(*args, **kwargs)
        only = args[0] if len(args) == 1 and not kwargs else None
        if only is not None and self._settled is not None and self._settled[0]() is only:
            fused, options = self._settled[1]  # a Keras fit calls its function with one iterator for every step
            return self._run_in(run, fused, options, args, kwargs)
        key = shape_key((args, kwargs))
        reduced, fused = self._kept(key)
        if reduced is None or fused is None:
            return self._deciding(run, key, reduced, args, kwargs)
        options = self._form_options(fused, reduced)
        if hasattr(only, "element_spec"):
            try:
                self._settled = (weakref.ref(only), (fused, options))
            except TypeError:  # not weakly referable: decided call by call
                pass
        return self._run_in(run, fused, options, args, kwargs)

    @property
    def _fused_without_trial(self) -> bool:
        """The fusion of a call that no fusion trial decides: fused only where fusion is "on"."""
        return self._fusion is not None and self._fusion.mode == "on"

    def _kept(self, key: tuple) -> tuple[bool | None, bool | None]:
        """The forms kept for `key`: (reduced precision, fused), None for one whose trial is still running."""
        reduced = self._precision.kept(key) if self._precision is not None else False
        if self._fusion is not None and self._fusion.measured:
            return reduced, self._fusion_trials.kept(key)
        return reduced, self._fused_without_trial

    def _deciding(self, run: Callable[..., Any], key: tuple, reduced: bool | None, args: tuple, kwargs: dict) -> Any:
        """A call of the trials for `key`: mixed precision first (unfused where fusion is measured, until then),
        then fusion."""
        if reduced is None:
            fused = self._fused_without_trial
            return self._precision.run(key, self._where, lambda kept: self._in_form(run, fused, kept, args, kwargs))
        return self._fusion_trials.run(key, self._where, lambda form: self._in_form(run, form, reduced, args, kwargs))

    def _in_form(self, run: Callable[..., Any], fused: bool, reduced: bool, args: tuple, kwargs: dict) -> Any:
        return self._run_in(run, fused, self._form_options(fused, reduced), args, kwargs)

    def _run_in(self, run: Callable[..., Any], fused: bool, options, args: tuple, kwargs: dict) -> Any:
        """`run` with the function-call `options` (None: the options around the call are the form)."""
        with function_calls_with(options) if options is not None else contextlib.nullcontext():
            if fused and self._first_fused_call is not None:
                first, self._first_fused_call = self._first_fused_call, None
                return first(run, args, kwargs)
            return run(*args, **kwargs)

    def _form_options(self, fused: bool, reduced: bool):
        """The function-call options of a form, made once per options around the call; None where those are the
        form already (the same config, so the function is not instantiated anew for it)."""
        current = function_call_config()
        key = (current, fused, reduced)
        if key not in self._options:

            def configure(config) -> None:
                if self._fusion is not None:
                    self._fusion.apply_to_function_calls(config, fused)
                if self._mixed is not None:
                    self._mixed.rewrite_form(config.graph_options.rewrite_options, reduced=reduced)

            options = function_call_options_edited(configure)
            self._options[key] = None if options.config_proto_serialized == current else options
        return self._options[key]
