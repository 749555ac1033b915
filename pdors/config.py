"""Typed configuration: dataclasses built from plain dicts (YAML/JSON), rejecting bad input early.

One mechanism serves every config in the project (workload, policies, runs, sweeps): :func:`build` walks a
dataclass's fields, converts values by their annotations and raises :class:`ConfigError` naming the dotted
field path and the reason for the first problem. Each dataclass may define ``check(self) -> list[str]``
for value constraints; messages there are ``"field: reason"`` relative to the dataclass.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import functools
import math
import reprlib
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypeVar, get_args, get_origin

from .errors import ConfigError, shorten

T = TypeVar("T")

# A JSON object whose values are of many types (a record's ``result``, the ``to_dict()`` of a result): the one
# spelling of ``dict[str, Any]`` across the project.
JSON: TypeAlias = dict[str, Any]


def _join(path: str, name: str | int) -> str:
    if isinstance(name, int):
        return f"{path}[{name}]"
    return f"{path}.{name}" if path else name


def unknown(path: str, name: str, known: list[str], what: str = "key") -> str:
    """The reason an unknown ``name`` under ``path`` gives: the nearest known name if one is near (a typo), then
    the known names."""
    return f"unknown {what}{suggestion(path, name, known)} (known: {', '.join(known)})"


def suggestion(path: str, name: str, known: list[str]) -> str:
    """``"; did you mean <path>.<nearest>?"`` when a known name is near ``name`` (a typo), else ``""``."""
    near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f"; did you mean {_join(path, near[0])}?" if near else ""


def _bounded_repr() -> reprlib.Repr:
    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxtuple, r.maxdict, r.maxset = 3, 4, 4, 4, 4
    r.maxstring, r.maxother, r.maxlong = 60, 60, 40
    return r


_REPR = _bounded_repr()


def quote(value: Any, limit: int = 80) -> str:
    """``repr(value)`` for an error message, bounded however large or deep the value (a 2 GB repr of an alias
    bomb must never reach a terminal): every error message quotes values through this."""
    return shorten(_REPR.repr(value), limit)


@dataclass(frozen=True)
class Bounds:
    """The values a numeric field may take (each number of a tuple field), and why, for the user."""

    lo: float
    hi: float
    why: str

    def problem(self, value: Any) -> str | None:
        numbers = value if isinstance(value, (tuple, list)) else (value,)
        for v in numbers:
            if isinstance(v, (int, float)) and not isinstance(v, bool) and not self.lo <= v <= self.hi:
                return f"{quote(v)} is outside [{self.lo:,.10g}, {self.hi:,.10g}]: {self.why}"
        return None


MAX_INT = 2**31 - 1
# Every numeric field without a range of its own: sizes, counts and seeds beyond 2^31 - 1 have no meaning
# for a slotted cluster model and overflow the int64 products the model forms from them.
DEFAULT_BOUNDS = {
    int: Bounds(-MAX_INT, MAX_INT, "the model's integer range"),
    float: Bounds(-1e12, 1e12, "the model's numeric range"),
}


def bounded(default: Any, lo: float, hi: float, why: str) -> Any:
    """A config field holding ``default`` whose values must lie in ``[lo, hi]`` (``why``: the reason, shown to
    the user with the field, the value and the range)."""
    return dataclasses.field(default=default, metadata={"bounds": Bounds(lo, hi, why)})


def _bounds_of(f: dataclasses.Field[Any], tp: Any) -> Bounds | None:
    if "bounds" in f.metadata:
        return typing.cast(Bounds, f.metadata["bounds"])
    kinds = {a for a in (tp, *get_args(tp)) if a in DEFAULT_BOUNDS}
    return DEFAULT_BOUNDS[int] if int in kinds else DEFAULT_BOUNDS[float] if kinds else None


Converter = Callable[[Any, Any, str], Any]  # (annotation, value, path) -> the converted value


def _union(tp: Any, value: Any, path: str) -> Any:
    args = get_args(tp)
    if value is None and type(None) in args:
        return None
    options = [a for a in args if a is not type(None)]
    if isinstance(value, dict):  # a mapping can only be meant as the mapping or dataclass option: its error alone
        options = [a for a in options if dataclasses.is_dataclass(a) or get_origin(a) is dict] or options
    if len(options) == 1:  # ``X | None``: X's own error, at the field inside X that is wrong
        return _convert(options[0], value, path)
    errors = []
    for arg in options:
        try:
            return _convert(arg, value, path)
        except ConfigError as e:
            errors.append(e.reason)
    raise ConfigError(path, " or ".join(errors))


def _literal(tp: Any, value: Any, path: str) -> Any:
    args = get_args(tp)
    if value not in args:
        raise ConfigError(path, f"must be one of {', '.join(map(repr, args))}, got {quote(value)}")
    return value


def _sequence(tp: Any, value: Any, path: str) -> Any:
    origin, args = get_origin(tp), get_args(tp)
    if not isinstance(value, (list, tuple)):
        raise ConfigError(path, f"must be a list, got {type(value).__name__} {quote(value)}")
    if origin is tuple and args and args[-1] is not Ellipsis:
        if len(value) != len(args):
            raise ConfigError(path, f"must have {len(args)} entries, got {len(value)}")
        return tuple(_convert(a, v, _join(path, k)) for k, (a, v) in enumerate(zip(args, value, strict=True)))
    item = args[0] if args else Any
    out = [_convert(item, v, _join(path, k)) for k, v in enumerate(value)]
    return tuple(out) if origin is tuple else out


def _mapping(tp: Any, value: Any, path: str) -> Any:
    if not isinstance(value, dict):
        raise ConfigError(path, f"must be a mapping, got {type(value).__name__}")
    kt, vt = get_args(tp) or (Any, Any)
    return {_convert(kt, k, path): _convert(vt, v, _join(path, str(k))) for k, v in value.items()}


def _bool(tp: Any, value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(path, f"must be true or false, got {quote(value)}")
    return value


def _int(tp: Any, value: Any, path: str) -> int:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(path, f"must be an integer, got {quote(value)}")
    return value


def _float(tp: Any, value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(path, f"must be a number, got {quote(value)}")
    if not math.isfinite(value):
        raise ConfigError(path, f"must be finite, got {quote(value)}")
    return float(value)


def _str(tp: Any, value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(path, f"must be a string, got {quote(value)}")
    return value


def _int_enum(tp: type[enum.IntEnum], value: Any, path: str) -> enum.IntEnum:
    """A named integer: given by its number (as configs and the record store it)."""
    known = {m.value for m in tp}
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value not in known:  # a list: unhashable
        raise ConfigError(path, f"must be one of {', '.join(str(m.value) for m in tp)}, got {quote(value)}")
    return tp(int(value))


# How each annotation is converted: by its generic origin (``list[int]`` -> list), else by the type itself.
_BY_ORIGIN: dict[Any, Converter] = {
    typing.Union: _union,
    types.UnionType: _union,
    Literal: _literal,
    tuple: _sequence,
    list: _sequence,
    dict: _mapping,
}
_BY_TYPE: dict[Any, Converter] = {bool: _bool, int: _int, float: _float, str: _str}


def _convert(tp: Any, value: Any, path: str) -> Any:
    if tp is Any:
        return value
    if dataclasses.is_dataclass(tp):
        return build(typing.cast(type, tp), value, path)
    if isinstance(tp, type) and issubclass(tp, enum.IntEnum):
        return _int_enum(tp, value, path)
    convert = _BY_ORIGIN.get(get_origin(tp)) or _BY_TYPE.get(tp)
    if convert is None:
        raise TypeError(f"unsupported config annotation {tp!r} at {path}")
    return convert(tp, value, path)


@functools.cache
def _fields(cls: type) -> tuple[dict[str, Any], dict[str, dataclasses.Field[Any]]]:
    """A dataclass's resolved annotations and init fields; resolving them is most of what ``build`` costs
    (a sweep builds thousands of run specs), and they never change."""
    return typing.get_type_hints(cls), {f.name: f for f in dataclasses.fields(cls) if f.init}


@functools.cache
def _field_bounds(cls: type) -> dict[str, Bounds | None]:
    hints, known = _fields(cls)
    return {name: _bounds_of(f, hints[name]) for name, f in known.items()}


def build(cls: type[T], data: Any, path: str = "") -> T:
    """Construct dataclass ``cls`` from ``data`` (a mapping or an instance), checking everything."""
    if isinstance(data, cls):
        data = dataclasses.asdict(data)  # type: ignore[call-overload]  # cls is a dataclass
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(path, f"must be a mapping, got {type(data).__name__} {quote(data)}")
    hints, known = _fields(typing.cast(type, cls))
    strangers = sorted(set(map(str, data)) - set(known))
    if strangers:
        raise ConfigError(_join(path, shorten(strangers[0], 60)), unknown(path, strangers[0], sorted(known)))
    kwargs = {}
    for name, f in known.items():
        if name in data:
            kwargs[name] = _convert(hints[name], data[name], _join(path, name))
            bounds = _field_bounds(typing.cast(type, cls))[name]
            if bounds is not None and (why := bounds.problem(kwargs[name])):
                raise ConfigError(_join(path, name), why)
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


@functools.cache
def _init_names(cls: type) -> tuple[str, ...] | None:
    """The init fields of dataclass ``cls`` (None for any other type): looked up once per type, as every run's
    summary turns its spec into plain data."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.init) if dataclasses.is_dataclass(cls) else None


