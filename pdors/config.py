"""Typed configuration: dataclasses built from plain dicts (YAML/JSON), rejecting bad input early.

One mechanism serves every config in the project (workload, policies, runs, sweeps): :func:`build` walks a
dataclass's fields, converts values by their annotations and raises :class:`ConfigError` naming the dotted
field path and the reason for the first problem. Each dataclass may define ``check(self) -> list[str]``
for value constraints; messages there are ``"field: reason"`` relative to the dataclass.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, Literal, get_args, get_origin


class ConfigError(ValueError):
    """A configuration value is missing, unknown, of the wrong type or impossible."""

    def __init__(self, path: str, reason: str):
        self.path, self.reason = path, reason
        super().__init__(f"{path or '<root>'}: {reason}")


def _join(path: str, name: str | int) -> str:
    if isinstance(name, int):
        return f"{path}[{name}]"
    return f"{path}.{name}" if path else name


def _convert(tp: Any, value: Any, path: str) -> Any:
    origin, args = get_origin(tp), get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:  # ``X | None``: X's own error, at the field inside X that is wrong
            return _convert(options[0], value, path)
        errors = []
        for arg in options:
            try:
                return _convert(arg, value, path)
            except ConfigError as e:
                errors.append(e.reason)
        raise ConfigError(path, " or ".join(errors))
    if origin is Literal:
        if value not in args:
            raise ConfigError(path, f"must be one of {', '.join(map(repr, args))}, got {value!r}")
        return value
    if dataclasses.is_dataclass(tp):
        return build(tp, value, path)
    if origin in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(path, f"must be a list, got {type(value).__name__} {value!r}")
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(value) != len(args):
                raise ConfigError(path, f"must have {len(args)} entries, got {len(value)}")
            return tuple(_convert(a, v, _join(path, k)) for k, (a, v) in enumerate(zip(args, value, strict=False)))
        item = args[0] if args else Any
        out = [_convert(item, v, _join(path, k)) for k, v in enumerate(value)]
        return tuple(out) if origin is tuple else out
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(path, f"must be a mapping, got {type(value).__name__}")
        kt, vt = args if args else (Any, Any)
        return {_convert(kt, k, path): _convert(vt, v, _join(path, str(k))) for k, v in value.items()}
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(path, f"must be true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise ConfigError(path, f"must be an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(path, f"must be a number, got {value!r}")
        if value != value or value in (float("inf"), float("-inf")):
            raise ConfigError(path, f"must be finite, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(path, f"must be a string, got {value!r}")
        return value
    raise TypeError(f"unsupported config annotation {tp!r} at {path}")


@functools.cache
def _fields(cls) -> tuple[dict[str, Any], dict[str, dataclasses.Field]]:
    """A dataclass's resolved annotations and init fields; resolving them is most of what ``build`` costs
    (a sweep builds thousands of run specs), and they never change."""
    return typing.get_type_hints(cls), {f.name: f for f in dataclasses.fields(cls) if f.init}


def build(cls, data: Any, path: str = ""):
    """Construct dataclass ``cls`` from ``data`` (a mapping or an instance), checking everything."""
    if isinstance(data, cls):
        data = dataclasses.asdict(data)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(path, f"must be a mapping, got {type(data).__name__} {data!r}")
    hints, known = _fields(cls)
    unknown = sorted(set(map(str, data)) - set(known))
    if unknown:
        raise ConfigError(_join(path, unknown[0]), f"unknown key (known: {', '.join(sorted(known))})")
    kwargs = {}
    for name, f in known.items():
        if name in data:
            kwargs[name] = _convert(hints[name], data[name], _join(path, name))
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(_join(path, name), "required")
    obj = cls(**kwargs)
    check = getattr(obj, "check", None)
    if check is not None:
        problems = check()
        if problems:
            field_name, _, reason = problems[0].partition(": ")
            raise ConfigError(_join(path, field_name), reason)
    return obj


def to_dict(obj) -> Any:
    """Plain-data form of a config dataclass (tuples become lists), the inverse of :func:`build`."""
    if dataclasses.is_dataclass(obj):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.init}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_dict(v) for k, v in obj.items()}
    return obj


def range_problem(name: str, bounds: tuple, lo: float = 0.0) -> list[str]:
    """Check a ``[low, high]`` pair: ordered and not below ``lo``."""
    a, b = bounds
    if a > b:
        return [f"{name}: low {a} exceeds high {b}"]
    if a < lo:
        return [f"{name}: must be >= {lo}, got {a}"]
    return []


def parse_seeds(text: str, path: str = "--seeds") -> list[int]:
    """``"1-5"``, ``"1,3,8"`` or a mix (``"1-3,7"``) as a list of seeds; a ``ConfigError`` at ``path`` if not."""
    seeds: list[int] = []
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        try:
            first, last = int(lo), int(hi if sep else lo)
        except ValueError:
            raise ConfigError(path, f"expected ranges like 1-5 or lists like 1,3,8, got {text!r}") from None
        if first < 0 or last < first:
            raise ConfigError(path, f"bad range {part!r}")
        seeds.extend(range(first, last + 1))
    return seeds
