"""Hostile sweep configs are refused in one line, quickly and in bounded memory, before anything is expanded
(an alias bomb, duplicate keys, ranges and seed counts in the tens of millions)."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pdors import safe_yaml
from pdors.config import ConfigError, quote
from pdors_cli.main import main
from pipeline import grid, schema

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


def bounded(fn: Callable[[], Any], seconds: float = 1.0, mib: float = 200) -> ConfigError:
    """Run ``fn`` expecting a ConfigError, within ``seconds`` and ``mib`` of Python allocations."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(ConfigError) as caught:
            fn()
    finally:
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert elapsed < seconds, elapsed
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


def test_duplicate_checks_are_linear() -> None:
    started = time.perf_counter()
    with pytest.raises(ConfigError, match=r"seeds\[200000\]: duplicate seed 7"):
        schema.parse({"policies": {"fifo": {}}, "seeds": [*range(200_000), 7]})
    values = [[k % 3, {"a": [k]}] for k in range(100_000)]
    with pytest.raises(ConfigError, match=r"grid.workload.mix\[100000\]: duplicate value \[2, \{'a': \[5\]\}\]"):
        schema.parse({"policies": {"fifo": {}}, "grid": {"workload.mix": [*values, [2, {"a": [5]}]]}})
    assert time.perf_counter() - started < 5  # quadratic: minutes


def test_error_messages_quote_values_bounded() -> None:
    assert len(quote("x" * 10**7)) < 120 and len(quote([[[list(range(10**6))]]])) < 120
    with pytest.raises(ConfigError) as caught:
        schema.parse({"policies": {"fifo": {}}, "name": "x " * 10**6})
    assert len(str(caught.value)) < 400


def test_a_million_run_dry_run_takes_seconds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(
        tmp_path,
        "name: million\npolicies: {fifo: {}, drf: {}}\ninstance: {jobs: 5, slots: 5}\n"
        "grid: {machines: 'range(1, 11)', workload.mix: [[0.1, 0.55, 0.35], [0.3, 0.69, 0.01]]}\n"
        "seeds: {start: 1, count: 25000}\n",
    )
    started = time.perf_counter()
    assert main(["sweep", "run", str(path), "--dry-run", "--out", str(tmp_path / "out")]) == 0
    assert time.perf_counter() - started < 60  # about 10 s on an idle 2-core machine, probes included
    assert "1000000 tasks (1000000 simulations" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def test_seeded_digests_match_the_plain_digest() -> None:
    obj = {"kind": "sim", "params": {"seed": 3}, "workload": {"mix": [0.1, 0.9]}}
    assert grid.seeded_digests(obj, [0, 5, 10**12]) == [grid.digest({**obj, "seed": s}) for s in (0, 5, 10**12)]