_PLAIN = frozenset({int, float, str, bool, type(None)})  # values :func:`to_dict` returns as they are


def to_dict(obj: Any) -> Any:
    """Plain-data form of a config dataclass (tuples become lists), the inverse of :func:`build`."""
    if type(obj) in _PLAIN:  # most values of a run's summary: no type lookup
        return obj
    names = _init_names(obj if isinstance(obj, type) else type(obj))
    if names is not None:
        return {name: to_dict(getattr(obj, name)) for name in names}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_dict(v) for k, v in obj.items()}
    return obj


def range_problem(name: str, bounds: tuple[float, float], lo: float = 0.0) -> list[str]:
    """Check a ``[low, high]`` pair: ordered and not below ``lo``."""
    a, b = bounds
    if a > b:
        return [f"{name}: low {a} exceeds high {b}"]
    if a < lo:
        return [f"{name}: must be >= {lo}, got {a}"]
    return []


MAX_SEEDS = 100_000  # seeds one command line may ask for (a typo like 1-100000000 must not expand)


def parse_seeds(text: str, path: str = "--seeds") -> list[int]:
    """``"1-5"``, ``"1,3,8"`` or a mix (``"1-3,7"``) as a list of seeds; a ``ConfigError`` at ``path`` if not.
    The count is checked before anything is expanded."""
    ranges = []
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        try:
            first, last = int(lo), int(hi if sep else lo)
        except ValueError:
            raise ConfigError(path, f"expected ranges like 1-5 or lists like 1,3,8, got {quote(text)}") from None
        if first < 0 or last < first:
            raise ConfigError(path, f"bad range {quote(part)}")
        ranges.append(range(first, last + 1))
    if (n := sum(map(len, ranges))) > MAX_SEEDS:
        raise ConfigError(path, f"{n:,} seeds, over the limit of {MAX_SEEDS:,}")
    return [seed for r in ranges for seed in r]
