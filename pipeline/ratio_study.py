"""The competitive ratio against load, from a recorded sweep with OPT (``configs/ratio_vs_load.yaml``).

    python -m pipeline.ratio_study RESULTS_DIR [--sweep ID] --out DIR

Per instance: a load proxy (:func:`load_proxy`), OPT's status and solve time, and each policy's OPT / ALG as
an interval: [OPT / ALG, OPT / ALG] where OPT is proven, [max(1, best found / ALG), bound / ALG] where not.
Writes ``ratio_vs_load.csv`` (one row per instance and policy run), ``ratio_vs_load.md`` (per profile: proven
fraction, median solve time, load, PD-ORS's ratio and share in the paper's band, each policy's median, the Q
sensitivity) and ``ratio_vs_load.png`` (PD-ORS's ratio against load; bars where OPT is unproven).
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

BAND = (1.0, 1.4)   # the paper's Fig. 10
PROFILE = ["machines", "workload.workload_scale"]
Q_AXIS = "pdors.workload_levels"
Q_DEFAULT = 100


def load_proxy(instance) -> float:
    """Offered load on the dominant resource: every job's work at its internal (fastest) rate, V_i (tau_i +
    2 g_i gamma_i / (b_i^(i) F_i)) worker-slots, each holding alpha_i^r plus its share beta_i^r / gamma_i of a
    PS, summed over jobs and divided by the cluster's sum_h C_h^r T; the largest over resources r. Arrival
    times are ignored, so a late job counts in full. (A proxy computed here until run summaries carry an
    ``offered_load`` of their own.)"""
    jobs, cluster = instance.jobs, instance.cluster
    worker_slots = jobs.workload * jobs.time_per_sample(True)
    per_worker = jobs.worker_demand + jobs.ps_demand / jobs.gamma[:, None]
    demand = (worker_slots[:, None] * per_worker).sum(axis=0)
    supply = cluster.capacity.sum(axis=0) * instance.slots
    return float(np.max(np.where(supply > 0, demand / np.where(supply > 0, supply, 1.0), 0.0)))


def instance_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per simulation run with its instance's load, OPT facts and the ratio interval."""
    from pdors.config import build
    from pdors.run import RunSpec, make_instance

    from .summary import with_ratio

    rated = with_ratio(runs)
    opt_rows = rated[(rated["kind"] == "opt") & (rated["status"] == "ok")]
    facts = {}
    for _, row in opt_rows.iterrows():
        spec = json.loads(row["spec"])
        result = json.loads(row["opt.result"])
        instance = make_instance(build(RunSpec, {k: v for k, v in spec.items() if k != "opt"}))
        facts[row["instance_id"]] = {"load": load_proxy(instance), "opt_status": result["status"],
                                  "proven": bool(result["proven_optimal"]), "opt_objective": result["objective"],
                                  "opt_bound": result["bound"], "opt_wall_s": result["wall_s"]}
    sims = rated[(rated["kind"] == "sim") & (rated["status"] == "ok")].copy()
    for key in ("load", "opt_status", "proven", "opt_objective", "opt_bound", "opt_wall_s"):
        sims[key] = sims["instance_id"].map({i: f[key] for i, f in facts.items()})
    sims["proven"] = sims["proven"].fillna(False).astype(bool)
    alg = sims["total_utility"].where((sims["total_utility"] > 0) & ~sims["above_opt"])
    best = pd.to_numeric(sims["opt_objective"], errors="coerce")
    sims["ratio_low"] = np.where(sims["proven"], sims["ratio"], (best / alg).clip(lower=1.0))
    sims["ratio_high"] = np.where(sims["proven"], sims["ratio"], sims["ratio_bound"])
    cols = ["instance_id", "seed", *PROFILE, "policy", Q_AXIS, "load", "opt_status", "proven", "opt_wall_s",
            "total_utility", "ratio_low", "ratio_high", "above_opt"]
    return sims[[c for c in cols if c in sims]].reset_index(drop=True)


def _pdors(table: pd.DataFrame, q: int = Q_DEFAULT) -> pd.DataFrame:
    return table[(table["policy"] == "pdors") & (table[Q_AXIS] == q)]


def _median(values: pd.Series) -> float:
    values = values.dropna()
    return float(values.median()) if len(values) else math.nan


def _worst(runs: pd.DataFrame) -> str:
    """The instance with the largest upper end: its ratio, or its interval where OPT is unproven."""
    if runs["ratio_high"].isna().all():
        return "-"
    r = runs.loc[runs["ratio_high"].idxmax()]
    return f"{r['ratio_high']:.3f}" if r["proven"] else f"[{r['ratio_low']:.3f}, {r['ratio_high']:.3f}]"


