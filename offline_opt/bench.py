"""Measurements behind docs/OFFLINE_OPT.md, docs/PERFORMANCE.md and docs/COMPETITIVE_RATIO.md.

``python -m offline_opt.bench ratio --solver highs --seeds 1-20 --time-limit 300 --out FILE``: per seed of the
small profile (H = 4, I = 10, T = 10), ``compare()`` (OPT + every policy), one JSON line per seed.
``python -m offline_opt.bench rerate FILE --out FILE2``: the same rows with every policy re-run against the stored
OPT (after a policy change; OPT is a property of the instance).
``python -m offline_opt.bench relax --seeds 13,7 --variants all,external,internal,totals``: the MILP with some
count variables continuous (where the integrality gap is).
``python -m offline_opt.bench ablation --seeds 1-5 --time-limit 60 --out FILE``: naive vs strong and each
strengthening switched off, HiGHS, plus each variant's LP-relaxation bound.
``python -m offline_opt.bench summary FILE...``: the ratio / ablation tables of the docs from those files;
``python -m offline_opt.bench solvers FILE...``: the per-seed solver table (one ``ratio`` file per solver).
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

from pdors.config import parse_seeds, to_dict
from pdors.workload import generate

from .compare import compare, rate, run_policies
from .milp import Strengthening, build
from .profile import SMALL_SIZE, small_profile
from .solve import solve

VARIANTS: dict[str, Strengthening] = {
    "naive": Strengthening.naive(),
    "strong": Strengthening(),
    "strong - disaggregate": replace(Strengthening(), disaggregate=False),
    "strong - tight_bounds": replace(Strengthening(), tight_bounds=False),
    "strong - perspective": replace(Strengthening(), perspective=False),
    "strong - symmetry": replace(Strengthening(), symmetry=False),
}


def instance(seed: int):
    """The small profile's instance of ``seed``."""
    return generate(small_profile(), *SMALL_SIZE, seed)


def lp_bound(inst, st: Strengthening) -> float | None:
    import pyomo.environ as pyo

    from .solvers import solve_model

    built = build(inst, st)
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(built.model)
    return solve_model(built.model, "highs", 60.0, 0.0).objective


def cmd_ratio(args) -> None:
    with open(args.out, "a") as out:
        for seed in parse_seeds(args.seeds):
            c = compare(instance(seed), args.solver, args.time_limit, seed=seed, workload=to_dict(small_profile()))
            row = c.to_dict()
            row["seed"] = seed
            out.write(json.dumps(row) + "\n")
            out.flush()
            o = c.opt
            print(
                f"seed {seed}: {args.solver} {o.status} obj {o.objective} bound {o.bound} gap {o.gap} "
                f"{o.wall_s:.1f}s; " + ", ".join(f"{p.policy} {p.ratio}" for p in c.policies),
                flush=True,
            )


def cmd_rerate(args) -> None:
    """Re-run every policy of a ratio file's seeds against the OPT stored there (policy code changed, the
    instances and OPT did not), writing the same rows with new policy entries."""
    rows = [json.loads(line) for line in Path(args.file).read_text().splitlines() if line.strip()]
    with open(args.out, "w") as out:
        for row in rows:
            opt = SimpleNamespace(
                **{k: row["opt"][k] for k in ("objective", "bound", "status", "proven_optimal", "mip_gap")}
            )
            runs = run_policies(instance(row["seed"]), row["seed"], to_dict(small_profile()))
            row["policies"] = [p.to_dict() for p in rate(opt, runs)]
            out.write(json.dumps(row) + "\n")
            print(
                f"seed {row['seed']}: " + ", ".join(f"{p['policy']} {p['ratio']}" for p in row["policies"]), flush=True
            )


# Which count variables ``relax`` makes continuous (every binary stays binary); "totals" keeps each external
# allocation's totals integer (sum_h we, sum_h se) with its per-machine split continuous.
RELAXED = {
    "none": (),
    "all": ("wi", "si", "we", "se"),
    "external": ("we", "se"),
    "internal": ("wi", "si"),
    "totals": ("we", "se"),
}


def cmd_relax(args) -> None:
    """Where the integrality gap is: the MILP with some count variables continuous (docs/OFFLINE_OPT.md)."""
    import pyomo.environ as pyo

    from .solvers import solve_model

    for seed in parse_seeds(args.seeds):
        for variant in args.variants.split(","):
            inst = instance(seed)
            m, H = build(inst).model, inst.num_machines
            for name in RELAXED[variant]:
                for v in getattr(m, name).values():
                    v.domain = pyo.NonNegativeReals
            if variant == "totals":
                keys = list(m.e.keys())
                m.we_total = pyo.Var(keys, domain=pyo.NonNegativeIntegers)
                m.se_total = pyo.Var(keys, domain=pyo.NonNegativeIntegers)
                m.we_link = pyo.Constraint(
                    keys, rule=lambda m, i, t, H=H: m.we_total[i, t] == sum(m.we[i, h, t] for h in range(H))
                )
                m.se_link = pyo.Constraint(
                    keys, rule=lambda m, i, t, H=H: m.se_total[i, t] == sum(m.se[i, h, t] for h in range(H))
                )
            r = solve_model(m, "highs", args.time_limit, 1e-6)
            print(
                f"seed {seed} relaxed {variant}: {r.status} incumbent {r.objective} bound {r.bound} {r.wall_s:.1f} s",
                flush=True,
            )


