"""``pdors opt``: the offline optimum of one instance, then every policy on it and OPT / ALG."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from offline_opt.profile import SMALL_SIZE
from offline_opt.solvers import SOLVERS
from pdors.markdown import number
from pdors.workload import WorkloadConfig

PROFILES = ("small", "tiny", "paper")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("opt", help="offline optimum (MILP) of one instance and each policy's ratio OPT/ALG")
    p.add_argument("--machines", type=int, default=SMALL_SIZE.machines, help="H, machines")
    p.add_argument("--jobs", type=int, default=SMALL_SIZE.jobs, help="I, jobs")
    p.add_argument("--slots", type=int, default=SMALL_SIZE.slots, help="T, slots in the horizon")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--profile",
        choices=PROFILES,
        default="small",
        help="workload: small (ratio checks, offline_opt/profile.py), tiny (enumerator), paper "
        '(the generator\'s defaults, docs/MODEL.md "Calibration")',
    )
    p.add_argument("--instance", help="instance JSON (pdors.instance_io) instead of generating one")
    p.add_argument("--solver", choices=SOLVERS, default="highs")
    p.add_argument(
        "--time-limit",
        type=float,
        default=300.0,
        help="seconds for the MILP solver (> 0); its process is killed 30 s + 10%% later",
    )
    p.add_argument(
        "--mip-gap",
        type=float,
        default=1e-6,
        help="relative gap in [0, 1) at which the solver may stop: OPT is exact only to it",
    )
    p.add_argument("--json", help="write the comparison (OPT, schedule, policies, ratios) here")
    p.set_defaults(func=cmd_opt)


def _workload(profile: str) -> WorkloadConfig:
    from offline_opt.profile import small_profile, tiny_profile

    return {"small": small_profile, "tiny": tiny_profile, "paper": WorkloadConfig}[profile]()


def cmd_opt(args: argparse.Namespace) -> int:
    from offline_opt.compare import compare
    from offline_opt.solve import limit_problems
    from pdors.config import ConfigError, to_dict
    from pdors.instance_io import load
    from pdors.workload import generate

    for problem in limit_problems(args.time_limit, args.mip_gap):  # before anything runs
        name, _, reason = problem.partition(": ")
        raise ConfigError("--" + name.replace("_", "-"), reason)

    workload = _workload(args.profile)
    instance = (
        load(args.instance) if args.instance else generate(workload, args.machines, args.jobs, args.slots, args.seed)
    )
    c = compare(
        instance,
        args.solver,
        args.time_limit,
        args.mip_gap,
        seed=args.seed,
        workload=to_dict(workload) if not args.instance else {},
    )
    o = c.opt
    label = "OPT" if o.proven_optimal else "best found (NOT proven optimal)"
    print(
        f"offline optimum: H={instance.num_machines} I={instance.num_jobs} T={instance.slots} seed={args.seed}\n"
        f"  {o.solver}: status {o.status}; {label} {number(o.objective)}; bound {number(o.bound)}; "
        f"gap {number(o.gap, '.2e')}; admitted {o.admitted}; {o.wall_s:.1f} s; "
        f"validator: {len(o.violations)} violation(s)"
    )
    for p in c.policies:
        bound = f"; theoretical bound {p.competitive_bound:.3g}" if p.competitive_bound is not None else ""
        ratio = f"{p.ratio:.4f}" if p.ratio is not None else "n/a"
        kind = {"opt": "OPT/ALG", "upper": "bound/ALG (upper limit)", "none": "ratio", "error": "ERROR"}[p.ratio_kind]
        print(
            f"  {p.policy:>8}: utility {p.utility:.4f}, completed {p.completed}; {kind} {ratio}"
            + (f" ({p.ratio_note})" if p.ratio_note else "")
            + bound
        )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(c.to_dict(), indent=1))
        print(f"  JSON written to {args.json}")
    for error in c.errors:
        print(f"error: {error}")
    return 0 if o.proven_optimal and not o.violations and not c.errors else 1
