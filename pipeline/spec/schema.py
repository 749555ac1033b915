"""The sweep config (YAML): its typed schema and loader.

The structure is checked here with :func:`pdors.config.build`; values that only make sense once the grid is
expanded (every instance and policy parameter) are checked by :func:`pipeline.spec.grid.expand`, which builds every
run spec. Both raise :class:`ConfigError` naming the field path, before anything runs or is written.
"""

from __future__ import annotations

import contextlib
import copy
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pdors import bounded, safe_yaml
from pdors.config import JSON, build, quote, suggestion, unknown
from pdors.config import bounded as limited
from pdors.errors import ConfigError, InputError, shorten
from pdors.policies import known, resolve
from pipeline.spec.columns import DERIVED_METRICS, METRICS, POLICY_STATS_PREFIX
from pipeline.spec.sizing import DEFAULT_MAX_TASKS

INSTANCE_FIELDS = ("machines", "jobs", "slots", "workload", "instance_file")
INSTANCE_FILE = "instance_file"  # an axis over instance files: a list of files, or a directory of *.json files
POLICY_AXIS = "policy"  # a figure's x: one bar per policy
# Names end up in paths and hive partition values: a sweep's directory and files are named <name>-<10 hex> and
# <name>.report.html, within a file name's 255 bytes (a 5,000-character name raised OSError: File name too long).
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
DEFAULT_OUTPUT = "results/sweeps"
DEFAULT_REFERENCE = "pdors"


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


@dataclass(frozen=True, kw_only=True)
class OptConfig:
    """Offline optimum per distinct instance, through :mod:`pipeline.spec.opt_task`. ``method``: ``milp``
    (prove OPT; the
    certified dual bound is recorded beside it) or ``bound`` (the dual bound alone, any size)."""

    solver: str = "highs"
    time_limit: float = 60.0
    mip_gap: float = 1e-4
    method: str = "milp"

    def check(self) -> list[str]:
        from pipeline.spec.opt_task import limit_problems

        out = [] if self.method in ("milp", "bound") else [f"method: must be milp or bound, got {self.method!r}"]
        out += [] if self.solver else ["solver: must not be empty"]
        return out + limit_problems(self.time_limit, self.mip_gap)


@dataclass(frozen=True)
class MlflowConfig:
    experiment: str = "pdors-sweeps"
    enabled: bool = True

    def check(self) -> list[str]:
        return [] if self.experiment.strip() else ["experiment: must not be empty"]


@dataclass(frozen=True, kw_only=True)
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
        out = (
            []
            if NAME_RE.fullmatch(self.name)
            else [f"name: letters, digits, '_', '.', '-' only, got {quote(self.name)}"]
        )
        known = [m for m, _ in METRICS] + list(DERIVED_METRICS)
        if self.metric not in known and not (
            self.metric.startswith(POLICY_STATS_PREFIX) and len(self.metric) > len(POLICY_STATS_PREFIX)
        ):
            out.append(
                f"metric: unknown metric {quote(self.metric)} (known: {', '.join(known)}, {POLICY_STATS_PREFIX}<key>)"
            )
        return out


