"""Fuzzing: random mutations of a valid sweep config and instance file, fed in process to ``sweep run
--dry-run``, ``simulate`` and ``opt``: each ends with an exit status (2 for bad input, one line, no traceback)
in bounded time and memory. Bounded: about a minute for the three."""

from __future__ import annotations

import copy
import json
import resource
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdors import instance_io
from pdors.workload import WorkloadConfig, generate
from pdors_cli.main import main

CONFIG = {
    "name": "fuzz",
    "policies": {"fifo": {}, "pdors": {"rounding": {"gain": 1.0}}},
    "instance": {"jobs": 3, "slots": 4, "workload": {"mix": [0.1, 0.55, 0.35]}},
    "grid": {"machines": [2, 3], "pdors.rounding.gain": "range(0.5, 1.5, 0.5)"},
    "seeds": {"start": 1, "count": 2},
    "opt": {"time_limit": 1},
    "mlflow": {"enabled": False},
    "report": [{"name": "u", "title": "utility", "x": "machines"}],
}
INSTANCE = instance_io.to_dict(generate(WorkloadConfig(), 2, 3, 4, seed=1))
SETTINGS = settings(
    max_examples=80, deadline=20_000, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
# the memory one fuzzed command may add to this process's peak (a bomb or an unchecked size costs gigabytes)
MAX_GROWTH_MB = 500

LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["range(1, 100000000)", "range(0, 1, 0)", "range(1, 5)", "x" * 100_000, "1e9", "-1", ""]),
)
VALUE = st.recursive(
    LEAF,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
SNIPPETS = ["&a ", "*a", "<<: *a\n", ": ", "\t", "{", "[", "- ", "\x00", "\ngrid:\n", "\n  ", '"', "\udcff", "\xe9"]


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for key, child in items:
        out += _paths(child, (*prefix, key))
    return out


@st.composite
def mutated(draw: st.DrawFn, base: dict) -> dict:
    """``base`` with one to three random changes: a value replaced, a key removed, an unknown key added."""
    data = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(data)[1:]))
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        op = draw(st.sampled_from(["set", "set", "delete", "add"]))
        if op == "set":
            parent[path[-1]] = draw(VALUE)
        elif op == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=6))] = draw(VALUE)
    return data


@st.composite
def text_of(draw: st.DrawFn, data: dict, dump: Any) -> bytes:
    """The document as written, sometimes with a snippet inserted or the end cut off."""
    text: str = dump(data)
    edit = draw(st.sampled_from(["none", "insert", "cut"]))
    at = draw(st.integers(0, len(text)))
    if edit == "insert":
        text = text[:at] + draw(st.sampled_from(SNIPPETS)) + text[at:]
    elif edit == "cut":
        text = text[:at]
    return text.encode("utf-8", "surrogateescape")


def _run(argv: list[str], capsys: pytest.CaptureFixture[str], allowed: tuple[int, ...]) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    status = main(argv)  # any exception but an exit status fails the test
    said = capsys.readouterr()
    assert status in allowed, (status, said.err[-500:])
    if status == 2:
        assert said.err.count("\n") == 1 and len(said.err) < 1500 and "Traceback" not in said.err, said.err
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024 < MAX_GROWTH_MB


def _dump_yaml(data: dict) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


@SETTINGS
@given(blob=mutated(CONFIG).flatmap(lambda d: text_of(d, _dump_yaml)))
def test_fuzzed_sweep_configs(blob: bytes, capsys: pytest.CaptureFixture[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "fuzz.yaml"
        config.write_bytes(blob)
        _run(["sweep", "run", str(config), "--dry-run", "--max-tasks", "500", "--out", f"{tmp}/out"], capsys, (0, 2))
        assert not (Path(tmp) / "out").exists()


@pytest.mark.parametrize("command", ["simulate", "opt"])
@SETTINGS
@given(blob=mutated(INSTANCE).flatmap(lambda d: text_of(d, json.dumps)))
def test_fuzzed_instance_files(command: str, blob: bytes, capsys: pytest.CaptureFixture[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "instance.json"
        path.write_bytes(blob)
        extra = ["--policy", "fifo"] if command == "simulate" else ["--time-limit", "2"]
        # 1 is a result, not a failure: validator violations (simulate), OPT not proven (opt)
        _run([command, "--instance", str(path), *extra], capsys, (0, 1, 2))
