"""The nightly's own mutation test: planted PD-ORS regressions, and how many of them turn the nightly red.

    pdors nightly --mutants [--nights N] [--only NAME,...] [--workers W] [--out DIR]

Each mutant is applied from outside the product, in this process (``unittest.mock.patch.object`` on PD-ORS's
class or on the names its module imported), never by a hook in ``pdors/``. With it applied, the nightly's
regression checks run as the nightly runs them (``pipeline.nightly.run.regressions``): the pinned small set
(``configs/nightly_record.json``'s H = 4 instances; PD-ORS alone, the one policy a mutant changes), the
paper-scale record (PD-ORS's utility and schedule digest on the pinned H = 100, 30 and 10 instances, both
readings) and the fresh power check (``pipeline.nightly.power``) on the night ``FIRST_NIGHT``'s paper-size seeds.
A mutant's size is measured, not assumed: the change of PD-ORS's mean utility over the paper-scale record's rows.
The unmutated fresh power check then runs on ``--nights`` held-out nights from ``HELD_OUT_FIRST`` (their seeds
were never used to calibrate the check nor seen before its rule was fixed): the false-alarm rate (the pinned checks
are deterministic: green once, green every night). The fresh instances' dual
bounds do not depend on PD-ORS and are computed once per process (``--workers``: rows and nights in that many
processes; every row and night runs the same checks either way).
Writes ``mutants.json`` and ``mutants.md`` under ``--out``.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from datetime import date, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest.mock import patch

import numpy as np

from pdors.config import JSON
from pdors.errors import InputError
from pdors.markdown import table

if TYPE_CHECKING:
    from pipeline.nightly.run import Settings

FIRST_NIGHT = date(2026, 11, 1)  # the mutants' night
HELD_OUT_FIRST = date(2026, 12, 1)  # the false-alarm nights: after 2026-11-02 .. -21, which measured the first rule
# the small pinned set re-runs PD-ORS alone: a mutant changes no other policy, whose checks there stay as they are
PDORS_ONLY = ("pdors",)


@dataclass(frozen=True, kw_only=True)
class Mutant:
    name: str
    kind: str  # admission, plan quality, prices, rounding, placement
    scale: str  # where it acts: all, paper (H >= 30), small (H <= 4), I >= 25 ...
    what: str
    apply: Callable[[], contextlib.AbstractContextManager[Any]]


def _plan(change: Callable[[Any, int, Any, Any], Any]) -> Callable[[], contextlib.AbstractContextManager[Any]]:
    """A mutant of PD-ORS's decision for one job: ``change(policy, job, view, plan) -> plan or None``."""

    def apply() -> contextlib.AbstractContextManager[Any]:
        import pdors.policies.pdors as P

        original = P.PDORS.plan

        def plan(self: Any, job: int, view: Any) -> Any:
            return change(self, job, view, original(self, job, view))

        return patch.object(P.PDORS, "plan", plan)

    return apply


def _reject(when: Callable[[Any, int, Any], bool]) -> Callable[[], contextlib.AbstractContextManager[Any]]:
    return _plan(lambda self, job, view, plan: None if plan is not None and when(plan, job, view) else plan)


def _config(**changes: Any) -> Callable[[], contextlib.AbstractContextManager[Any]]:
    """A mutant of PD-ORS's settings (its ``Config`` fields, or ``rounding_*`` of its ``RoundingConfig``)."""

    def apply() -> contextlib.AbstractContextManager[Any]:
        import pdors.policies.pdors as P

        original = P.PDORS.__init__
        top = {k: v for k, v in changes.items() if not k.startswith("rounding_")}
        rounding = {k.removeprefix("rounding_"): v for k, v in changes.items() if k.startswith("rounding_")}

        def init(self: Any, config: Any, *args: Any, **kwargs: Any) -> None:
            config = replace(config, **top, rounding=replace(config.rounding, **rounding))
            original(self, config, *args, **kwargs)

        return patch.object(P.PDORS, "__init__", init)

    return apply