@dataclass(frozen=True, kw_only=True)
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
    reference: str | None = None  # paired comparisons are against this policy (default: pdors, else the first)
    # seconds one simulation may take: one that takes longer (a hanging policy) is stopped and recorded as failed,
    # and the sweep goes on; None: no limit. Wall time decides only whether a run fails, never a recorded value.
    run_time_limit: float | None = limited(None, 0.001, 1e7, "seconds, more than 0")

    def check(self) -> list[str]:
        out = []
        if not NAME_RE.fullmatch(self.name):
            out.append(
                "name: at most 100 letters, digits, '_', '.', '-' (starting with a letter or digit), "
                f"got {quote(self.name)}"
            )
        if not self.policies:
            out.append("policies: name at least one policy")
        for name in self.policies:
            out += _policy_problem(name)
        if self.reference is not None and self.reference not in self.policies:
            out.append(f"reference: {self.reference!r} is not a policy of this sweep ({', '.join(self.policies)})")
        out += [
            f"instance.{k}: {unknown('instance', k, list(INSTANCE_FIELDS))}; seeds come from 'seeds', "
            f"policies from 'policies'"
            for k in sorted(set(self.instance) - set(INSTANCE_FIELDS))
        ]
        for key, values in self.grid.items():
            out += _key_problem(key, values, self.policies)
        if isinstance(self.seeds, list):
            if not self.seeds:
                out.append("seeds: list at least one seed")
            out += [f"seeds[{k}]: must be >= 0, got {s}" for k, s in enumerate(self.seeds) if s < 0]
            out += [f"seeds[{k}]: duplicate seed {self.seeds[k]}" for k in _duplicates(self.seeds)[:1]]
        opt = self.opt_settings()
        workload = self.instance.get("workload")  # its type is checked when the grid is expanded
        profiles = [workload.get("profile") if isinstance(workload, dict) else None]
        profiles += self.grid.get("workload.profile", [])
        if opt is not None and opt.method == "milp" and "thesis" in profiles:
            out.append(
                "opt: the MILP models the paper's rules, not the thesis profile's (3.4)-(3.5) (method: bound does)"
            )
        if not self.output.strip():
            out.append("output: must not be empty")
        names = [f.name for f in self.report]
        for k, fig in enumerate(self.report):
            out += [f"report[{k}].{p}" for p in _figure_problem(fig, self)]
            if fig.name in names[:k]:
                out.append(f"report[{k}].name: duplicate figure name {quote(fig.name)}")
        return out

    def opt_settings(self) -> OptConfig | None:
        return None if self.opt is None else build(OptConfig, self.opt, "opt")

    def axis_values(self) -> dict[str, list[Any]]:
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


def reference_of(reference: str | None, policies: list[str]) -> str:
    """The policy paired comparisons are made against: ``reference`` if set, else PD-ORS, else the first."""
    return reference or (DEFAULT_REFERENCE if DEFAULT_REFERENCE in policies else policies[0])


def _policy_problem(name: str) -> list[str]:
    """Why policy ``name`` cannot be found (a built-in, an installed entry point or ``package.module:Class``)."""
    try:
        resolve(name)
    except InputError as e:
        reason = str(e).removeprefix("policy").lstrip(": ")
        if ":" not in name:  # a typo of a known name, maybe: the nearest one suggested
            hint = suggestion("policies", name, list(known()))
            reason = reason.replace(f"unknown policy {name!r}", f"unknown policy {name!r}{hint}", 1)
        return [f"policies.{name}: {reason}"]
    except ImportError as e:
        return [f"policies.{name}: registered but its module does not import ({e})"]
    return []


def paired(key: str) -> list[str]:
    """The axes of a grid key: one, or several joined by commas (a paired axis)."""
    return [a.strip() for a in key.split(",")]


def _key_problem(key: str, values: list[Any], policies: dict[str, JSON | None]) -> list[str]:
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
        f"grid.{key}[{k}]: must list {len(axes)} values, one per axis ({', '.join(axes)}), got {quote(v)}"
        for k, v in enumerate(values)
        if not isinstance(v, list) or len(v) != len(axes)
    ]
    return out + _duplicate_problem(f"grid.{key}", values)


def _axis_problem(axis: str, values: list[Any], policies: dict[str, JSON | None]) -> list[str]:
    head = axis.split(".")[0]
    if head == "seed":
        return [f"grid.{axis}: seeds are set by the top-level 'seeds'"]
    if head in ("policy", "params"):
        return [f"grid.{axis}: list policies under 'policies'; a policy's parameter axis is '<policy>.<param>'"]
    if head not in INSTANCE_FIELDS and head not in policies:
        known_axes = [*INSTANCE_FIELDS[:3], "workload.<field>", INSTANCE_FILE, *(f"{p}.<param>" for p in policies)]
        return [f"grid.{axis}: {unknown('grid', axis, known_axes, 'axis')}"]
    if head in policies and "." not in axis:
        return [f"grid.{axis}: name one parameter, e.g. {axis}.<param>"]
    if not values:
        return [f"grid.{axis}: list at least one value"]
    return _duplicate_problem(f"grid.{axis}", values)


def _frozen(value: Any) -> Any:
    """A hashable stand-in for a YAML value, equal where the values are (``1`` and ``1.0`` too, as ``==``)."""
    if isinstance(value, (list, tuple)):
        return tuple(map(_frozen, value))
    if isinstance(value, dict):
        return frozenset((k, _frozen(v)) for k, v in value.items())
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _duplicates(values: list[Any]) -> list[int]:
    """Indices of the values equal to an earlier one, in one pass."""
    seen: set[Any] = set()
    out = []
    for k, v in enumerate(values):
        key = _frozen(v)
        if key in seen:
            out.append(k)
        seen.add(key)
    return out


