"""The sweep config (YAML): its typed schema and loader.

The structure is checked here with :func:`pdors.config.build`; values that only make sense once the grid is
expanded (every instance and policy parameter) are checked by :func:`pipeline.grid.expand`, which builds every
run spec. Both raise :class:`ConfigError` naming the field path, before anything runs or is written.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from pdors.config import ConfigError, build
from pdors.policies import POLICIES, policy_module

from .columns import DERIVED_METRICS, METRICS, POLICY_STATS_PREFIX

INSTANCE_FIELDS = ("machines", "jobs", "slots", "workload")
POLICY_AXIS = "policy"  # a figure's x: one bar per policy
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # names end up in paths and hive partition values
DEFAULT_OUTPUT = "results/sweeps"


@dataclass(frozen=True)
class SeedRange:
    start: int = 1
    count: int = 1

    def check(self) -> list[str]:
        out = []
        if self.start < 0:
            out.append(f"start: must be >= 0, got {self.start}")
        if self.count < 1:
            out.append(f"count: must be >= 1, got {self.count}")
        return out


@dataclass(frozen=True)
class OptConfig:
    """Offline optimum per distinct instance, through :mod:`pipeline.opt`."""

    solver: str = "highs"
    time_limit: float = 60.0
    mip_gap: float = 1e-4

    def check(self) -> list[str]:
        from .opt import limit_problems

        return ([] if self.solver else ["solver: must not be empty"]) + limit_problems(self.time_limit, self.mip_gap)


@dataclass(frozen=True)
class MlflowConfig:
    experiment: str = "pdors-sweeps"
    enabled: bool = True

    def check(self) -> list[str]:
        return [] if self.experiment.strip() else ["experiment: must not be empty"]


@dataclass(frozen=True)
class FigureConfig:
    """One figure ``pdors report`` draws from a sweep: ``metric`` (mean and spread over seeds) against ``x``, one
    series per policy. ``x``: a grid axis, or ``policy`` (one bar per policy). ``where``: grid axis -> the one
    value kept (e.g. one mix of a two-mix sweep). ``normalise``: divide each run's value by that policy's on
    the same instance (paper Figs. 14-17, "normalised to OASiS"). ``yscale``: ``log`` where values span orders
    of magnitude (a near-empty schedule's ratio). ``average``: grid axes pooled into each point (their runs
    count as more samples); every other axis but ``x`` and ``where``'s gets one panel per value, so by default a
    point is the mean over seeds only. ``claim``: what the paper reports."""

    name: str
    title: str
    x: str
    metric: str = "total_utility"
    where: dict[str, Any] = field(default_factory=dict)
    normalise: str | None = None
    policies: list[str] = field(default_factory=list)
    average: list[str] = field(default_factory=list)
    ylabel: str = ""
    yscale: Literal["linear", "log"] = "linear"
    claim: str = ""

    def check(self) -> list[str]:
        out = [] if NAME_RE.fullmatch(self.name) else [f"name: letters, digits, '_', '.', '-' only, got {self.name!r}"]
        known = [m for m, _ in METRICS] + list(DERIVED_METRICS)
        if self.metric not in known and not (
            self.metric.startswith(POLICY_STATS_PREFIX) and len(self.metric) > len(POLICY_STATS_PREFIX)
        ):
            out.append(
                f"metric: unknown metric {self.metric!r} (known: {', '.join(known)}, {POLICY_STATS_PREFIX}<key>)"
            )
        return out


@dataclass(frozen=True)
class SweepConfig:
    """``grid`` axes are dotted paths: ``machines``, ``jobs``, ``slots``, ``workload.<field>`` for the instance,
    ``<policy>.<param>`` (e.g. ``pdors.rounding.gain``) for one policy's parameters. Grid values override
    ``instance`` and ``policies`` values. A key naming several axes joined by commas (``jobs,slots``) is a
    paired axis: its values are lists, one entry per axis, and the axes vary together. ``range(a, b[, step])``
    (Python's: ``b`` excluded) stands for a list of values."""

    policies: dict[str, dict[str, Any] | None]
    name: str = "sweep"
    instance: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, list[Any]] = field(default_factory=dict)
    seeds: list[int] | SeedRange = field(default_factory=lambda: [1])
    opt: dict[str, Any] | None = None  # OptConfig fields; built in check() so errors keep their full path
    output: str = DEFAULT_OUTPUT
    mlflow: MlflowConfig = field(default_factory=MlflowConfig)
    report: list[FigureConfig] = field(default_factory=list)
    schedules: bool = False  # also record every simulation's allocations (the ``schedules`` table)

    def check(self) -> list[str]:
        out = []
        if not NAME_RE.fullmatch(self.name):
            out.append(
                f"name: letters, digits, '_', '.', '-' only (starting with a letter or digit), got {self.name!r}"
            )
        if not self.policies:
            out.append("policies: name at least one policy")
        for name in self.policies:
            out += _policy_problem(name)
        out += [
            f"instance.{k}: unknown key (known: {', '.join(INSTANCE_FIELDS)}; seeds come from 'seeds', "
            f"policies from 'policies')"
            for k in sorted(set(self.instance) - set(INSTANCE_FIELDS))
        ]
        for key, values in self.grid.items():
            out += _key_problem(key, values, self.policies)
        seeds = self.seed_list()
        if isinstance(self.seeds, list):
            if not seeds:
                out.append("seeds: list at least one seed")
            out += [f"seeds[{k}]: must be >= 0, got {s}" for k, s in enumerate(seeds) if s < 0]
            out += [f"seeds[{k}]: duplicate seed {s}" for k, s in enumerate(seeds) if s in seeds[:k]]
        self.opt_settings()
        profiles = [(self.instance.get("workload") or {}).get("profile"), *self.grid.get("workload.profile", [])]
        if self.opt is not None and "thesis" in profiles:
            out.append("opt: the offline optimum models the paper's rules, not the thesis profile's (3.4)-(3.5)")
        if not self.output.strip():
            out.append("output: must not be empty")
        names = [f.name for f in self.report]
        for k, fig in enumerate(self.report):
            out += [f"report[{k}].{p}" for p in _figure_problem(fig, self)]
            if fig.name in names[:k]:
                out.append(f"report[{k}].name: duplicate figure name {fig.name!r}")
        return out

    def opt_settings(self) -> OptConfig | None:
        return None if self.opt is None else build(OptConfig, self.opt, "opt")

    def axis_values(self) -> dict[str, list]:
        """Each axis -> its values, the components of a paired axis apart (in grid order)."""
        out = {}
        for key, values in self.grid.items():
            axes = paired(key)
            out.update({axis: [v[k] for v in values] if len(axes) > 1 else list(values) for k, axis in enumerate(axes)})
        return out

    def seed_list(self) -> list[int]:
        if isinstance(self.seeds, SeedRange):
            return list(range(self.seeds.start, self.seeds.start + self.seeds.count))
        return list(self.seeds)


