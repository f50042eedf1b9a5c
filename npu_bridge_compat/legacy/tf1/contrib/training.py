"""`tf.contrib.training.HParams` with TF 1.15's behaviour (no maintained package carries it).

Hyperparameters are typed by their first value; `parse("a=1,b=[2,3]")`, `parse_json`, `override_from_dict` and
`set_hparam` check and convert new values against that type and raise ValueError (KeyError for an unknown name
in `set_hparam`) exactly where TF 1.15 did. Not carried over: the HParamDef protocol buffer (`hparam_def=`,
`to_proto`, `from_proto`), whose message TensorFlow 2.15 no longer ships.
"""

from __future__ import annotations

import json
import numbers
import re
from typing import Any

__all__ = ["HParams", "parse_values"]

# One clause of `parse()`: `name=value`, `name=[v1,v2]` or `name[3]=value`.
_CLAUSE = re.compile(
    r"""
    (?P<name>[a-zA-Z][\w.]*)
    (\[\s*(?P<index>\d+)\s*\])?
    \s*=\s*
    ((?P<val>[^,\[]*) | \[(?P<vals>[^\]]*)\])
    ($|,\s*)""",
    re.VERBOSE,
)


def _parse_failure(name: str, type_: type, value: str, text: str) -> ValueError:
    return ValueError(f"Could not parse hparam '{name}' of type '{type_.__name__}' with value '{value}' in {text}")


def _parser(type_: type, name: str, text: str):
    if type_ is not bool:
        return type_

    def parse_bool(value: str) -> bool:
        if value in ("true", "True"):
            return True
        if value in ("false", "False"):
            return False
        try:
            return bool(int(value))
        except ValueError:
            raise _parse_failure(name, type_, value, text) from None

    return parse_bool


def parse_values(values: str, type_map: dict[str, type], ignore_unknown: bool = False) -> dict[str, Any]:
    """Parse `name=value` clauses into {name: value | [values] | {index: value}}, typed by `type_map`."""
    results: dict[str, Any] = {}
    position = 0
    while position < len(values):
        match = _CLAUSE.match(values, position)
        if not match:
            raise ValueError(f"Malformed hyperparameter value: {values[position:]}")
        position = match.end()
        name, index, value, items = match.group("name", "index", "val", "vals")
        if name not in type_map:
            if ignore_unknown:
                continue
            raise ValueError(f"Unknown hyperparameter type for {name}")
        parse = _parser(type_map[name], name, values)
        if items is not None:
            if index is not None:
                raise ValueError("Assignment of a list to a list index.")
            if name in results:
                raise ValueError(f"Multiple assignments to variable '{name}' in {values}")
            try:
                results[name] = [parse(item) for item in re.split("[ ,]", items) if item]
            except ValueError:
                raise _parse_failure(name, type_map[name], items, values) from None
            continue
        try:
            parsed = parse(value)
        except ValueError:
            raise _parse_failure(name, type_map[name], value, values) from None
        if index is None:
            if name in results:
                raise ValueError(f"Multiple assignments to variable '{name}' in {values}")
            results[name] = parsed
        else:
            entries = results.setdefault(name, {})
            if not isinstance(entries, dict) or int(index) in entries:
                where = name if not isinstance(entries, dict) else f"{name}[{index}]"
                raise ValueError(f"Multiple assignments to variable '{where}' in {values}")
            entries[int(index)] = parsed
    return results


def _cast(name: str, param_type: type, value: Any) -> Any:
    """`value` as `param_type`, refusing the conversions TF 1.15 refused (str<->number, bool<->other, float->int)."""
    failure = ValueError(f"Could not cast hparam '{name}' of type '{param_type}' from value {value!r}")
    if issubclass(param_type, type(None)):
        return value
    if issubclass(param_type, (str, bytes)) and not isinstance(value, (str, bytes)):
        raise failure
    if issubclass(param_type, bool) != isinstance(value, bool):
        raise failure
    if issubclass(param_type, numbers.Integral) and not isinstance(value, numbers.Integral):
        raise failure
    if issubclass(param_type, numbers.Number) and not isinstance(value, numbers.Number):
        raise failure
    return param_type(value)


