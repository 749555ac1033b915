"""``pdors compare``: several policies on the same instances (one per seed), summarised as a Markdown table.

Every policy of a seed runs on the one instance generated for that seed, and every number comes from the
validator (through ``run``). Progress goes to stderr; the table to stdout. ``--retime`` adds a second table:
every schedule re-timed with the actual worker:PS ratio (:mod:`pdors.retime`; docs/MODEL.md, "Three readings" (b)).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from pdors.config import ConfigError, parse_seeds
from pdors.markdown import number
from pdors.markdown import table as markdown_table

from .run_spec import add_memory_arg


def run_all(args: argparse.Namespace, policies: list[str], seeds: list[int]) -> list[dict]:
    """One row per (seed, policy): the validator's totals and the run's timings and policy statistics (with
    ``args.retime``, also the schedule re-timed with the actual worker:PS ratio, under ``retime``)."""
    from dataclasses import asdict

    from pdors.retime import retime
    from pdors.run import run

    from .run_spec import run_spec_from_args

    rows = []
    for seed in seeds:
        instance = None
        for policy in policies:
            spec = run_spec_from_args(argparse.Namespace(**{**vars(args), "policy": policy, "seed": seed}))
            result = run(spec, instance)
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
            if args.retime:
                rows[-1]["retime"] = asdict(retime(result.instance, result.simulation.schedule, result.validation))
            print(
                f"{policy} seed {seed}: utility {s.total_utility:.3f}, admitted {s.admitted}, completed "
                f"{s.completed}, violations {len(s.violations)}, wall {s.wall_s:.2f} s",
                file=sys.stderr,
            )
    return rows


def aggregate(rows: list[dict], policies: list[str]) -> list[dict]:
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


def markdown(table: list[dict[str, Any]]) -> str:
    head = ["policy", "seeds", "total utility mean", "std", "min", "max", "admitted (mean)", "completed (mean)"]
    head += ["violations", "wall s (mean)"]
    rows = [
        [t["policy"], t["seeds"], *(number(t[k], ".1f") for k in MEANS), t["violations"], number(t["wall_s"], ".2f")]
        for t in table
    ]
    return markdown_table(head, rows, ["---"] + ["---:"] * (len(head) - 1))


def retime_markdown(rows: list[dict], policies: list[str]) -> str:
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


def cmd_compare(args: argparse.Namespace) -> int:
    from pdors.policies import POLICIES

    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    unknown = [p for p in policies if p not in POLICIES]
    if unknown or not policies:
        raise ConfigError(
            "--policies", f"unknown policy {unknown[0] if unknown else '(none)'} (known: {', '.join(POLICIES)})"
        )
    rows = run_all(args, policies, parse_seeds(args.seeds))
    table = aggregate(rows, policies)
    print(markdown(table))
    if args.retime:
        print("\nRe-timed with the actual worker:PS ratio (counts summed over seeds; utilities, completions: means):\n")
        print(retime_markdown(rows, policies))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"argv": sys.argv[1:], "table": table, "runs": rows}, indent=1))
    return 1 if any(t["violations"] for t in table) else 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("compare")
    p.add_argument("--policies", default="fifo,drf,dorm,oasis,pdors", help="comma-separated policy names")
    p.add_argument("--machines", type=int, default=100, help="H, machines")
    p.add_argument("--jobs", type=int, default=50, help="I, jobs")
    p.add_argument("--slots", type=int, default=20, help="T, slots in the horizon")
    p.add_argument("--seeds", default="1-5", help="seeds: ranges and lists, e.g. 1-5 or 1,3,8")
    p.add_argument("--config", help="YAML with optional 'workload' and 'policies.<name>' sections")
    p.add_argument("--json", help="write the table and every run's totals here")
    p.add_argument(
        "--retime",
        action="store_true",
        help="also re-time every schedule with the actual worker:PS ratio instead of the nominal gamma "
        '(docs/MODEL.md, "Three readings" (b)) and print a table of the effect per policy',
    )
    add_memory_arg(p)
    p.set_defaults(func=cmd_compare)