def _prices(factor: float) -> Callable[[], contextlib.AbstractContextManager[Any]]:
    """Eq. (12)'s prices scaled by ``factor`` (the name PD-ORS's module imported)."""

    def apply() -> contextlib.AbstractContextManager[Any]:
        import pdors.policies.pdors as P
        from pdors.primal_dual.prices import prices as original

        return patch.object(P, "prices", lambda *a: original(*a) * factor)

    return apply


def _halve(self: Any, job: int, view: Any, plan: Any) -> Any:
    if plan is not None:
        plan.workers //= 2
        plan.servers //= 2
    return plan


def _drop_last_slot(every: int) -> Callable[[Any, int, Any, Any], Any]:
    """Every ``every``-th job loses its last planned slot: it misses its completion."""

    def change(self: Any, job: int, view: Any, plan: Any) -> Any:
        if plan is not None and job % every == every - 1:
            last = int(np.flatnonzero(plan.workers.sum(axis=1))[-1])
            plan.workers[last] = 0
            plan.servers[last] = 0
        return plan

    return change


def _split_servers(self: Any, job: int, view: Any, plan: Any) -> Any:
    """Where a job's workers and PSs share one machine in a slot, its PSs move to the next machine with room:
    every co-located job pays the external bandwidth."""
    if plan is None:
        return plan
    inst = view.instance
    H = inst.num_machines
    demand = inst.jobs.ps_demand[job]
    for t in np.flatnonzero(plan.workers.sum(axis=1)):
        hosts = np.flatnonzero(plan.workers[t] + plan.servers[t])
        if len(hosts) != 1 or H < 2:
            continue
        h, s = int(hosts[0]), int(plan.servers[t, hosts[0]])
        free = view.free(int(t))
        for k in range(1, H):
            g = (h + k) % H
            if np.all(free[g] >= s * demand):
                plan.servers[t, h], plan.servers[t, g] = 0, s
                break
    return plan


MUTANTS = [
    Mutant(name="halve", kind="plan quality", scale="all", what="halve every allocation", apply=_plan(_halve)),
    Mutant(
        name="payoff>60",
        kind="admission",
        scale="all",
        what="admit only if payoff > 60",
        apply=_reject(lambda plan, job, view: not plan.payoff > 60),
    ),
    Mutant(
        name="3rd@H>=30",
        kind="admission",
        scale="paper (H >= 30)",
        what="reject every 3rd job when H >= 30",
        apply=_reject(lambda plan, job, view: view.instance.num_machines >= 30 and job % 3 == 2),
    ),
    Mutant(
        name="10th",
        kind="admission",
        scale="all",
        what="reject every 10th job",
        apply=_reject(lambda plan, job, view: job % 10 == 9),
    ),
    Mutant(
        name="25th",
        kind="admission",
        scale="I >= 25 (paper)",
        what="reject every 25th job",
        apply=_reject(lambda plan, job, view: job % 25 == 24),
    ),
    Mutant(
        name="50th@H>=30",
        kind="admission",
        scale="paper (H >= 30)",
        what="reject every 50th job when H >= 30",
        apply=_reject(lambda plan, job, view: view.instance.num_machines >= 30 and job % 50 == 49),
    ),
    Mutant(
        name="3rd@H<=4",
        kind="admission",
        scale="small (H <= 4)",
        what="reject every 3rd job when H <= 4",
        apply=_reject(lambda plan, job, view: view.instance.num_machines <= 4 and job % 3 == 2),
    ),
    Mutant(
        name="late20th",
        kind="plan quality",
        scale="I >= 20 (paper)",
        what="every 20th job loses its last planned slot",
        apply=_plan(_drop_last_slot(20)),
    ),
    Mutant(
        name="Q=10",
        kind="plan quality",
        scale="all",
        what="workload levels Q 100 -> 10 (coarser DP)",
        apply=_config(workload_levels=10),
    ),
    Mutant(name="prices/2", kind="prices", scale="all", what="eq. (12)'s prices x 0.5", apply=_prices(0.5)),
    Mutant(name="prices*1.25", kind="prices", scale="all", what="eq. (12)'s prices x 1.25", apply=_prices(1.25)),
    Mutant(
        name="first-rounding",
        kind="rounding",
        scale="all",
        what="keep the first feasible rounding, not the cheapest of 5",
        apply=_config(rounding_feasible_solutions=1),
    ),
    Mutant(
        name="gain0.9",
        kind="rounding",
        scale="all",
        what="G_delta 1.0 -> 0.9 (eq. (29)'s scaling)",
        apply=_config(rounding_gain=0.9),
    ),
    Mutant(
        name="split-PS",
        kind="placement",
        scale="all",
        what="co-located PSs moved to another machine",
        apply=_plan(_split_servers),
    ),
]


