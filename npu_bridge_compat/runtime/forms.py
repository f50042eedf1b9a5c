"""The forms a traced function's calls run in, as its first calls' times decide: both doors that time their
functions (the Keras calls' functions, a TF2 program's own tf.functions) call through one `CallForms`.

Per input shapes, mixed precision is decided first (bfloat16 or float32: runtime/precision.py), then graph-kernel
fusion in its auto mode (fused or not: runtime/fusion.py), unfused until then; fusion "on" is always fused. The
options around the call (the plan's: `HostPlan.configure_function_calls`) are the baseline form: a measured mixed
precision off, fusion as its mode says. Any other form is a set of function-call options made once from them and
entered per call: a function that keeps the baseline runs as it would without the trials, and a decided call in
another form costs a lookup beyond the function's own.
"""

from __future__ import annotations

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
        self._options: dict[tuple[bytes, bool, bool], Any] = {}
        self._last_iterator: tuple[weakref.ref, tuple] | None = None

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
        key = self._shape_key(args, kwargs)
        reduced = self._precision.kept(key) if self._precision is not None else True
        fused = self._fusion is not None and self._fusion.mode == "on"
        if reduced is None:
            return self._precision.run(key, self._where, lambda kept: self._in_form(run, fused, kept, args, kwargs))
        if self._fusion is not None and self._fusion.measured:
            return self._fusion_trials.run(
                key, self._where, lambda form: self._in_form(run, form, reduced, args, kwargs)
            )
        if not fused and (self._mixed is None or not reduced):
            return run(*args, **kwargs)  # the options around the call are this form (plan.configure_function_calls)
        return self._in_form(run, fused, reduced, args, kwargs)

    def _shape_key(self, args: tuple, kwargs: dict) -> tuple:
        """The inputs' shapes; a Keras function is called with one iterator for every step of a fit, whose key is
        kept while it lives."""
        only = args[0] if len(args) == 1 and not kwargs else None
        if only is not None and self._last_iterator is not None and self._last_iterator[0]() is only:
            return self._last_iterator[1]
        key = shape_key((args, kwargs))
        if hasattr(only, "element_spec"):
            try:
                self._last_iterator = (weakref.ref(only), key)
            except TypeError:  # not weakly referable: keyed call by call
                pass
        return key

    def _in_form(self, run: Callable[..., Any], fused: bool, reduced: bool, args: tuple, kwargs: dict) -> Any:
        with function_calls_with(self._form_options(fused, reduced)):
            if fused and self._first_fused_call is not None:
                first, self._first_fused_call = self._first_fused_call, None
                return first(run, args, kwargs)
            return run(*args, **kwargs)

    def _form_options(self, fused: bool, reduced: bool):
        key = (function_call_config(), fused, reduced)
        options = self._options.get(key)
        if options is None:

            def configure(config) -> None:
                if self._fusion is not None:
                    self._fusion.apply_to_function_calls(config, fused)
                if self._mixed is not None:
                    self._mixed.rewrite_form(config.graph_options.rewrite_options, reduced=reduced)

            options = self._options[key] = function_call_options_edited(configure)
        return options
