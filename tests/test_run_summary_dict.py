"""A run's summary as plain data (every sweep task's result) equals ``dataclasses.asdict`` of it, for every
policy: the same keys, values and container types (``asdict`` keeps tuples; the summary must hold none)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from pdors.policies import POLICIES
from pdors.run import run


def _shape(value: object) -> object:
    """``value`` with each container's type name beside it, so that a tuple and a list compare unequal."""
    if isinstance(value, dict):
        return ("dict", {k: _shape(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_shape(v) for v in value])
    return (type(value).__name__, value)


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_summary_dict_is_asdict(policy: str) -> None:
    summary = run(dict(policy=policy, machines=4, jobs=6, slots=8, seed=2)).summary
    fast, literal = summary.to_dict(), dataclasses.asdict(summary)
    assert _shape(fast) == _shape(literal)
    assert json.dumps(fast, sort_keys=True) == json.dumps(literal, sort_keys=True)
