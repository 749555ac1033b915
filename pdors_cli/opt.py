"""``pdors opt``: the offline optimum of one instance, then every policy on it and OPT / ALG."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from offline_opt.profile import SMALL_SIZE
from offline_opt.solvers import SOLVERS
from pdors.config import JSON
from pdors.errors import ExitStatus, InputError
from pdors.markdown import number
from pdors.workload import WorkloadConfig

from .run_spec import policy_list

if TYPE_CHECKING:
    from offline_opt.certified import Certified
    from offline_opt.compare import Comparison
    from pdors.model import Instance

PROFILES = ("small", "tiny", "paper")
# T x I x H of an instance the offline optimum is attempted on: the time-indexed MILP has several variables per
# cell (a 10 x 10 x 4 instance can take a minute to prove), and the model alone of a million cells needs GBs.
MAX_CELLS = 1_000_000
# The policies rated beside the bound above MAX_CELLS unless --policies says otherwise: FIFO gives the interval a
# feasible lower end in about 2 s at H = I = 1000, T = 80, where PD-ORS alone takes about 30 s of CPU.
LARGE_DEFAULT_POLICIES = ("fifo",)


def _size_problem(machines: int, jobs: int, slots: int) -> str | None:
    cells = machines * jobs * slots
    if cells <= MAX_CELLS:
        return None
    return f"H={machines} I={jobs} T={slots} is {cells:,} cells, over the {MAX_CELLS:,} the offline optimum is tried on"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("opt")
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
    p.add_argument(
        "--method",
        choices=("milp", "bound"),
        default="milp",
        help="milp: prove OPT (the certified dual bound is reported beside it); bound: only the dual bound "
        "(offline_opt/dual_bound.py) at any size: seconds at 1000 x 1000, minutes on congested instances (the "
        "rounds of its column generation)",
    )
    p.add_argument("--solver", choices=SOLVERS, default="highs")
    p.add_argument(
        "--time-limit",
        type=float,
        default=300.0,
        help="seconds for the MILP solver, in (0, 1e6]; its process is killed 30 s + 10%% later",
    )
    p.add_argument(
        "--mip-gap",
        type=float,
        default=1e-6,
        help="relative gap in [0, 1) at which the solver may stop: OPT is exact only to it",
    )
    p.add_argument(
        "--policies",
        help="comma-separated policies to run and rate (default: all; with --method bound above "
        f"{MAX_CELLS:,} cells T x I x H, {','.join(LARGE_DEFAULT_POLICIES)} only: PD-ORS alone takes about 30 s "
        "at 1000 x 1000)",
    )
    p.add_argument("--json", help="write the comparison (OPT, schedule, policies, ratios) here")
    p.add_argument(
        "--schedule",
        help="write the primal schedule (offline_opt/primal.py, the best feasible schedule built from the bound) here, "
        "as pdors simulate --schedule does",
    )
    p.set_defaults(func=cmd_opt)


def _workload(profile: str) -> WorkloadConfig:
    from offline_opt.profile import small_profile, tiny_profile

    return {"small": small_profile, "tiny": tiny_profile, "paper": WorkloadConfig}[profile]()


def cmd_opt(args: argparse.Namespace) -> int:
    from offline_opt.compare import compare
    from offline_opt.solve import limit_problems
    from pdors.config import to_dict
    from pdors.errors import ConfigError
    from pdors.instance_io import load
    from pdors.workload import generate

    for problem in limit_problems(args.time_limit, args.mip_gap):  # before anything runs
        name, _, reason = problem.partition(": ")
        raise ConfigError("--" + name.replace("_", "-"), reason)
    policies = tuple(policy_list(args.policies)) if args.policies is not None else None

    workload = _workload(args.profile)
    loaded = load(args.instance) if args.instance else None
    sizes = (loaded.num_machines, loaded.num_jobs, loaded.slots) if loaded else (args.machines, args.jobs, args.slots)
    if args.method == "milp" and (why := _size_problem(*sizes)) is not None:  # the file's own sizes, before building
        raise InputError(f"too large: {why}")
    instance = loaded or generate(workload, args.machines, args.jobs, args.slots, args.seed)
    if args.method == "bound":
        if policies is None and _size_problem(*sizes) is not None:
            policies = LARGE_DEFAULT_POLICIES
            print(
                f"policies rated: {', '.join(policies)} (the default above {MAX_CELLS:,} cells; --policies to choose)"
            )
        return _cmd_bound(args, instance, to_dict(workload) if not args.instance else {}, policies)
    c = compare(
        instance,
        args.solver,
        args.time_limit,
        args.mip_gap,
        seed=args.seed,
        workload=to_dict(workload) if not args.instance else {},
        policies=policies,
    )
    _print_comparison(c, instance, args.seed)
    if c.certified is not None:
        _print_certified(c.certified)
        _write_schedule(args.schedule, c.certified)
    _write_json(args.json, c.to_dict())
    for error in c.errors:
        print(f"error: {error}")
    _save_theorem_offender(c.theorem, instance, args.seed)
    o = c.opt
    return ExitStatus.OK if o.proven_optimal and not o.violations and not c.errors else ExitStatus.FAILED


def _print_comparison(c: Comparison, instance: Instance, seed: int) -> None:
    """OPT (or the best schedule found) and every policy's ratio to it."""
    o = c.opt
    label = "OPT" if o.proven_optimal else "best found (NOT proven optimal)"
    print(
        f"offline optimum: H={instance.num_machines} I={instance.num_jobs} T={instance.slots} seed={seed}\n"
        f"  {o.solver}: status {o.status}; {label} {number(o.objective)}; bound {number(o.bound)}; "
        f"gap {number(o.gap, '.2e')}; admitted {o.admitted}; {o.wall_s:.1f} s; "
        f"validator: {len(o.violations)} violation(s)"
    )
    for p in c.policies:
        bound = f"; theoretical bound {p.competitive_bound:.3g}" if p.competitive_bound is not None else ""
        bound += f"; Definition 1 holds on {p.premise_share:.0%} of admissions" if p.premise_share is not None else ""
        ratio = f"{p.ratio:.4f}" if p.ratio is not None else "n/a"
        kind = {"opt": "OPT/ALG", "upper": "bound/ALG (upper limit)", "none": "ratio", "error": "ERROR"}[p.ratio_kind]
        print(
            f"  {p.policy:>8}: utility {p.utility:.4f}, completed {p.completed}; {kind} {ratio}"
            + (f" ({p.ratio_note})" if p.ratio_note else "")
            + bound
        )


