"""Short ``repr`` for results that hold arrays: a notebook cell whose value is a validation, a run or an instance
shows what it is (its scalars, each array's dtype and shape) in a few lines, not every number it holds."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

SMALL = 8  # arrays and lists of at most this many items are shown whole
LONG = 120  # any other field's repr longer than this is summarised


def _shown(value: Any) -> str:
    if isinstance(value, np.ndarray):
        if value.size <= SMALL:
            return repr(value.tolist())
        return f"<{value.dtype} array {'x'.join(map(str, value.shape))}>"
    if isinstance(value, (list, tuple)) and len(value) > SMALL:
        kinds = sorted({type(v).__name__ for v in value})
        return f"<{type(value).__name__} of {len(value)} {'/'.join(kinds)}>"
    text = repr(value)
    if len(text) <= LONG:
        return text
    if isinstance(value, dict):
        return (
            f"<dict of {len(value)} keys: {', '.join(map(str, list(value)[:SMALL]))}{', ...' * (len(value) > SMALL)}>"
        )
    return f"<{type(value).__name__}>"


def compact_repr(obj: Any, **first: Any) -> str:
    """``Name(field=value, ...)`` of the dataclass ``obj``, each value shown short (``first``: derived values,
    e.g. ``ok``, shown before the fields)."""
    fields = [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.repr]
    parts = [f"{name}={_shown(value)}" for name, value in [*first.items(), *fields]]
    return f"{type(obj).__name__}({', '.join(parts)})"
