"""``pdors compare``: several policies on the same instances (one per seed), summarised as a Markdown table.

Every policy of a seed runs on the one instance generated for that seed, and every number comes from the
validator (through ``run``). Progress goes to stderr; the table to stdout.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from pdors.config import ConfigError, parse_seeds

from .run_spec import add_memory_arg


def run_all(args, policies: list[str], seeds: list[int]) -> list[dict]:
    """One row per (seed, policy): the validator's totals and the run's timings and policy statistics."""
    from .run_spec import run_spec_from_args
    from pdors.run import run

    rows = []
    for seed in seeds:
        instance = None
        for policy in policies:
            spec = run_spec_from_args(argparse.Namespace(**{**vars(args), "policy": policy, "seed": seed}))
            result = run(spec, instance)
            instance = result.instance
            s = result.summary
            rows.append({"policy": policy, "seed": seed, "total_utility": s.total_utility,
                         "admitted": s.admitted, "completed": s.completed,
                         "violations": len(s.violations), "wall_s": s.wall_s,
                         "policy_stats": s.policy_stats})
            print(f"{policy} seed {seed}: utility {s.total_utility:.3f}, admitted {s.admitted}, completed "
                  f"{s.completed}, violations {len(s.violations)}, wall {s.wall_s:.2f} s", file=sys.stderr)
    return rows


def aggregate(rows: list[dict], policies: list[str]) -> list[dict]:
    """Per policy: total utility mean, sample std (n - 1; 0 for one seed), min, max; means of the counts."""
    out = []
    for policy in policies:
        mine = [r for r in rows if r["policy"] == policy]
        u = np.array([r["total_utility"] for r in mine])
        out.append({"policy": policy, "seeds": len(mine), "mean": float(u.mean()),
                    "std": float(u.std(ddof=1)) if len(u) > 1 else 0.0, "min": float(u.min()), "max": float(u.max()),
                    "admitted": float(np.mean([r["admitted"] for r in mine])),
                    "completed": float(np.mean([r["completed"] for r in mine])),
                    "violations": int(sum(r["violations"] for r in mine)),
                    "wall_s": float(np.mean([r["wall_s"] for r in mine]))})
    return out


def markdown(table: list[dict]) -> str:
    lines = ["| policy | seeds | total utility mean | std | min | max | admitted (mean) | completed (mean) "
             "| violations | wall s (mean) |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for t in table:
        lines.append(f"| {t['policy']} | {t['seeds']} | {t['mean']:.1f} | {t['std']:.1f} | {t['min']:.1f} "
                     f"| {t['max']:.1f} | {t['admitted']:.1f} | {t['completed']:.1f} | {t['violations']} "
                     f"| {t['wall_s']:.2f} |")
    return "\n".join(lines)


def cmd_compare(args) -> int:
    from pdors.policies import POLICIES

    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    unknown = [p for p in policies if p not in POLICIES]
    if unknown or not policies:
        raise ConfigError("--policies", f"unknown policy {unknown[0] if unknown else '(none)'} "
                                        f"(known: {', '.join(POLICIES)})")
    rows = run_all(args, policies, parse_seeds(args.seeds))
    table = aggregate(rows, policies)
    print(markdown(table))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"argv": sys.argv[1:], "table": table, "runs": rows}, indent=1))
    return 1 if any(t["violations"] for t in table) else 0


def register(subparsers) -> None:
    p = subparsers.add_parser("compare", help="run several policies over seeds on the same instances; "
                                              "print a Markdown table of total utility")
    p.add_argument("--policies", default="fifo,drf,dorm,oasis,pdors", help="comma-separated policy names")
    p.add_argument("--machines", type=int, default=100, help="H, machines")
    p.add_argument("--jobs", type=int, default=50, help="I, jobs")
    p.add_argument("--slots", type=int, default=20, help="T, slots in the horizon")
    p.add_argument("--seeds", default="1-5", help="seeds: ranges and lists, e.g. 1-5 or 1,3,8")
    p.add_argument("--config", help="YAML with optional 'workload' and 'policies.<name>' sections")
    p.add_argument("--json", help="write the table and every run's totals here")
    add_memory_arg(p)
    p.set_defaults(func=cmd_compare)
