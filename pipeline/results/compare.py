"""Several policies on the same instances (one per seed): ``pdors compare``'s runs, its Markdown tables and its
headline table (:mod:`pipeline.results.headline`: utility with its 95% interval, the paired ratio to the reference with
W/T/L, completed share). Every policy of a seed runs on the one instance generated for that seed, and every
number comes from the validator (through ``run``). Progress goes to stderr."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from pdors.config import JSON
from pdors.markdown import number
from pdors.markdown import table as markdown_table

from pipeline.results import paired
from pipeline.results.headline import COLUMNS, certified_means
from pipeline.text.names import policy_name

if TYPE_CHECKING:
    from pdors.run import RunResult, RunSpec


def run_all(
    spec_of: Callable[[str, int], RunSpec | JSON],
    policies: list[str],
    seeds: list[int],
    with_retime: bool = False,
    with_bound: bool = False,
) -> list[JSON]:
    """One row per (seed, policy) of the run ``spec_of(policy, seed)``: the validator's totals and the run's
    timings and policy statistics (``with_retime``: also the schedule re-timed with the actual worker:PS ratio,
    under ``retime``; ``with_bound``: also the policy's certified ratio interval on the seed's instance, under
    ``certified``: :func:`certified_rows`)."""
    from dataclasses import asdict

    from pdors.retime import retime
    from pdors.run import run

    rows = []
    for seed in seeds:
        instance = None
        results: dict[str, RunResult] = {}
        for policy in policies:
            result = run(spec_of(policy, seed), instance)
            results[policy], instance = result, result.instance
            s = result.summary
            rows.append(
                {
                    "policy": policy,
                    "seed": seed,
                    "total_utility": s.total_utility,
                    "admitted": s.admitted,
                    "completed": s.completed,
                    "violations": len(s.violations),
                    "wall_s": s.wall_s,
                    "policy_stats": s.policy_stats,
                }
            )
            if with_retime:
                rows[-1]["retime"] = asdict(retime(result.instance, result.simulation.schedule, result.validation))
            print(
                f"{policy} seed {seed}: utility {s.total_utility:.3f}, admitted {s.admitted}, completed "
                f"{s.completed}, violations {len(s.violations)}, wall {s.wall_s:.2f} s",
                file=sys.stderr,
            )
        if with_bound:
            for row, certified in zip(rows[-len(policies) :], certified_rows(results), strict=True):
                row["certified"] = certified
    return rows


def certified_rows(results: dict[str, RunResult]) -> list[JSON]:
    """Per policy of ``results`` (runs on one instance), its certified interval on OPT / ALG
    (:func:`offline_opt.certified.certify`: [best known schedule / ALG, dual bound / ALG]; ``low``, ``high``
    None where ALG = 0 or the schedule has violations; ``error``: ALG above the bound), with the bound and the
    best known utility."""
    from offline_opt.certified import certify
    from offline_opt.compare import policy_schedules, valid_utilities

    instance = next(iter(results.values())).instance
    c = certify(instance, valid_utilities(results), schedules=policy_schedules(results))
    by_policy = {r.policy: r for r in c.ratios}
    out: list[JSON] = []
    for policy in results:
        r = by_policy.get(policy)
        out.append(
            {
                "bound": c.bound.bound,
                "opt_lower": c.opt_lower,
                "opt_lower_source": c.opt_lower_source,
                "low": None if r is None else r.low,
                "high": None if r is None else r.high,
                "error": r is not None and r.error,
            }
        )
    print(
        f"certified: OPT in [{c.opt_lower:.3f}, {c.bound.bound:.3f}] (best known: {c.opt_lower_source})",
        file=sys.stderr,
    )
    return out


def aggregate(rows: list[JSON], policies: list[str]) -> list[JSON]:
    """Per policy: total utility mean, sample std (n - 1; 0 for one seed), min, max; means of the counts."""
    out = []
    for policy in policies:
        mine = [r for r in rows if r["policy"] == policy]
        u = np.array([r["total_utility"] for r in mine])
        out.append(
            {
                "policy": policy,
                "seeds": len(mine),
                "mean": float(u.mean()),
                "std": float(u.std(ddof=1)) if len(u) > 1 else 0.0,
                "min": float(u.min()),
                "max": float(u.max()),
                "admitted": float(np.mean([r["admitted"] for r in mine])),
                "completed": float(np.mean([r["completed"] for r in mine])),
                "violations": int(sum(r["violations"] for r in mine)),
                "wall_s": float(np.mean([r["wall_s"] for r in mine])),
            }
        )
    return out


MEANS = ("mean", "std", "min", "max", "admitted", "completed")


def markdown(table: list[JSON]) -> str:
    head = ["policy", "seeds", "total utility mean", "std", "min", "max", "admitted (mean)", "completed (mean)"]
    head += ["violations", "wall s (mean)"]
    rows = [
        [t["policy"], t["seeds"], *(number(t[k], ".1f") for k in MEANS), t["violations"], number(t["wall_s"], ".2f")]
        for t in table
    ]
    return markdown_table(head, rows, ["---"] + ["---:"] * (len(head) - 1))


def retime_markdown(rows: list[JSON], policies: list[str]) -> str:
    """Per policy, over its seeds: (slot, job) pairs with workers, those with more PSs than ceil(w / gamma) (and
    their jobs), those whose actual ratio is below gamma, and the mean utility and completions as run (nominal
    gamma) and re-timed with the actual ratio."""
    lines = [
        "| policy | running (slot, job) pairs | more PSs than ceil(w / gamma): pairs · jobs "
        "| sum w / sum s < gamma: pairs | utility, nominal gamma (as run) | re-timed with the actual ratio "
        "| completed: as run · re-timed |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for policy in policies:
        mine = [r["retime"] for r in rows if r["policy"] == policy]
        total = {k: sum(m[k] for m in mine) for k in mine[0]}
        nominal, actual = total["utility_nominal"] / len(mine), total["utility_actual"] / len(mine)
        change = f"{100 * (actual / nominal - 1):+.1f} %" if nominal > 0 else "-"
        below = f"{total['below_gamma']} ({total['below_gamma'] / total['running']:.0%})" if total["running"] else "0"
        lines.append(
            f"| {policy} | {total['running']} | {total['extra_ps']} · {total['extra_ps_jobs']} | {below} "
            f"| {nominal:.1f} | {actual:.1f} ({change}) "
            f"| {total['completed_nominal'] / len(mine):.1f} · {total['completed_actual'] / len(mine):.1f} |"
        )
    return "\n".join(lines)


def headline(rows: list[JSON], policies: list[str], reference: str, jobs: int) -> pd.DataFrame:
    """The headline table (:data:`pipeline.results.headline.COLUMNS`) of :func:`run_all`'s rows: per policy, total
    utility with its 95% Student-t interval, the paired geometric-mean ratio to ``reference`` on the same seeds
    with its interval and W/T/L, the mean share of the ``jobs`` completed and, where the rows are certified,
    the certified interval on the mean OPT / ALG (as a sweep's: :mod:`pipeline.results.headline`)."""
    frame = pd.DataFrame(rows)
    ref = frame[frame["policy"] == reference].set_index("seed")["total_utility"]
    out = []
    for policy in policies:
        mine = frame[frame["policy"] == policy]
        mean, low, high = paired._t_interval(mine["total_utility"].to_numpy(dtype=float))
        stats = None if policy == reference else paired.compare(mine["total_utility"], mine["seed"].map(ref))
        out.append(
            {
                "reading": "",
                "policy": policy_name(policy),
                "n": len(mine),
                "utility": mean,
                "utility_low": max(low, 0.0),
                "utility_high": high,
                "ratio": 1.0 if stats is None else stats.ratio_gmean,
                "ratio_low": math.nan if stats is None else stats.ratio_low,
                "ratio_high": math.nan if stats is None else stats.ratio_high,
                "wins": pd.NA if stats is None else stats.wins,
                "ties": pd.NA if stats is None else stats.ties,
                "losses": pd.NA if stats is None else stats.losses,
                "completed_share": float(mine["completed"].mean()) / jobs if jobs else math.nan,
                **_certified_means(mine),
            }
        )
    table = pd.DataFrame(out, columns=list(COLUMNS))
    for c in ("wins", "ties", "losses"):
        table[c] = table[c].astype("Int64")
    return table


def _certified_means(mine: pd.DataFrame) -> dict[str, float]:
    """A policy's certified columns: the means of its seeds' certified ``low`` and ``high`` where both exist
    (each seed's pair brackets its OPT / ALG, so the means bracket the mean ratio)."""
    return certified_means(
        [
            (c["low"], c["high"])
            for c in mine.get("certified", pd.Series(dtype=object))
            if isinstance(c, dict) and c["low"] is not None and c["high"] is not None
        ]
    )
