"""Measurements behind docs/OFFLINE_OPT.md, docs/PERFORMANCE.md and docs/COMPETITIVE_RATIO.md.

``pdors study opt ratio --solver highs --seeds 1-20 --time-limit 300 --out FILE``: per seed of the
small profile (H = 4, I = 10, T = 10), ``compare()`` (OPT + every policy), one JSON line per seed.
``pdors study opt rerate FILE --out FILE2``: the same rows with every policy re-run against the stored
OPT (after a policy change; OPT is a property of the instance).
``pdors study opt relax --seeds 13,7 --variants all,external,internal,totals``: the MILP with some
count variables continuous (where the integrality gap is).
``pdors study opt ablation --seeds 1-5 --time-limit 60 --out FILE``: naive vs strong and each
strengthening switched off, HiGHS, plus each variant's LP-relaxation bound.
``pdors study opt tightness --out FILE``: the dual bound / OPT over the ratio study's proven instances
(docs/figures/ratio_vs_load.csv), and where the worst gaps come from.
``pdors study opt summary FILE...``: the ratio / ablation tables of the docs from those files;
``pdors study opt solvers FILE...``: the per-seed solver table (one ``ratio`` file per solver, :func:`solvers_table`).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from offline_opt.compare import compare, rate, run_policies
from offline_opt.milp import build
from offline_opt.profile import SMALL_SIZE, small_profile
from offline_opt.solve import solve
from offline_opt.strengthening import Strengthening
from pdors.config import parse_seeds, to_dict
from pdors.markdown import table
from pdors.model import Instance
from pdors.workload import generate

VARIANTS: dict[str, Strengthening] = {
    "naive": Strengthening.naive(),
    "strong": Strengthening(),
    "strong - disaggregate": replace(Strengthening(), disaggregate=False),
    "strong - tight_bounds": replace(Strengthening(), tight_bounds=False),
    "strong - perspective": replace(Strengthening(), perspective=False),
    "strong - symmetry": replace(Strengthening(), symmetry=False),
}


@dataclass(frozen=True, kw_only=True)
class StoredOpt:
    """OPT's facts as a ratio file stores them (``offline_opt.compare.OptFacts``)."""

    objective: float | None
    bound: float | None
    status: str
    proven_optimal: bool
    mip_gap: float


def instance(seed: int) -> Instance:
    """The small profile's instance of ``seed``."""
    return generate(small_profile(), *SMALL_SIZE, seed)


def lp_bound(inst: Instance, st: Strengthening) -> float | None:
    import pyomo.environ as pyo

    from offline_opt.solvers import solve_model

    built = build(inst, st)
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(built.model)
    return solve_model(built.model, "highs", 60.0, 0.0).objective


def ratio(seeds: str, solver: str, time_limit: float, out_path: str) -> None:
    with open(out_path, "a") as out:
        for seed in parse_seeds(seeds):
            c = compare(instance(seed), solver, time_limit, seed=seed, workload=to_dict(small_profile()))
            row = c.to_dict()
            row["seed"] = seed
            out.write(json.dumps(row) + "\n")
            out.flush()
            o = c.opt
            print(
                f"seed {seed}: {solver} {o.status} obj {o.objective} bound {o.bound} gap {o.gap} "
                f"{o.wall_s:.1f}s; " + ", ".join(f"{p.policy} {p.ratio}" for p in c.policies),
                flush=True,
            )


def rerate(file: str, out_path: str) -> None:
    """Re-run every policy of a ratio file's seeds against the OPT stored there (policy code changed, the
    instances and OPT did not), writing the same rows with new policy entries."""
    rows = [json.loads(line) for line in Path(file).read_text().splitlines() if line.strip()]
    with open(out_path, "w") as out:
        for row in rows:
            opt = StoredOpt(**{k: row["opt"][k] for k in ("objective", "bound", "status", "proven_optimal", "mip_gap")})
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