def _policy_problem(name: str) -> list[str]:
    if name not in POLICIES:
        return [f"policies.{name}: unknown policy (known: {', '.join(POLICIES)})"]
    try:
        policy_module(name)
    except ImportError as e:
        return [f"policies.{name}: registered but its module does not import ({e})"]
    return []


def paired(key: str) -> list[str]:
    """The axes of a grid key: one, or several joined by commas (a paired axis)."""
    return [a.strip() for a in key.split(",")]


def _key_problem(key: str, values: list, policies: dict) -> list[str]:
    axes = paired(key)
    if len(axes) == 1:
        return _axis_problem(key, values, policies)
    out = [p for a in axes for p in _axis_problem(a, [0], policies)]
    owners = {a.split(".")[0] if a.split(".")[0] in policies else "instance" for a in axes}
    if len(owners) > 1:
        out.append(f"grid.{key}: paired axes must all be instance axes or all one policy's parameters")
    if len(set(axes)) < len(axes):
        out.append(f"grid.{key}: an axis appears twice")
    if not values:
        out.append(f"grid.{key}: list at least one value")
    out += [
        f"grid.{key}[{k}]: must list {len(axes)} values, one per axis ({', '.join(axes)}), got {v!r}"
        for k, v in enumerate(values)
        if not isinstance(v, list) or len(v) != len(axes)
    ]
    dupes = [k for k, v in enumerate(values) if v in values[:k]]
    return out + ([f"grid.{key}[{dupes[0]}]: duplicate value {values[dupes[0]]!r}"] if dupes else [])


def _axis_problem(axis: str, values: list, policies: dict) -> list[str]:
    head = axis.split(".")[0]
    if head == "seed":
        return [f"grid.{axis}: seeds are set by the top-level 'seeds'"]
    if head in ("policy", "params"):
        return [f"grid.{axis}: list policies under 'policies'; a policy's parameter axis is '<policy>.<param>'"]
    if head not in INSTANCE_FIELDS and head not in policies:
        known = ", ".join([*INSTANCE_FIELDS[:3], "workload.<field>", *(f"{p}.<param>" for p in policies)])
        return [f"grid.{axis}: unknown axis (known: {known})"]
    if head in policies and "." not in axis:
        return [f"grid.{axis}: name one parameter, e.g. {axis}.<param>"]
    if not values:
        return [f"grid.{axis}: list at least one value"]
    dupes = [k for k, v in enumerate(values) if v in values[:k]]
    return [f"grid.{axis}[{dupes[0]}]: duplicate value {values[dupes[0]]!r}"] if dupes else []


