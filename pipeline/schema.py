"""The sweep config (YAML): its typed schema and loader.

The structure is checked here with :func:`pdors.config.build`; values that only make sense once the grid is
expanded (every instance and policy parameter) are checked by :func:`pipeline.grid.expand`, which builds every
run spec. Both raise :class:`ConfigError` naming the field path, before anything runs or is written.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from pdors.config import ConfigError, build
from pdors.policies import POLICIES, policy_module

from .columns import DERIVED_METRICS, METRICS, POLICY_STATS_PREFIX

INSTANCE_FIELDS = ("machines", "jobs", "slots", "workload")
POLICY_AXIS = "policy"   # a figure's x: one bar per policy
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")   # names end up in paths and hive partition values
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
        if self.metric not in known and not (self.metric.startswith(POLICY_STATS_PREFIX)
                                             and len(self.metric) > len(POLICY_STATS_PREFIX)):
            out.append(f"metric: unknown metric {self.metric!r} (known: {', '.join(known)}, "
                       f"{POLICY_STATS_PREFIX}<key>)")
        return out


@dataclass(frozen=True)
class SweepConfig:
    """``grid`` axes are dotted paths: ``machines``, ``jobs``, ``slots``, ``workload.<field>`` for the instance,
    ``<policy>.<param>`` (e.g. ``pdors.rounding.gain``) for one policy's parameters. Grid values override
    ``instance`` and ``policies`` values."""

    policies: dict[str, dict[str, Any] | None]
    name: str = "sweep"
    instance: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, list[Any]] = field(default_factory=dict)
    seeds: list[int] | SeedRange = field(default_factory=lambda: [1])
    opt: dict[str, Any] | None = None   # OptConfig fields; built in check() so errors keep their full path
    output: str = DEFAULT_OUTPUT
    mlflow: MlflowConfig = field(default_factory=MlflowConfig)
    report: list[FigureConfig] = field(default_factory=list)
    schedules: bool = False   # also record every simulation's allocations (the ``schedules`` table)

    def check(self) -> list[str]:
        out = []
        if not NAME_RE.fullmatch(self.name):
            out.append(f"name: letters, digits, '_', '.', '-' only (starting with a letter or digit), "
                       f"got {self.name!r}")
        if not self.policies:
            out.append("policies: name at least one policy")
        for name in self.policies:
            out += _policy_problem(name)
        out += [f"instance.{k}: unknown key (known: {', '.join(INSTANCE_FIELDS)}; seeds come from 'seeds', "
                f"policies from 'policies')" for k in sorted(set(self.instance) - set(INSTANCE_FIELDS))]
        for axis, values in self.grid.items():
            out += _axis_problem(axis, values, self.policies)
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
    if fig.x != POLICY_AXIS and fig.x not in config.grid:
        out.append(f"x: not a grid axis of this sweep (axes: {', '.join(config.grid) or 'none'}; or "
                   f"'{POLICY_AXIS}' for one bar per policy)")
    for axis, value in fig.where.items():
        if axis not in config.grid:
            out.append(f"where.{axis}: not a grid axis of this sweep")
        elif value not in config.grid[axis]:
            out.append(f"where.{axis}: {value!r} is not one of the axis's values {config.grid[axis]}")
    for k, axis in enumerate(fig.average):
        if axis not in config.grid or axis == fig.x or axis in fig.where:
            out.append(f"average[{k}]: {axis!r} is not a grid axis of this sweep other than x and where's")
    for name in [*fig.policies, *([fig.normalise] if fig.normalise else [])]:
        if name not in config.policies:
            out.append(f"policies: {name!r} is not a policy of this sweep ({', '.join(config.policies)})")
    if fig.metric in DERIVED_METRICS and config.opt is None:
        out.append(f"metric: {fig.metric} needs the offline optimum: add an 'opt' block")
    return out


def load(path: str | Path) -> SweepConfig:
    """Read and structurally validate a sweep config; ``name`` defaults to the file's stem."""
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
    return parse(data)


def parse(data: dict) -> SweepConfig:
    return build(SweepConfig, data)