def nights(first: date, count: int) -> list[date]:
    return [first + timedelta(days=k) for k in range(count)]


@contextlib.contextmanager
def _none() -> Iterator[None]:
    yield


def _row_mean(verdicts: list[Any]) -> float:
    return float(np.mean([v.utility for v in verdicts])) if verdicts else 0.0


def _map(fn: Callable[[Any], JSON], items: list[Any], workers: int) -> Iterator[JSON]:
    """``fn`` over ``items`` in order, in ``workers`` fresh processes when > 1 (each applies its own mutant)."""
    if workers <= 1:
        yield from map(fn, items)
        return
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield from pool.map(fn, items)


def mutation_table(
    first: date,
    bounds: dict[tuple[str, int], float],
    only: list[str] | None = None,
    settings: Settings | None = None,
    workers: int = 1,
) -> JSON:
    """The unmutated nightly and every mutant (or those named in ``only``; ``none`` is the unmutated one) on the
    night ``first`` under ``settings`` (default: the nightly's): size, red or green, the parts red, the first reason.
    Each row is also printed to stderr as one JSON line as it is done. ``bounds`` is shared by the rows run in this
    process (``workers`` 1); with more, each row computes its night's three bounds itself."""
    from pipeline.nightly import record as nightly_record
    from pipeline.nightly.run import Settings

    names = ["none", *(m.name for m in MUTANTS)]
    unknown = sorted(set(only or []) - set(names))
    if unknown:
        raise InputError(f"--only: unknown mutant(s) {', '.join(unknown)} (known: {', '.join(names)})")
    settings = settings or Settings()
    rows = nightly_record.load(settings.record_file, settings.profile)["paper_record"]["rows"]
    base = float(np.mean([r["utility"] for r in rows]))  # the healthy PD-ORS reproduces its record exactly
    chosen = [n for n in names if only is None or n in only]
    out = []
    row = partial(_mutant_row, first=first, settings=settings, base=base, bounds=bounds if workers <= 1 else None)
    for r in _map(row, chosen, workers):
        print(json.dumps(r), file=sys.stderr, flush=True)
        out.append(r)
    return {"night": first.isoformat(), "mutants": out}


def _mutant_row(
    name: str, *, first: date, settings: Settings, base: float, bounds: dict[tuple[str, int], float] | None
) -> JSON:
    from pipeline.nightly.run import regressions

    unmutated = Mutant(name="none", kind="-", scale="-", what="none (unmutated)", apply=_none)
    m = next(m for m in [unmutated, *MUTANTS] if m.name == name)
    cpu = time.process_time()
    with m.apply():
        g = regressions(settings, first, {} if bounds is None else bounds, policies=PDORS_ONLY)
    return {
        "mutant": m.name,
        "kind": m.kind,
        "scale": m.scale,
        "what": m.what,
        "size": 1 - _row_mean(g.paper_record) / base if base > 0 else 0.0,
        "red": bool(g.reasons),
        "parts": g.parts_red(),
        "reason": g.reasons[0] if g.reasons else "",
        "detectable": {v.cell: v.detectable for v in g.power},
        "threshold": {v.cell: v.threshold for v in g.power},
        "means": {v.cell: v.mean for v in g.power},
        "cpu_s": time.process_time() - cpu,
    }


