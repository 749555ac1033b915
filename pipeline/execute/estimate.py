"""``pdors sweep run --dry-run``: the plan and an estimate of its time, writing nothing.

The time of a run to do is estimated from runs of the same policy already recorded under the output root,
scaled by size (seconds per cell T x I x H, their median); a policy with no recorded run is timed by a probe:
its smallest run to do, executed in this process and not recorded. OPT tasks are bounded by their time limit.
"""

from __future__ import annotations

import math
import os
import statistics
from pathlib import Path

from pipeline.record import storage
from pipeline.spec.tasks import Plan, Task, TaskSpec


def _cells(spec: TaskSpec) -> int:
    return int(spec["machines"] * spec["jobs"] * spec["slots"])


def _seconds_per_cell(root: Path, todo: list[Task]) -> tuple[dict[str, float], list[str]]:
    """Policy -> median recorded seconds per cell, and how each rate was obtained."""
    rates: dict[str, float] = {}
    how: list[str] = []
    runs = storage.read(
        root, "runs", columns=["policy", "kind", "status", "wall_s", "machines", "jobs", "slots"]
    ).to_pandas()
    runs = runs[(runs["kind"] == "sim") & (runs["status"] == "ok") & runs["wall_s"].notna()]
    for policy, g in runs.groupby("policy"):
        rates[policy] = statistics.median(g["wall_s"] / (g["machines"] * g["jobs"] * g["slots"]))
        how.append(f"{policy}: {len(g)} recorded runs")
    for policy in sorted({t.policy for t in todo if t.kind == "sim"} - set(rates)):
        from pipeline.execute.executor import execute

        probe = min((t for t in todo if t.policy == policy), key=lambda t: _cells(t.spec))
        outcome = execute(probe)
        seconds = outcome.finished_at - outcome.started_at
        rates[policy] = seconds / _cells(probe.spec)
        how.append(f"{policy}: a probe run of {seconds:.2f} s")
    return rates, how


def describe(
    plan: Plan, todo: list[Task], root: Path, max_parallel: int | None, num_cpus: int | None, single: bool
) -> str:
    """The dry run's report: grid points, tasks, what is recorded, the estimated time. ``single``: one run at
    a time (in-process) or on a cluster whose CPUs are not known here."""
    config = plan.config
    points = math.prod(len(v) for v in config.grid.values()) if config.grid else 1
    sims = [t for t in todo if t.kind == "sim"]
    opts = [t for t in todo if t.kind == "opt"]
    lines = [
        f"plan: {points} grid point(s) x {len(config.policies)} policies x {len(config.seed_list())} seed(s)"
        f" -> {len({t.point_id for t in plan.tasks})} (point, policy) pairs; output root {root}; nothing "
        f"written (dry run)"
    ]
    if not todo:
        return "\n".join([*lines, "estimate: nothing to run"])
    rates, how = _seconds_per_cell(root, todo)
    cpu_seconds = sum(rates[t.policy] * _cells(t.spec) for t in sims)
    settings = config.opt_settings()
    opt_limit = len(opts) * settings.time_limit if opts and settings is not None else 0.0
    cpus = 1 if single else min(num_cpus or os.cpu_count() or 1, max_parallel or 10**9)
    lines.append(
        f"estimate: {cpu_seconds:.0f} CPU-s for {len(sims)} simulations ({'; '.join(how)})"
        + (f" + up to {opt_limit:.0f} s for {len(opts)} OPT solves" if opts else "")
        + f"; about {(cpu_seconds + opt_limit) / cpus:.0f} s on {cpus} CPU(s)"
        + (" (one at a time, or divide by the cluster's CPUs)" if single else "")
        + ", plus Ray start-up"
    )
    return "\n".join(lines)