def relax(seeds: str, variants: str, time_limit: float) -> None:
    """Where the integrality gap is: the MILP with some count variables continuous (docs/OFFLINE_OPT.md)."""
    import pyomo.environ as pyo

    from offline_opt.solvers import solve_model

    for seed in parse_seeds(seeds):
        for variant in variants.split(","):
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
            r = solve_model(m, "highs", time_limit, 1e-6)
            print(
                f"seed {seed} relaxed {variant}: {r.status} incumbent {r.objective} bound {r.bound} {r.wall_s:.1f} s",
                flush=True,
            )


def tightness(csv: str, out_path: str, diagnose: int, leaves: int, time_limit: float) -> None:
    """The dual bound over the ratio study's proven instances (their OPT: ``ratio_low x total_utility`` of a proven
    row of ``--csv``; instances regenerated from the seeds), one JSON line each; for the ``--diagnose`` worst, the
    compact LP relaxation and the MILP with every count continuous (binaries kept), to locate the gap."""
    import time

    import numpy as np
    import pandas as pd
    import pyomo.environ as pyo

    from offline_opt.dual_bound import dual_bound
    from offline_opt.solvers import solve_model
    from pdors.workload import WorkloadConfig

    df = pd.read_csv(csv)
    df = df[df["proven"] & (df["total_utility"] > 0)]
    key = ["seed", "machines", "workload.workload_scale"]
    opt = (df["ratio_low"] * df["total_utility"]).groupby([df[k] for k in key]).median().rename("opt").reset_index()
    rows: list[dict[str, Any]] = []
    with open(out_path, "w") as out:
        for seed, machines, scale, value in opt.itertuples(index=False):
            inst = generate(WorkloadConfig(workload_scale=scale), int(machines), 10, 10, int(seed))
            b = dual_bound(inst, branch_leaves=leaves)
            wall = df[(df["seed"] == seed) & (df["machines"] == machines) & (df["workload.workload_scale"] == scale)]
            row = {"seed": int(seed), "machines": int(machines), "workload_scale": float(scale), "opt": float(value)}
            row |= {"milp_wall_s": float(wall["opt_wall_s"].iloc[0]), **b.to_dict(), "ratio": b.bound / value}
            rows.append(row)
            out.write(json.dumps(row) + "\n")
    r = np.array([x["ratio"] for x in rows])
    walls = [float(x["wall_s"]) for x in rows]
    print(
        f"{len(r)} proven instances: bound / OPT median {np.median(r):.6f}, p90 {np.percentile(r, 90):.6f}, "
        f"max {r.max():.6f}; below OPT {int((r < 1).sum())}; exact (1e-6) {int((r <= 1 + 1e-6).sum())}, within 1% "
        f"{int((r <= 1.01).sum())}; bound median {statistics.median(walls) * 1000:.1f} ms, "
        f"max {max(walls) * 1000:.1f} ms; "
        f"MILP median {_median([x['milp_wall_s'] for x in rows]):.1f} s"
    )
    for x in sorted(rows, key=lambda x: -x["ratio"])[:diagnose]:
        inst = generate(WorkloadConfig(workload_scale=x["workload_scale"]), x["machines"], 10, 10, x["seed"])
        start = time.perf_counter()
        lp = lp_bound(inst, Strengthening())
        lp_s = time.perf_counter() - start
        m = build(inst).model
        for name in RELAXED["all"]:
            for v in getattr(m, name).values():
                v.domain = pyo.NonNegativeReals
        counts = solve_model(m, "highs", time_limit, 1e-6)
        print(
            f"seed {x['seed']} H {x['machines']} scale {x['workload_scale']}: OPT {x['opt']:.4f}, dual bound "
            f"{x['bound']:.4f} ({x['ratio']:.4f}x, {x['wall_s'] * 1000:.0f} ms), compact LP relaxation "
            f"{_fmt(lp)} ({lp_s:.2f} s), counts continuous {_fmt(counts.bound)} "
            f"({counts.status}, {counts.wall_s:.1f} s)",
            flush=True,
        )


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4f}"