class HParams:
    """Named, typed hyperparameters, read as attributes (`hparams.learning_rate`)."""

    _HAS_DYNAMIC_ATTRIBUTES = True

    def __init__(self, hparam_def=None, model_structure=None, **kwargs) -> None:
        self._hparam_types: dict[str, tuple[type, bool]] = {}
        self._model_structure = model_structure
        if hparam_def:
            raise NotImplementedError(
                "HParams(hparam_def=...) needs TF 1.15's HParamDef protocol buffer, which "
                "TensorFlow 2.15 does not ship; pass the values as keyword arguments"
            )
        for name, value in kwargs.items():
            self.add_hparam(name, value)

    def add_hparam(self, name: str, value: Any) -> None:
        """Add a hyperparameter; its type is that of `value` (of its first element for a list)."""
        if getattr(self, name, None) is not None:
            raise ValueError(f"Hyperparameter name is reserved: {name}")
        if isinstance(value, (list, tuple)):
            if not value:
                raise ValueError(f"Multi-valued hyperparameters cannot be empty: {name}")
            self._hparam_types[name] = (type(value[0]), True)
        else:
            self._hparam_types[name] = (type(value), False)
        setattr(self, name, value)

    def set_hparam(self, name: str, value: Any) -> None:
        """Set an existing hyperparameter, converting `value` to its type (KeyError when it does not exist)."""
        param_type, is_list = self._hparam_types[name]
        if isinstance(value, list):
            if not is_list:
                raise ValueError(f"Must not pass a list for single-valued parameter: {name}")
            setattr(self, name, [_cast(name, param_type, item) for item in value])
        else:
            if is_list:
                raise ValueError(f"Must pass a list for multi-valued parameter: {name}.")
            setattr(self, name, _cast(name, param_type, value))

    def del_hparam(self, name: str) -> None:
        if hasattr(self, name):
            delattr(self, name)
            del self._hparam_types[name]

    def parse(self, values: str) -> HParams:
        """Override values from `name=value,...` text (the usual `--hparams` flag)."""
        type_map = {name: param_type for name, (param_type, _) in self._hparam_types.items()}
        return self.override_from_dict(parse_values(values, type_map))

    def override_from_dict(self, values_dict: dict[str, Any]) -> HParams:
        for name, value in values_dict.items():
            self.set_hparam(name, value)
        return self

    def set_model_structure(self, model_structure) -> None:
        self._model_structure = model_structure

    def get_model_structure(self):
        return self._model_structure

    def to_json(self, indent=None, separators=None, sort_keys: bool = False) -> str:
        return json.dumps(self.values(), indent=indent, separators=separators, sort_keys=sort_keys)

    def parse_json(self, values_json: str) -> HParams:
        return self.override_from_dict(json.loads(values_json))

    def values(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._hparam_types}

    def get(self, key: str, default: Any = None) -> Any:
        """The value of `key`, or `default` when absent; a default of another type is a ValueError."""
        if key not in self._hparam_types:
            return default
        if default is not None:
            param_type, is_list = self._hparam_types[key]
            type_text = f"list<{param_type}>" if is_list else str(param_type)
            failure = f"Hparam '{key}' of type '{type_text}' is incompatible with default={default}"
            if is_list != isinstance(default, list):
                raise ValueError(failure)
            try:
                for item in default if is_list else [default]:
                    _cast(key, param_type, item)
            except ValueError as error:
                raise ValueError(f"{failure}. {error}") from None
        return getattr(self, key)

    def __contains__(self, key: str) -> bool:
        return key in self._hparam_types

    def __str__(self) -> str:
        return str(sorted(self.values().items()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self})"
