"""Hostile sweep configs are refused in one line, quickly and in bounded memory, before anything is expanded
(an alias bomb, duplicate keys, ranges and seed counts in the tens of millions)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pdors import safe_yaml
from pdors.config import ConfigError, quote
from pdors_cli.main import main
from pipeline.spec import grid, schema

ALIAS_BOMB = """\
name: bomb
policies: {fifo: {}}
a: &a [1,1,1,1,1,1,1,1,1,1]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]
instance: {jobs: *h}
"""


def bounded(fn: Callable[[], Any], mib: float = 200) -> ConfigError:
    """Run ``fn`` expecting a ConfigError within ``mib`` of Python allocations (an expanded bomb would need GBs)."""
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError) as caught:
            fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < mib * 2**20, peak
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 400, str(caught.value)
    return caught.value


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hostile.yaml"
    path.write_text(text)
    return path


def test_alias_bomb_is_refused_fast_and_small(tmp_path: Path) -> None:
    assert len(ALIAS_BOMB) < 500
    err = bounded(lambda: schema.raw(write(tmp_path, ALIAS_BOMB)))
    assert err.path == "CONFIG" and "aliases expand the document" in err.reason


def test_a_few_aliases_are_fine() -> None:
    data = safe_yaml.load("base: &b {gain: 1.0}\npolicies: {pdors: {rounding: *b}, fifo: {}}\n", "CONFIG")
    assert data["policies"]["pdors"]["rounding"] == {"gain": 1.0}


def test_recursive_alias_is_refused() -> None:
    with pytest.raises(ConfigError, match="recursive alias"):
        safe_yaml.load("a: &a [1, *a]\n", "CONFIG")


def test_duplicate_keys_name_both_lines(tmp_path: Path) -> None:
    text = "name: d\npolicies: {fifo: {}}\ngrid: {machines: [10]}\ngrid: {machines: [10, 20]}\n"
    err = bounded(lambda: schema.raw(write(tmp_path, text)))
    assert err.reason.endswith("line 4: duplicate key 'grid' (first at line 3)"), err.reason
    with pytest.raises(ConfigError, match="line 1: duplicate key 'a' \\(first at line 1\\)"):
        safe_yaml.load("{a: 1, a: 2}", "CONFIG")


def test_merge_keys_are_not_duplicates() -> None:
    data = safe_yaml.load("x: &x {a: 1}\ny: {<<: *x, b: 2}\n", "CONFIG")
    assert data["y"] == {"a": 1, "b": 2}


@pytest.mark.parametrize(
    "text, field",
    [
        ("seeds: {count: 10000000}", "10,000,000 tasks"),
        ("grid: {machines: 'range(1, 100000000)'}", "99,999,999 tasks"),
        ("grid: {machines: 'range(0, 1, 1.0e-300)'}", "tasks, over the limit"),
        ("grid: {machines: 'range(1, .inf)'}", "takes finite numbers"),
    ],
)
def test_huge_plans_are_refused_before_expansion(tmp_path: Path, text: str, field: str) -> None:
    path = write(tmp_path, f"name: huge\npolicies: {{fifo: {{}}}}\n{text}\n")
    err = bounded(lambda: schema.parse(schema.raw(path)))
    assert field in str(err), err


def test_plan_limit_is_overridable_and_counts_every_task() -> None:
    data = {
        "policies": {"fifo": {}, "pdors": {}},
        "grid": {"machines": "range(1, 11)", "pdors.rounding.gain": [0.5, 1.0], "jobs,slots": [[5, 5], [6, 6]]},
        "seeds": {"count": 3},
        "opt": {},
    }
    instances = 10 * 2 * 3
    assert schema.task_count(data) == instances * (1 + 2) + instances
    with pytest.raises(ConfigError, match="240 tasks, over the limit of 239"):
        schema.parse(data, max_tasks=239)
    assert len(grid.expand(schema.parse(data, max_tasks=240)).tasks) == 240


def test_large_files_are_refused_unread(tmp_path: Path) -> None:
    seeds = ", ".join(map(str, range(1_000_000)))  # a 6.5-million-seed list is this, larger
    err = bounded(lambda: schema.raw(write(tmp_path, f"name: s\npolicies: {{fifo: {{}}}}\nseeds: [{seeds}]\n")))
    assert "over the limit of 1,048,576" in err.reason


def test_duplicate_checks_are_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted: every hash and equality test of the values' keys; linear is a few per value (one per nesting
    level), a pairwise check n^2 / 2 (12.5 million at n = 5,000)."""
    ops = [0]
    real = schema._frozen

    class Counted:
        __slots__ = ("key",)

        def __init__(self, key: object) -> None:
            self.key = key

        def __hash__(self) -> int:
            ops[0] += 1
            return hash(self.key)

        def __eq__(self, other: object) -> bool:
            ops[0] += 1
            return isinstance(other, Counted) and self.key == other.key

    monkeypatch.setattr(schema, "_frozen", lambda v: Counted(real(v)))
    n = 5_000
    with pytest.raises(ConfigError, match=rf"seeds\[{n}\]: duplicate seed 7"):
        schema.parse({"policies": {"fifo": {}}, "seeds": [*range(n), 7]})
    assert 0 < ops[0] <= 4 * n, ops
    ops[0] = 0
    values = [[k % 3, {"a": [k]}] for k in range(n)]
    with pytest.raises(ConfigError, match=rf"grid.workload.mix\[{n}\]: duplicate value \[2, \{{'a': \[5\]\}}\]"):
        schema.parse({"policies": {"fifo": {}}, "grid": {"workload.mix": [*values, [2, {"a": [5]}]]}})
    assert 0 < ops[0] <= 20 * n, ops


def test_error_messages_quote_values_bounded() -> None:
    assert len(quote("x" * 10**7)) < 120 and len(quote([[[list(range(10**6))]]])) < 120
    with pytest.raises(ConfigError) as caught:
        schema.parse({"policies": {"fifo": {}}, "name": "x " * 10**6})
    assert len(str(caught.value)) < 400


def test_a_million_run_dry_run_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(
        tmp_path,
        "name: million\npolicies: {fifo: {}, drf: {}}\ninstance: {jobs: 5, slots: 5}\n"
        "grid: {machines: 'range(1, 11)', workload.mix: [[0.1, 0.55, 0.35], [0.3, 0.69, 0.01]]}\n"
        "seeds: {start: 1, count: 25000}\n",
    )
    assert main(["sweep", "run", str(path), "--dry-run", "--out", str(tmp_path / "out")]) == 0
    assert "1000000 tasks (1000000 simulations" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def test_seeded_digests_match_the_plain_digest() -> None:
    obj = {"kind": "sim", "params": {"seed": 3}, "workload": {"mix": [0.1, 0.9]}}
    assert grid.seeded_digests(obj, [0, 5, 10**12]) == [grid.digest({**obj, "seed": s}) for s in (0, 5, 10**12)]