def _duplicate_problem(where: str, values: list[Any]) -> list[str]:
    dupes = _duplicates(values)
    return [f"{where}[{dupes[0]}]: duplicate value {quote(values[dupes[0]])}"] if dupes else []


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
            out.append(f"where.{axis}: {quote(value)} is not one of the axis's values {quote(axes[axis])}")
    for k, axis in enumerate(fig.average):
        if axis not in axes or axis == fig.x or axis in fig.where:
            out.append(f"average[{k}]: {quote(axis)} is not a grid axis of this sweep other than x and where's")
    for name in [*fig.policies, *([fig.normalise] if fig.normalise else [])]:
        if name not in config.policies:
            out.append(f"policies: {quote(name)} is not a policy of this sweep ({', '.join(config.policies)})")
    if fig.metric in DERIVED_METRICS and config.opt is None:
        out.append(f"metric: {fig.metric} needs the offline optimum: add an 'opt' block")
    return out


def load(path: str | Path, overrides: Sequence[str] = ()) -> SweepConfig:
    """Read and structurally validate a sweep config; ``name`` defaults to the file's stem. ``overrides``:
    ``KEY=VALUE`` (:func:`apply_overrides`)."""
    return parse(raw(path, overrides), overrides=overrides)


def raw(path: str | Path, overrides: Sequence[str] = ()) -> JSON:
    """The config file's data with ``overrides`` applied, before validation (what ``config.yaml`` records)."""
    path = Path(path)
    try:
        text = bounded.read(path, safe_yaml.MAX_BYTES)
    except bounded.InputTooLarge as e:
        raise ConfigError("CONFIG", str(e)) from None
    except FileNotFoundError:
        raise ConfigError("CONFIG", f"no such file: {path}") from None
    try:
        data = safe_yaml.load(text, "CONFIG")
    except ConfigError as e:
        raise ConfigError("CONFIG", f"{path}: {e.reason}") from None
    if not isinstance(data, dict):
        raise ConfigError("CONFIG", f"{path} must hold a mapping, got {type(data).__name__}")
    data.setdefault("name", path.stem)
    return apply_overrides(data, overrides)


def apply_overrides(data: JSON, overrides: Sequence[str]) -> JSON:
    """Hydra-style ``KEY=VALUE`` overrides: ``KEY`` a dotted path into the config (``seeds.count``,
    ``policies.pdors.rounding.gain``); under ``grid.`` the rest is one axis name (``grid.workload.mix``,
    ``grid.jobs,slots``). ``VALUE`` is YAML (``20``, ``0.8``, ``[10,20]``, ``range(10,50,10)``). The result is
    validated like the file, so errors name the same field paths."""
    data = copy.deepcopy(data)
    for text in overrides:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise ConfigError("OVERRIDE", f"{quote(text)}: expected KEY=VALUE, e.g. seeds.count=3")
        parsed = safe_yaml.load(value, f"{key} (override value {quote(value)})") if value.strip() else None
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


def _range_args(key: str, text: str) -> tuple[float, float, float]:
    """``range(start, stop[, step])``'s numbers, checked: a non-empty range of finite length."""
    m = RANGE_RE.fullmatch(text.strip())
    if m is None:
        raise ConfigError(f"grid.{key}", f"must be a list of values or range(start, stop[, step]), got {quote(text)}")
    numbers = [safe_yaml.load(g, f"grid.{key}") if g is not None else 1 for g in m.groups()]
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in numbers):
        raise ConfigError(f"grid.{key}", f"range(start, stop[, step]) takes finite numbers, got {quote(text)}")
    start, stop, step = numbers
    if step == 0 or (stop - start) / step <= 0:
        raise ConfigError(f"grid.{key}", f"{shorten(text)} is empty")
    if not math.isfinite((stop - start) / step):
        raise ConfigError(f"grid.{key}", f"{shorten(text)} has too many values")
    return start, stop, step


def _range_len(start: float, stop: float, step: float) -> int:
    if all(isinstance(x, int) for x in (start, stop, step)):
        return len(range(int(start), int(stop), int(step)))  # arithmetic: a range object is never expanded
    return math.ceil((stop - start) / step - 1e-9)  # exclusive stop, robust to float rounding