def _cmd_bound(args: argparse.Namespace, instance: Instance, workload: JSON, policies: tuple[str, ...] | None) -> int:
    from offline_opt.certified import certify
    from offline_opt.compare import policy_schedules, run_policies, valid_utilities
    from offline_opt.theorem import violations as theorem_violations

    runs = run_policies(instance, args.seed, workload, policies=policies)
    c = certify(instance, valid_utilities(runs), schedules=policy_schedules(runs))
    print(
        f"certified bound on OPT: H={instance.num_machines} I={instance.num_jobs} T={instance.slots} seed={args.seed}"
    )
    for name, r in runs.items():
        v = r.validation
        print(
            f"  {name:>10}: utility {v.total_utility:.4f}, completed {int((v.completion >= 0).sum())}, "
            f"{len(v.violations)} violation(s)"
        )
        if (premise := r.summary.premise).premise_share is not None:
            print(
                f"  {'':>10}  Definition 1 holds on {premise.premise_share:.0%} of {premise.admissions} admission(s) "
                f"(largest share of a machine one job takes in a slot {premise.cell_share_max}); theorem "
                f"{premise.theorem} bound {premise.competitive_bound:.4g}"
            )
    _print_certified(c)
    _write_schedule(args.schedule, c)
    size = {"machines": instance.num_machines, "jobs": instance.num_jobs, "slots": instance.slots}
    theorem = theorem_violations(runs, c)
    _write_json(
        args.json, {"instance": dict(instance.meta), "size": size, "certified": c.to_dict(), "theorem": theorem}
    )
    for error in c.errors + theorem:
        print(f"error: {error}")
    _save_theorem_offender(theorem, instance, args.seed)
    return ExitStatus.FAILED if c.errors or theorem else ExitStatus.OK


def _save_theorem_offender(theorem: list[str], instance: Instance, seed: int) -> None:
    """A run contradicting Theorems 5-6 (offline_opt.theorem): the instance is kept for a replay."""
    from offline_opt.theorem import DEFAULT_DIR, save_offender

    if theorem:
        name = f"H{instance.num_machines}-I{instance.num_jobs}-T{instance.slots}-seed{seed}"
        print(f"instance saved: {save_offender(instance, DEFAULT_DIR, name)} (replay: pdors opt --instance)")


def _print_certified(c: Certified) -> None:
    b = c.bound
    print(
        f"  dual bound {b.bound:.6f} (certified >= OPT; {b.stopped} after {b.rounds} rounds, {b.columns} columns, "
        f"{b.classes} machine class(es), {b.wall_s:.3f} s); OPT >= {c.opt_lower:.6f} ({c.opt_lower_source})"
    )
    if (p := c.primal) is not None:
        print(
            f"  primal schedule {p.utility:.6f} ({p.source}; master {p.master_status}, {p.columns} columns, "
            f"{p.placed} jobs placed, {p.violations} violation(s), {p.wall_s:.3f} s)"
        )
    for r in c.ratios:
        interval = f"[{r.low:.4f}, {r.high:.4f}]" if r.low is not None and r.high is not None else "n/a (ALG = 0)"
        print(
            f"  {r.policy:>10}: certified ratio OPT/ALG in {interval}" + ("  ERROR: above the bound" if r.error else "")
        )


def _write_schedule(path: str | None, c: Certified) -> None:
    from pdors.schedule_io import write

    if not path:
        return
    if c.primal is None or c.primal.schedule is None:
        print("  no primal schedule to write (no job completes in any known schedule)")
        return
    write(path, c.primal.schedule)
    print(f"  primal schedule written to {path}")


def _write_json(path: str | None, data: JSON) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(data, indent=1))
        print(f"  JSON written to {path}")