def false_alarms(first: date, count: int, bounds: dict[tuple[str, int], float], workers: int = 1) -> list[JSON]:
    """The unmutated fresh power check on ``count`` nights from ``first``: red or green, why, and each cell's mean
    against its threshold."""
    out = []
    night = partial(_night, bounds=bounds if workers <= 1 else None)
    for a in _map(night, nights(first, count), workers):
        out.append(a)
        print(f"night {a['night']}: {'RED' if a['red'] else 'green'}", file=sys.stderr, flush=True)
    return out


def _night(day: date, *, bounds: dict[tuple[str, int], float] | None) -> JSON:
    from pipeline.nightly.run import Settings, regressions

    g = regressions(Settings(), day, {} if bounds is None else bounds, pinned=False)
    return {
        "night": day.isoformat(),
        "red": bool(g.reasons),
        "reasons": g.reasons,
        "means": {v.cell: v.mean for v in g.power},
        "thresholds": {v.cell: v.threshold for v in g.power},
    }


def run(
    out: str | Path,
    first: date = FIRST_NIGHT,
    false_alarm_nights: int = 40,
    only: list[str] | None = None,
    workers: int = 1,
) -> str:
    """The mutation table on the night ``first`` and the false-alarm rate over the held-out nights; writes
    ``mutants.json`` and ``mutants.md`` under ``out``; returns the Markdown."""
    bounds: dict[tuple[str, int], float] = {}
    table_ = mutation_table(first, bounds, only, workers=workers)
    alarms = false_alarms(HELD_OUT_FIRST, false_alarm_nights, bounds, workers)
    return write(out, table_, alarms)


def write(out: str | Path, table_: JSON, alarms: list[JSON]) -> str:
    md = markdown(table_["mutants"], alarms)
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    (d / "mutants.json").write_text(json.dumps({**table_, "nights": alarms}, indent=1))
    (d / "mutants.md").write_text(md)
    return md


def markdown(rows: list[JSON], alarms: list[JSON]) -> str:
    mutants = [r for r in rows if r["mutant"] != "none"]
    healthy = [r for r in rows if r["mutant"] == "none"]
    detectable = rows[0]["detectable"] if rows else {}
    threshold = rows[0]["threshold"] if rows else {}
    lines = [
        f"Mutants turned red: {sum(r['red'] for r in mutants)} of {len(mutants)}."
        + (
            f" Unmutated nightly: {'red: ' + healthy[0]['reason'] if healthy[0]['red'] else 'green'}."
            if healthy
            else ""
        ),
        "",
        table(
            ["mutant", "kind", "acts at", "utility change (paper record mean)", "nightly", "parts red", "reason"],
            [
                [
                    r["what"],
                    r["kind"],
                    r["scale"],
                    f"{-r['size']:+.1%}",
                    "red" if r["red"] else "green",
                    ", ".join(r["parts"]) or "-",
                    r["reason"] or "-",
                ]
                for r in rows
            ],
        ),
        "",
        f"False alarms of the unmutated fresh power check: {sum(a['red'] for a in alarms)} of {len(alarms)} held-out "
        f"nights{' from ' + alarms[0]['night'] if alarms else ''} "
        f"({', '.join(a['night'] for a in alarms if a['red']) or 'none'}).",
        "Threshold of a night's mean ALG / bound and the smallest drop it detects half the time, per cell: "
        + ", ".join(f"{k} {threshold[k]:.4f} ({v:.2%})" for k, v in detectable.items()),
    ]
    return "\n".join(lines) + "\n"