def _range(key: str, text: str) -> list[float]:
    """``range(start, stop[, step])`` as Python's range (``stop`` excluded), for integers or numbers."""
    start, stop, step = _range_args(key, text)
    if all(isinstance(x, int) for x in (start, stop, step)):
        return list(range(int(start), int(stop), int(step)))
    return [round(start + k * step, 12) for k in range(_range_len(start, stop, step))]


def instance_files(key: str, directory: str) -> list[str]:
    """The instance files (``*.json``, sorted by name) of ``directory``: the values of an ``instance_file`` axis
    given as a directory."""
    path = Path(directory)
    if not path.is_dir():
        raise ConfigError(
            f"grid.{key}", f"must list instance files or name a directory of them, got {quote(directory)}"
        )
    files = sorted(str(f) for f in path.glob("*.json") if f.is_file())
    if not files:
        raise ConfigError(f"grid.{key}", f"{shorten(directory)} holds no instance files (*.json)")
    return files


def _grid_values(key: str, text: str) -> list[Any]:
    """A grid key's values given as one string: a directory of instance files, or ``range(...)``."""
    return instance_files(key, text) if key == INSTANCE_FILE else _range(key, text)


def _length(key: str, values: Any) -> int:
    """How many values a grid key (or ``seeds``) will have once expanded, without expanding it; 1 for a value
    of the wrong type (its own error comes from validation)."""
    if isinstance(values, str):
        return len(instance_files(key, values)) if key == INSTANCE_FILE else _range_len(*_range_args(key, values))
    return len(values) if isinstance(values, list) and values else 1


def task_count(data: JSON) -> int:
    """The tasks the config plans (simulations, plus one OPT per instance with ``opt``), computed from the
    lengths of the axes, the seeds and the policies before anything is expanded."""
    seeds, grid, policies = data.get("seeds"), data.get("grid"), data.get("policies")
    count = seeds.get("count", 1) if isinstance(seeds, dict) else len(seeds) if isinstance(seeds, list) else 1
    n_seeds: int = count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1
    grid = grid if isinstance(grid, dict) else {}
    policies = policies if isinstance(policies, dict) else {}
    sizes = {str(k): _length(str(k), v) for k, v in grid.items()}
    owner = {k: k.split(".")[0].split(",")[0].strip() for k in sizes}
    instances = math.prod(n for k, n in sizes.items() if owner[k] not in policies) * n_seeds
    points = sum(math.prod(n for k, n in sizes.items() if owner[k] == p) for p in policies) or 1
    return instances * points + (instances if data.get("opt") is not None else 0)


def parse(data: JSON, max_tasks: int = DEFAULT_MAX_TASKS, overrides: Sequence[str] = ()) -> SweepConfig:
    """Validate raw config data; a plan of more than ``max_tasks`` tasks is refused before it is expanded. An error
    in a field one of ``overrides`` (the ``KEY=VALUE`` applied to ``data``) set says it came from that override."""
    with blame(overrides):
        return _parse(data, max_tasks)


@contextlib.contextmanager
def blame(overrides: Sequence[str]) -> Iterator[None]:
    """A :class:`ConfigError` raised inside, in a field one of ``overrides`` set, says it came from that override
    (around :func:`parse` and the expansion that validates every run's parameters)."""
    try:
        yield
    except ConfigError as e:
        key = e.path.split("[")[0]
        given = [o for o in overrides if _covers(o.partition("=")[0].strip(), key)]
        if not given or "command-line override" in e.reason:
            raise
        raise ConfigError(e.path, f"{e.reason} (from the command-line override {quote(given[-1])})") from None


def _covers(key: str, path: str) -> bool:
    """Whether the override of ``key`` set the field ``path`` (or one inside it, or its parent's new key)."""
    return bool(key) and (key == path or path.startswith(key + ".") or key.startswith(path + "."))


def _parse(data: JSON, max_tasks: int) -> SweepConfig:
    if (n := task_count(data)) > max_tasks:
        count = f"{n:,}" if n < 10**15 else f"about {float(n):.2e}"
        raise ConfigError(
            "CONFIG", f"the sweep plans {count} tasks, over the limit of {max_tasks:,} (--max-tasks raises it)"
        )
    grid = data.get("grid")
    if isinstance(grid, dict):
        data = {**data, "grid": {k: _grid_values(str(k), v) if isinstance(v, str) else v for k, v in grid.items()}}
    config: SweepConfig = build(SweepConfig, data)
    return config