def cmd_ablation(args) -> None:
    with open(args.out, "a") as out:
        for seed in parse_seeds(args.seeds):
            inst = instance(seed)
            for name, st in VARIANTS.items():
                r = solve(inst, "highs", args.time_limit, 1e-6, st)
                row = {
                    "seed": seed,
                    "variant": name,
                    "lp_bound": lp_bound(inst, st),
                    "status": r.status,
                    "proven": r.proven_optimal,
                    "objective": r.objective,
                    "bound": r.bound,
                    "gap": r.gap,
                    "wall_s": r.wall_s,
                    "variables": r.num_variables,
                    "constraints": r.num_constraints,
                }
                out.write(json.dumps(row) + "\n")
                out.flush()
                print(row, flush=True)


def _median(xs):
    return statistics.median(xs) if xs else None


def cmd_summary(args) -> None:
    for path in args.files:
        rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
        print(f"## {path}")
        if rows and "variant" in rows[0]:
            for name in dict.fromkeys(r["variant"] for r in rows):
                rs = [r for r in rows if r["variant"] == name]
                opt = {r["seed"]: r["objective"] for r in rows if r["variant"] == "strong" and r["proven"]}
                lp_gap = [(r["lp_bound"] - opt[r["seed"]]) / opt[r["seed"]] for r in rs if r["seed"] in opt]
                print(
                    f"| {name} | {rs[0]['variables']}-{rs[-1]['variables']} | "
                    f"{sum(r['proven'] for r in rs)}/{len(rs)} | {_median([r['wall_s'] for r in rs]):.1f} | "
                    f"{max(r['wall_s'] for r in rs):.1f} | "
                    f"{max((r['gap'] if r['gap'] is not None else float('inf')) for r in rs):.2e} | "
                    f"{_median(lp_gap):.2%} |"
                )
            continue
        names = [p["policy"] for p in rows[0]["policies"]]
        print(
            "| seed | status | OPT (validated) | bound | gap | wall s | OPT admits | "
            + " | ".join(f"{n} ratio" for n in names)
            + " | PD-ORS theoretical bound |"
        )
        for r in rows:
            o = r["opt"]
            ratios = {p["policy"]: p["ratio"] for p in r["policies"]}
            pd = next(p for p in r["policies"] if p["policy"] == "pdors")
            print(
                f"| {r['seed']} | {o['status']} | {o['objective']:.4f} | {o['bound']:.4f} | {o['gap']:.1e} | "
                f"{o['wall_s']:.1f} | {o['admitted']}/{r['size']['jobs']} | "
                + " | ".join(
                    (f"{ratios[k]:.3f}" + ("" if p["ratio_kind"] == "opt" else " (upper)"))
                    if ratios[k] is not None
                    else "n/a"
                    for k, p in zip(ratios, r["policies"], strict=False)
                )
                + f" | {pd['competitive_bound']:.1f} |"
            )
        proven = [r for r in rows if r["opt"]["proven_optimal"]]
        print(
            f"proven {len(proven)}/{len(rows)}; median wall {_median([r['opt']['wall_s'] for r in rows]):.1f} s; "
            f"max wall {max(r['opt']['wall_s'] for r in rows):.1f} s"
        )


def cmd_solvers(args) -> None:
    """Per-seed table of several ``ratio`` files (one per solver) for docs/PERFORMANCE.md."""
    runs = {}
    for path in args.files:
        rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
        runs[rows[0]["opt"]["solver"]] = {r["seed"]: r["opt"] for r in rows}
    names = list(runs)
    print("| seed | " + " | ".join(f"{n} status | {n} s | {n} gap" for n in names) + " |")
    for seed in sorted(set().union(*runs.values())):
        cells = []
        for n in names:
            o = runs[n].get(seed)
            cells += (
                ["-", "-", "-"]
                if o is None
                else [
                    o["status"] + ("" if o["proven_optimal"] else " (not proven)"),
                    f"{o['wall_s']:.1f}",
                    "n/a" if o["gap"] is None else f"{o['gap']:.1e}",
                ]
            )
        print(f"| {seed} | " + " | ".join(cells) + " |")
    for n in names:
        os_ = list(runs[n].values())
        print(
            f"{n}: proven {sum(o['proven_optimal'] for o in os_)}/{len(os_)}, median wall "
            f"{_median([o['wall_s'] for o in os_]):.1f} s, median wall of proven "
            f"{_median([o['wall_s'] for o in os_ if o['proven_optimal']]) or 0:.1f} s, no solution "
            f"{sum(o['objective'] is None for o in os_)}"
        )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m offline_opt.bench", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("ratio")
    r.add_argument("--solver", default="highs")
    r.add_argument("--seeds", default="1-20")
    r.add_argument("--time-limit", type=float, default=300.0)
    r.add_argument("--out", required=True)
    r.set_defaults(func=cmd_ratio)
    e = sub.add_parser("rerate")
    e.add_argument("file")
    e.add_argument("--out", required=True)
    e.set_defaults(func=cmd_rerate)
    x = sub.add_parser("relax")
    x.add_argument("--seeds", default="13,7")
    x.add_argument("--variants", default="all,external,internal,totals")
    x.add_argument("--time-limit", type=float, default=120.0)
    x.set_defaults(func=cmd_relax)
    a = sub.add_parser("ablation")
    a.add_argument("--seeds", default="1-5")
    a.add_argument("--time-limit", type=float, default=60.0)
    a.add_argument("--out", required=True)
    a.set_defaults(func=cmd_ablation)
    s = sub.add_parser("summary")
    s.add_argument("files", nargs="+")
    s.set_defaults(func=cmd_summary)
    v = sub.add_parser("solvers")
    v.add_argument("files", nargs="+")
    v.set_defaults(func=cmd_solvers)
    args = ap.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
