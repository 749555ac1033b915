"""Several policies on the same instances (one per seed): ``pdors compare``'s runs, its Markdown tables and its
headline table (:mod:`pipeline.headline`: utility with its 95% interval, the paired ratio to the reference with
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

from . import paired
from .headline import COLUMNS
from .names import policy_name

if TYPE_CHECKING:
    from pdors.run import RunSpec


def run_all(
    spec_of: Callable[[str, int], RunSpec | JSON], policies: list[str], seeds: list[int], with_retime: bool = False
) -> list[JSON]:
    """One row per (seed, policy) of the run ``spec_of(policy, seed)``: the validator's totals and the run's
    timings and policy statistics (``with_retime``: also the schedule re-timed with the actual worker:PS ratio,
    under ``retime``)."""
    from dataclasses import asdict

    from pdors.retime import retime
    from pdors.run import run

    rows = []
    for seed in seeds:
        instance = None
        for policy in policies:
            result = run(spec_of(policy, seed), instance)
            instance = result.instance
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
    return rows


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
    """The headline table (:data:`pipeline.headline.COLUMNS`) of :func:`run_all`'s rows: per policy, total
    utility with its 95% Student-t interval, the paired geometric-mean ratio to ``reference`` on the same seeds
    with its interval and W/T/L, and the mean share of the ``jobs`` completed."""
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
                "opt_ratio_low": math.nan,
                "opt_ratio_high": math.nan,
            }
        )
    table = pd.DataFrame(out, columns=list(COLUMNS))
    for c in ("wins", "ties", "losses"):
        table[c] = table[c].astype("Int64")
    return table
