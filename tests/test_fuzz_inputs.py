"""Fuzzing: random mutations of a valid sweep config and instance file, fed in process to ``sweep run
--dry-run``, ``simulate`` and ``opt``: each ends with an exit status (2 for bad input, one line, no traceback)
in bounded time and memory. Bounded: about a minute for the three."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import json
import resource
import tempfile
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdors import instance_io
from pdors.config import to_dict
from pdors.policies import POLICIES, policy_module
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
        # opt: 1 is a result (OPT not proven in the time limit); simulate: 1 would be a validator violation
        _run([command, "--instance", str(path), *extra], capsys, (0, 2) if command == "simulate" else (0, 1, 2))


def _numeric_fields(cls: type, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], bool]]:
    """Every numeric field of a config dataclass, nested ones included: (path, is a tuple)."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            out += _numeric_fields(typing.cast(type, tp), (*prefix, f.name))
            continue
        kinds = {a for a in (tp, *typing.get_args(tp)) if a in (int, float)}
        if kinds and typing.get_origin(tp) is not typing.Literal:
            out.append(((*prefix, f.name), typing.get_origin(tp) is tuple))
    return out


FIELDS = [(("workload", *p), t) for p, t in _numeric_fields(WorkloadConfig) if p[0] != "trace"] + [
    (("policies", name, *p), t) for name in POLICIES for p, t in _numeric_fields(policy_module(name).Config)
]
HOSTILE = st.one_of(
    st.sampled_from([10**18, 2**53, 2**31, 1.0e300, -1, 0, 1, 10**6, 5001 * 9, float("nan"), float("inf")]),
    st.integers(-(2**64), 2**64),
    st.floats(allow_nan=True, allow_infinity=True),
)


@settings(max_examples=40, deadline=60_000, derandomize=True)
@given(field=st.sampled_from(FIELDS), value=HOSTILE)
def test_every_numeric_field_is_bounded_by_its_meaning(field: tuple[tuple[str, ...], bool], value: Any) -> None:
    """A value set on any numeric config field, run for real (``simulate``, validated): exit 0 with a valid
    schedule, or exit 2 with one line; never a traceback, a hang, a validator violation (exit 1)."""
    path, is_tuple = field
    config: dict = {"workload": {k: to_dict(getattr(WorkloadConfig(), k)) for k in ("worker_demand", "ps_demand")}}
    node = config
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = [value, value] if is_tuple else value
    policy = path[1] if path[0] == "policies" else "fifo"
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "run.yaml"
        file.write_text(yaml.safe_dump(config))
        argv = ["simulate", "--config", str(file), "--policy", policy, "--machines", "2", "--jobs", "3"]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main([*argv, "--slots", "4"])
    said = err.getvalue()
    assert status in (0, 2), (path, value, status, said[-800:], out.getvalue()[-800:])
    if status == 2:
        assert said.count("\n") == 1 and "Traceback" not in said, said
        assert ".".join(path[1:] if path[0] == "workload" else path[2:]).split(".")[-1] in said, said


KNOWN = {
    "alias bomb": (
        "name: x\npolicies: {fifo: {}}\na: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
        + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcde", "bcdef", strict=True))
        + "instance: {meta: *f}\n",
        "alias bomb",
    ),
    "duplicate key": ("name: x\npolicies: {fifo: {}}\nseeds: [1]\nseeds: [2]\n", "seeds"),
}


@pytest.mark.parametrize("case", KNOWN)
def test_known_bombs_are_refused_by_name(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, why = KNOWN[case]
    config = tmp_path / "x.yaml"
    config.write_text(text)
    assert main(["sweep", "run", str(config), "--dry-run", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and why in err, err


def test_a_schedule_over_the_cell_limit_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "instance.json"
        path.write_text(json.dumps({**INSTANCE, "slots": instance_io.MAX_CELLS}))
        assert main(["simulate", "--instance", str(path), "--policy", "fifo"]) == 2
    assert "schedule cells, over the limit" in capsys.readouterr().err
