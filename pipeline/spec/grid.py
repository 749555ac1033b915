"""Grid expansion: a validated :class:`SweepConfig` -> the sweep's tasks, each a fully-resolved run spec.

Every expanded spec is built with :func:`pdors.config.build` here, so an impossible value anywhere in the grid is
reported (as a path into the sweep config) before Ray starts or anything is written. Ids are hashes of the
resolved specs: the same config always gives the same sweep, point, instance and run ids, whatever the key order.
"""

from __future__ import annotations

import copy
import gc
import hashlib
import itertools
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, cast

from pdors.config import JSON, build, to_dict
from pdors.errors import ConfigError, InputError
from pdors.policies import policy_config, resolve
from pdors.run import RunSpec, spec_data
from pdors.version import MODEL_VERSION  # part of every run id
from pipeline.spec.schema import INSTANCE_FIELDS, INSTANCE_FILE, SweepConfig, paired
from pipeline.spec.tasks import OPT_POLICY, Plan, Task, TaskSpec


@dataclass(frozen=True, kw_only=True)
class _Coord:
    """One axis at one grid point: where it lands in the run spec and which value it takes."""

    axis: str
    spec_path: str
    index: int
    value: Any
    field: str = ""  # its place in the sweep config, if not ``<axis>[<index>]`` (a paired axis)

    @property
    def where(self) -> str:
        return self.field or f"{self.axis}[{self.index}]"


def digest(obj: Any, n: int = 16) -> str:
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:n]