def _figure_problem(fig: FigureConfig, config: SweepConfig) -> list[str]:
    """A figure must refer to the sweep's own axes, values and policies."""
    out = []
    axes = config.axis_values()
    if fig.x != POLICY_AXIS and fig.x not in axes:
        out.append(
            f"x: not a grid axis of this sweep (axes: {', '.join(axes) or 'none'}; or "
            f"'{POLICY_AXIS}' for one bar per policy)"
        )
    for axis, value in fig.where.items():
        if axis not in axes:
            out.append(f"where.{axis}: not a grid axis of this sweep")
        elif value not in axes[axis]:
            out.append(f"where.{axis}: {value!r} is not one of the axis's values {axes[axis]}")
    for k, axis in enumerate(fig.average):
        if axis not in axes or axis == fig.x or axis in fig.where:
            out.append(f"average[{k}]: {axis!r} is not a grid axis of this sweep other than x and where's")
    for name in [*fig.policies, *([fig.normalise] if fig.normalise else [])]:
        if name not in config.policies:
            out.append(f"policies: {name!r} is not a policy of this sweep ({', '.join(config.policies)})")
    if fig.metric in DERIVED_METRICS and config.opt is None:
        out.append(f"metric: {fig.metric} needs the offline optimum: add an 'opt' block")
    return out


def load(path: str | Path, overrides: Sequence[str] = ()) -> SweepConfig:
    """Read and structurally validate a sweep config; ``name`` defaults to the file's stem. ``overrides``:
    ``KEY=VALUE`` (:func:`apply_overrides`)."""
    return parse(raw(path, overrides))


def raw(path: str | Path, overrides: Sequence[str] = ()) -> dict:
    """The config file's data with ``overrides`` applied, before validation (what ``config.yaml`` records)."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError("CONFIG", f"no such file: {path}") from None
    except yaml.YAMLError as e:
        raise ConfigError("CONFIG", f"{path} is not valid YAML: {' '.join(str(e).split())}") from None
    if not isinstance(data, dict):
        raise ConfigError("CONFIG", f"{path} must hold a mapping, got {type(data).__name__}")
    data.setdefault("name", path.stem)
    return apply_overrides(data, overrides)


def apply_overrides(data: dict, overrides: Sequence[str]) -> dict:
    """Hydra-style ``KEY=VALUE`` overrides: ``KEY`` a dotted path into the config (``seeds.count``,
    ``policies.pdors.rounding.gain``); under ``grid.`` the rest is one axis name (``grid.workload.mix``,
    ``grid.jobs,slots``). ``VALUE`` is YAML (``20``, ``0.8``, ``[10,20]``, ``range(10,50,10)``). The result is
    validated like the file, so errors name the same field paths."""
    data = copy.deepcopy(data)
    for text in overrides:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise ConfigError("OVERRIDE", f"{text!r}: expected KEY=VALUE, e.g. seeds.count=3")
        try:
            parsed = yaml.safe_load(value) if value.strip() else None
        except yaml.YAMLError as e:
            raise ConfigError(key, f"override value {value!r} is not valid YAML: {' '.join(str(e).split())}") from None
        head, _, rest = key.strip().partition(".")
        path = [head, rest] if head == "grid" and rest else key.strip().split(".")
        node = data
        for name in path[:-1]:
            if not isinstance(node.get(name), dict):
                node[name] = {}  # e.g. ``seeds.count=3`` where the file lists seeds
            node = node[name]
        node[path[-1]] = parsed
    return data


RANGE_RE = re.compile(r"range\(\s*([^,()]+?)\s*,\s*([^,()]+?)\s*(?:,\s*([^,()]+?)\s*)?\)")


def _range(key: str, text: str) -> list:
    """``range(start, stop[, step])`` as Python's range (``stop`` excluded), for integers or numbers."""
    m = RANGE_RE.fullmatch(text.strip())
    if m is None:
        raise ConfigError(f"grid.{key}", f"must be a list of values or range(start, stop[, step]), got {text!r}")
    try:
        start, stop, step = (yaml.safe_load(g) if g is not None else 1 for g in m.groups())
    except yaml.YAMLError:
        start = None
    numbers = [start, stop, step]
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in numbers):
        raise ConfigError(f"grid.{key}", f"range(start, stop[, step]) takes numbers, got {text!r}")
    assert start is not None and stop is not None and step is not None  # numbers, checked above
    if step == 0 or (stop - start) / step <= 0:
        raise ConfigError(f"grid.{key}", f"{text} is empty")
    if all(isinstance(x, int) for x in numbers):
        return list(range(start, stop, step))
    count = math.ceil((stop - start) / step - 1e-9)  # exclusive stop, robust to float rounding
    return [round(start + k * step, 12) for k in range(count)]


def parse(data: dict) -> SweepConfig:
    grid = data.get("grid")
    if isinstance(grid, dict):
        data = {**data, "grid": {k: _range(k, v) if isinstance(v, str) else v for k, v in grid.items()}}
    return build(SweepConfig, data)