def profile_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per (H, workload_scale): instances, proven fraction, median OPT seconds, median load, PD-ORS's median
    proven ratio and share of the proven ones in the band, its worst instance (an interval if unproven),
    every other policy's median proven ratio, and PD-ORS's worst instance at each Q."""
    rows = []
    policies = [p for p in table["policy"].unique() if p != "pdors"]
    qs = sorted(table[Q_AXIS].dropna().unique()) if Q_AXIS in table else []
    for (h, scale), g in table.groupby(PROFILE, sort=True):
        per_instance = g.drop_duplicates("instance_id")
        pd_ = _pdors(g)
        proven = pd_[pd_["proven"]]
        row = {"H": h, "workload_scale": scale, "instances": len(per_instance),
               "proven": f"{int(per_instance['proven'].sum())}/{len(per_instance)}",
               "median OPT s": _median(per_instance["opt_wall_s"]), "median load": _median(per_instance["load"]),
               "PD-ORS median (proven)": _median(proven["ratio_low"]),
               "PD-ORS in band (proven)": f"{int(proven['ratio_low'].le(BAND[1] + 1e-9).sum())}/{len(proven)}",
               "PD-ORS worst": _worst(pd_)}
        for p in policies:
            rows_p = g[(g["policy"] == p) & g["proven"]]
            row[f"{p} median"] = _median(rows_p["ratio_low"])
        for q in qs:
            row[f"PD-ORS worst, Q={int(q)}"] = _worst(_pdors(g, q))
        rows.append(row)
    return pd.DataFrame(rows)


def markdown(profiles: pd.DataFrame) -> str:
    def cell(v) -> str:
        return f"{v:.3g}" if isinstance(v, float) and not math.isnan(v) else ("-" if isinstance(v, float) else str(v))

    head = list(profiles.columns)
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in profiles.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def plot(table: pd.DataFrame, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter

    pd_ = _pdors(table)
    fig, ax = plt.subplots(figsize=(7.0, 4.4))
    ax.axhspan(*BAND, color="green", alpha=0.12, label=f"paper's band {BAND[0]}-{BAND[1]}")
    finite = pd_[["ratio_low", "ratio_high"]].replace(np.inf, np.nan).stack()
    top = max(BAND[1], float(finite.max()) if len(finite) else BAND[1]) * 1.1
    for k, (h, g) in enumerate(pd_.groupby("machines")):
        color = f"C{k}"
        proven, open_ = g[g["proven"]], g[~g["proven"]]
        ax.plot(proven["load"], proven["ratio_low"].clip(upper=top), "o", color=color, label=f"H = {h} (proven)")
        for r in open_.itertuples():
            lo, hi = (min(v, top) if not math.isnan(v) else top for v in (r.ratio_low, r.ratio_high))
            ax.plot([r.load, r.load], [lo, hi], "_-", color=color, linewidth=2, markersize=8)
    ax.plot([], [], "_-", color="grey", label="OPT unproven: [best found, bound] / ALG")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
    ax.set_xlabel("offered load on the dominant resource (proxy, log scale)")
    ax.set_ylabel("OPT / PD-ORS (log scale)")
    ax.set_title("PD-ORS's competitive ratio against load (I = 10, T = 10, Q = 100)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv=None) -> int:
    from .storage import Store
    from .sweep import manifest_of, recorded_runs

    ap = argparse.ArgumentParser(prog="python -m pipeline.ratio_study", description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="the sweep's output root (its config's `output`)")
    ap.add_argument("--sweep", help="sweep id (default: the only sweep under RESULTS)")
    ap.add_argument("--out", required=True, help="directory for ratio_vs_load.{csv,md,png}")
    args = ap.parse_args(argv)
    root = Path(args.results)
    ids = [args.sweep] if args.sweep else sorted(p.name for p in (root / "sweeps").glob("*") if p.is_dir())
    if len(ids) != 1:
        ap.error(f"--sweep: name one of {', '.join(ids) or 'none'} under {root}")
    store = Store(root, ids[0])
    _, runs = recorded_runs(store, manifest_of(store))
    table = instance_table(runs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "ratio_vs_load.csv", index=False)
    text = markdown(profile_table(table))
    (out / "ratio_vs_load.md").write_text(text)
    plot(table, out / "ratio_vs_load.png")
    print(text + f"written: {out}/ratio_vs_load.{{csv,md,png}}")
    above = table[table["above_opt"]]
    return 1 if len(above) else 0


if __name__ == "__main__":
    raise SystemExit(main())