def _set(tree: JSON, dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for key in parents:
        node = tree.get(key)
        tree[key] = node = dict(node) if isinstance(node, dict) else {}
        tree = node
    tree[leaf] = copy.deepcopy(value)


def _check_path(axis: str, tree: JSON, dotted: str) -> None:
    """An axis must name an existing parameter: the resolved defaults show which ones exist."""
    node, walked = tree, []
    for key in dotted.split("."):
        if not isinstance(node, dict):
            raise ConfigError(f"grid.{axis}", f"{'.'.join(walked)} has no sub-parameters")
        if key not in node:
            raise ConfigError(f"grid.{axis}", f"unknown parameter {key!r} (known: {', '.join(sorted(node))})")
        node = node[key]
        walked.append(key)


def _config_error(err: ConfigError, policy: str, point: list[_Coord]) -> ConfigError:
    """Map an error in an expanded spec (``params.x``, ``workload.y``) back to the sweep config's field."""

    def under(path: str, prefix: str) -> bool:
        return path == prefix or path.startswith((prefix + ".", prefix + "["))

    for c in sorted(point, key=lambda c: -len(c.spec_path)):
        if under(err.path, c.spec_path):
            return ConfigError(f"grid.{c.where}{err.path[len(c.spec_path) :]}", err.reason)
    path = f"policies.{policy}{err.path[len('params') :]}" if under(err.path, "params") else f"instance.{err.path}"
    where = ", ".join(f"{c.axis}={c.value!r}" for c in point)
    return ConfigError(path, err.reason + (f" (at grid point {where})" if where else ""))


def _coords(config: SweepConfig, keys: list[str], to_spec: Callable[[str], str]) -> list[list[_Coord]]:
    """All points of the sub-grid spanned by the grid ``keys`` (config order; the last key varies fastest); the
    axes of a paired key take their values together."""
    grid = config.grid

    def coords(key: str, k: int) -> list[_Coord]:
        axes = paired(key)
        if len(axes) == 1:
            return [_Coord(axis=key, spec_path=to_spec(key), index=k, value=grid[key][k])]
        return [
            _Coord(axis=a, spec_path=to_spec(a), index=k, value=grid[key][k][j], field=f"{key}[{k}][{j}]")
            for j, a in enumerate(axes)
        ]

    return [
        [c for key, k in zip(keys, idx, strict=False) for c in coords(key, k)]
        for idx in itertools.product(*(range(len(grid[key])) for key in keys))
    ]


def _resolved(spec: RunSpec) -> TaskSpec:
    """``spec`` with every parameter of its policy, and an external policy's origin (distribution, version,
    source digest): part of the run id, so that a changed policy's runs are recomputed and no other run is."""
    out = cast(TaskSpec, spec_data(spec))  # RunSpec's fields are TaskSpec's simulation keys
    out["params"] = to_dict(policy_config(spec.policy, spec.params))
    found = resolve(spec.policy)
    if found.external:
        out["origin"] = to_dict(found.origin)
    return out


def _instance_part(spec: TaskSpec) -> TaskSpec:
    out = TaskSpec(
        machines=spec["machines"], jobs=spec["jobs"], slots=spec["slots"], workload=spec["workload"], seed=spec["seed"]
    )
    if "instance_file" in spec:
        out["instance_file"], out["instance_digest"] = spec["instance_file"], spec["instance_digest"]
    return out


INSTANCE_KEYS = (*INSTANCE_FIELDS, "instance_digest")  # what a run's instance is made from


def _file_fields(path: str) -> JSON:
    """An instance file's size (the record's machines, jobs, slots) and content digest (part of the run ids)."""
    from pdors.instance_io import file_digest, load

    instance = load(path)
    return {
        "machines": instance.num_machines,
        "jobs": instance.num_jobs,
        "slots": instance.slots,
        "instance_digest": file_digest(path),
    }


def _seeded(spec: TaskSpec, seed: int) -> TaskSpec:
    out = spec.copy()
    out["seed"] = seed
    return out


@contextmanager
def _no_gc() -> Iterator[None]:
    """The cyclic collector paused: a plan's millions of fresh dicts and tasks (none in a cycle) would otherwise
    trigger full collections over all of them, most of the time of a million-run plan."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def expand(config: SweepConfig) -> Plan:
    with _no_gc():
        return _expand(config)


def _expand(config: SweepConfig) -> Plan:
    grid = config.grid
    inst_keys = [key for key in grid if paired(key)[0].split(".")[0] in INSTANCE_FIELDS]
    inst_axes = [a for key in inst_keys for a in paired(key)]
    defaults = to_dict(build(RunSpec, {}))
    for axis in inst_axes:
        _check_path(axis, defaults, axis)
    policy_keys = {p: [key for key in grid if paired(key)[0].split(".")[0] == p] for p in config.policies}
    for policy, keys in policy_keys.items():
        resolved = to_dict(policy_config(policy, config.policies[policy], f"policies.{policy}"))
        for axis in (a for key in keys for a in paired(key)):
            _check_path(axis, resolved, axis.split(".", 1)[1])

    points: list[list[Task]] = []  # each grid point's tasks, a task per seed
    seeds = config.seed_list()
    for inst_point in _coords(config, inst_keys, lambda a: a):
        instance = copy.deepcopy(config.instance)
        for c in inst_point:
            _set(instance, c.spec_path, c.value)
        if instance.get(INSTANCE_FILE):
            try:
                instance.update(_file_fields(str(instance[INSTANCE_FILE])))
            except InputError as e:
                raise _config_error(ConfigError(INSTANCE_FILE, str(e)), "", inst_point) from None
        instance_ids = None
        for policy, base in config.policies.items():
            for pol_point in _coords(config, policy_keys[policy], lambda a: "params." + a.split(".", 1)[1]):
                params = copy.deepcopy(base or {})
                for c in pol_point:
                    _set(params, c.spec_path.split(".", 1)[1], c.value)
                point = inst_point + pol_point
                # The seed changes no check (every seed is >= 0, SweepConfig.check): one spec is built and
                # checked per point, and each seed's task derived from it.
                try:
                    spec = _resolved(build(RunSpec, {**instance, "policy": policy, "seed": seeds[0], "params": params}))
                except ConfigError as e:
                    raise _config_error(e, policy, point) from None
                if (why := _trace_problem(spec)) is not None:
                    raise _config_error(ConfigError("jobs", why), policy, point)
                if instance_ids is None:  # the same for every policy at this instance point
                    instance_ids = seeded_digests({k: v for k, v in spec.items() if k in INSTANCE_KEYS}, seeds)
                points.append(_sim_tasks(spec, seeds, {c.axis: c.value for c in point}, instance_ids))
    # seed by seed, each seed's runs of every grid point together: a chunk of runs draws each seed's jobs once for
    # all its cluster sizes and policies (pipeline.execute.executor)
    tasks = [point[k] for k in range(len(seeds)) for point in points]
    if config.opt is not None:
        tasks += _opt_tasks(config, inst_axes, tasks)
    return Plan(
        sweep_id=f"{config.name}-{digest(sorted(t.run_id for t in tasks), 10)}",
        config=config,
        axes=list(config.axis_values()),
        tasks=tasks,
    )


def _trace_problem(spec: TaskSpec) -> str | None:
    """A trace-driven instance needs at least I submissions in its trace (the trace itself was checked when
    the workload config was built)."""
    workload = spec["workload"]
    if workload["arrivals"] != "trace":
        return None
    from pdors.traces import load

    trace = load(workload["trace"]["path"], workload["trace"]["format"])
    if len(trace) < spec["jobs"]:
        return f"the trace {trace.source} has {len(trace)} submissions, fewer than {spec['jobs']} jobs"
    return None


SEED_MARK = -7_391_946_271_013  # never a seed (seeds are >= 0): marks where the seed goes in a spec's JSON


def seeded_digests(obj: JSON, seeds: list[int], n: int = 16) -> list[str]:
    """``digest({**obj, "seed": s})`` for each seed, the JSON written once: a million-run plan in seconds."""
    blob = json.dumps({**obj, "seed": SEED_MARK}, sort_keys=True, separators=(",", ":"), allow_nan=False)
    mark = f'"seed":{SEED_MARK}'
    if blob.count(mark) != 1:  # a parameter holding the mark itself: digest each seed the plain way
        return [digest({**obj, "seed": s}, n) for s in seeds]
    head, _, tail = blob.partition(mark)
    start, end = hashlib.sha256(f'{head}"seed":'.encode()), tail.encode()
    out = []
    for s in seeds:
        h = start.copy()
        h.update(b"%d%s" % (s, end))
        out.append(h.hexdigest()[:n])
    return out


def _sim_tasks(spec: TaskSpec, seeds: list[int], axes: dict[str, Any], instance_ids: list[str]) -> list[Task]:
    """A point's simulation of every seed (its ``spec`` resolved once; each task's spec is a shallow copy with
    its seed); ``instance_ids``: of each seed's instance."""
    unseeded = {k: v for k, v in spec.items() if k != "seed"}
    point_id = digest({"kind": "sim", **unseeded})
    run_ids = seeded_digests({"kind": "sim", "model_version": MODEL_VERSION, **unseeded}, seeds)
    return [
        Task(
            run_id=run_id,
            kind="sim",
            policy=spec["policy"],
            point_id=point_id,
            instance_id=instance_id,
            seed=seed,
            spec=_seeded(spec, seed),
            axes=axes,
        )
        for seed, run_id, instance_id in zip(seeds, run_ids, instance_ids, strict=True)
    ]


def _opt_tasks(config: SweepConfig, inst_axes: list[str], sims: list[Task]) -> list[Task]:
    """One offline optimum per distinct instance (OPT does not depend on the policy)."""
    settings = config.opt_settings()
    assert settings is not None  # OPT tasks only where the config has an opt section
    opt = asdict(settings)
    if opt["method"] == "milp":  # the default stays out of the spec, so recorded OPT runs keep their run ids
        del opt["method"]
    out: dict[str, Task] = {}
    for t in sims:
        if t.instance_id in out:
            continue
        spec = _instance_part(t.spec)
        spec["opt"] = opt
        unseeded = {k: v for k, v in spec.items() if k != "seed"}
        out[t.instance_id] = Task(
            run_id=digest({"kind": "opt", "model_version": MODEL_VERSION, **spec}),
            kind="opt",
            policy=OPT_POLICY,
            point_id=digest({"kind": "opt", **unseeded}),
            instance_id=t.instance_id,
            seed=t.seed,
            spec=spec,
            axes={a: t.axes[a] for a in inst_axes},
        )
    return list(out.values())