def ablation(seeds: str, time_limit: float, out_path: str) -> None:
    with open(out_path, "a") as out:
        for seed in parse_seeds(seeds):
            inst = instance(seed)
            for name, st in VARIANTS.items():
                r = solve(inst, "highs", time_limit, 1e-6, st)
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


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def summary(files: Sequence[str]) -> None:
    """The tables of the docs from ``ratio`` or ``ablation`` files."""
    for path in files:
        rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
        print(f"## {path}")
        print(_ablation_table(rows) if rows and "variant" in rows[0] else _ratio_table(rows))


def _ablation_table(rows: list[dict[str, Any]]) -> str:
    """Per variant: model size, proven share, wall times, worst gap and the LP bound's median gap to OPT."""
    opt = {r["seed"]: r["objective"] for r in rows if r["variant"] == "strong" and r["proven"]}
    lines = []
    for name in dict.fromkeys(r["variant"] for r in rows):
        rs = [r for r in rows if r["variant"] == name]
        lp_gap = [(r["lp_bound"] - opt[r["seed"]]) / opt[r["seed"]] for r in rs if r["seed"] in opt]
        worst = max((r["gap"] if r["gap"] is not None else float("inf")) for r in rs)
        lines.append(
            f"| {name} | {rs[0]['variables']}-{rs[-1]['variables']} | "
            f"{sum(r['proven'] for r in rs)}/{len(rs)} | {_median([r['wall_s'] for r in rs]):.1f} | "
            f"{max(r['wall_s'] for r in rs):.1f} | {worst:.2e} | {_median(lp_gap):.2%} |"
        )
    return "\n".join(lines)


def _ratio_cell(ratio: float | None, kind: str) -> str:
    return "n/a" if ratio is None else f"{ratio:.3f}" + ("" if kind == "opt" else " (upper)")


def _ratio_table(rows: list[dict[str, Any]]) -> str:
    """Per seed: OPT's status, value, bound, gap and time, each policy's ratio and PD-ORS's theoretical bound."""
    names = [p["policy"] for p in rows[0]["policies"]]
    head = ["seed", "status", "OPT (validated)", "bound", "gap", "wall s", "OPT admits"]
    head += [*(f"{n} ratio" for n in names), "PD-ORS theoretical bound"]
    body = []
    for r in rows:
        o = r["opt"]
        pd_ = next(p for p in r["policies"] if p["policy"] == "pdors")
        body.append(
            [r["seed"], o["status"], f"{o['objective']:.4f}", f"{o['bound']:.4f}", f"{o['gap']:.1e}"]
            + [f"{o['wall_s']:.1f}", f"{o['admitted']}/{r['size']['jobs']}"]
            + [_ratio_cell(p["ratio"], p["ratio_kind"]) for p in r["policies"]]
            + [f"{pd_['competitive_bound']:.1f}"]
        )
    proven = [r for r in rows if r["opt"]["proven_optimal"]]
    return (
        table(head, body)
        + f"\nproven {len(proven)}/{len(rows)}; median wall {_median([r['opt']['wall_s'] for r in rows]):.1f} s; "
        f"max wall {max(r['opt']['wall_s'] for r in rows):.1f} s"
    )


def solvers_table(files: Sequence[str]) -> str:
    """Per-seed table of several ``ratio`` files (one per solver) for docs/PERFORMANCE.md, and a line per solver."""
    runs = {}
    for path in files:
        rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
        runs[rows[0]["opt"]["solver"]] = {r["seed"]: r["opt"] for r in rows}
    names = list(runs)
    lines = ["| seed | " + " | ".join(f"{n} status | {n} s | {n} gap" for n in names) + " |"]
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
        lines.append(f"| {seed} | " + " | ".join(cells) + " |")
    for n in names:
        os_ = list(runs[n].values())
        lines.append(
            f"{n}: proven {sum(o['proven_optimal'] for o in os_)}/{len(os_)}, median wall "
            f"{_median([o['wall_s'] for o in os_]):.1f} s, median wall of proven "
            f"{_median([o['wall_s'] for o in os_ if o['proven_optimal']]) or 0:.1f} s, no solution "
            f"{sum(o['objective'] is None for o in os_)}"
        )
    return "\n".join(lines)
