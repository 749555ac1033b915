"""The competitive ratio against load, from a recorded sweep with OPT (``configs/ratio_vs_load.yaml``).

    pdors study ratio-vs-load RESULTS_DIR [--sweep ID] --out DIR

Per instance: its offered load (the run summaries' ``offered_load.internal``, docs/MODEL.md "Load"), OPT's status
and solve time, and each policy's OPT / ALG as an interval: [OPT / ALG, OPT / ALG] where OPT is proven,
[max(1, best found / ALG), bound / ALG] where not. Writes ``ratio_vs_load.csv`` (one row per instance and policy
run), ``ratio_vs_load.md`` (per profile: proven fraction, median solve time, load, PD-ORS's ratio and share in the
paper's band, each policy's median, the Q sensitivity; then PD-ORS per offered-load bin) and
``ratio_vs_load.{png,pdf}`` (left: PD-ORS's ratio per
instance against load, bars where OPT is unproven; right: every policy's median proven ratio per profile).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pdors.errors import ExitStatus
from pdors.markdown import number, table

BAND = (1.0, 1.4)  # the paper's Fig. 10
PROFILE = ["machines", "workload.workload_scale"]
Q_AXIS = "pdors.workload_levels"
Q_DEFAULT = 100
LOAD = "offered_load.internal"  # the jobs' demand at their fastest (internal) rate over the cluster's capacity
LOAD_BINS = (0.0, 0.25, 0.5, 0.75, 1.0, math.inf)  # fixed before the study, evenly up to a full cluster


def instance_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per simulation run with its instance's load, OPT facts and the ratio interval."""
    from pipeline.results.summary import with_ratio

    rated = with_ratio(runs)
    opt_rows = rated[(rated["kind"] == "opt") & (rated["status"] == "ok")]
    facts = {}
    for _, row in opt_rows.iterrows():
        result = json.loads(row["opt.result"])
        facts[row["instance_id"]] = {
            "opt_status": result["status"],
            "proven": bool(result["proven_optimal"]),
            "opt_objective": result["objective"],
            "opt_bound": result["bound"],
            "opt_wall_s": result["wall_s"],
        }
    sims = rated[(rated["kind"] == "sim") & (rated["status"] == "ok")].copy()
    sims["load"] = sims[LOAD]
    for key in ("opt_status", "proven", "opt_objective", "opt_bound", "opt_wall_s"):
        sims[key] = sims["instance_id"].map({i: f[key] for i, f in facts.items()})
    sims["proven"] = sims["proven"].fillna(False).astype(bool)
    alg = sims["total_utility"].where((sims["total_utility"] > 0) & ~sims["above_opt"])
    best = pd.to_numeric(sims["opt_objective"], errors="coerce")
    sims["ratio_low"] = np.where(sims["proven"], sims["ratio"], (best / alg).clip(lower=1.0))
    sims["ratio_high"] = np.where(sims["proven"], sims["ratio"], sims["ratio_bound"])
    cols = [
        "instance_id",
        "seed",
        *PROFILE,
        "policy",
        Q_AXIS,
        "load",
        "opt_status",
        "proven",
        "opt_wall_s",
        "total_utility",
        "ratio_low",
        "ratio_high",
        "above_opt",
    ]
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
    worst: Any = runs["ratio_high"].idxmax()  # a row label
    r = runs.loc[worst]
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
        row = {
            "H": h,
            "workload_scale": scale,
            "instances": len(per_instance),
            "proven": f"{int(per_instance['proven'].sum())}/{len(per_instance)}",
            "median OPT s": _median(per_instance["opt_wall_s"]),
            "median load": _median(per_instance["load"]),
            "PD-ORS median (proven)": _median(proven["ratio_low"]),
            "PD-ORS in band (proven)": f"{int(proven['ratio_low'].le(BAND[1] + 1e-9).sum())}/{len(proven)}",
            "PD-ORS worst": _worst(pd_),
        }
        for p in policies:
            rows_p = g[(g["policy"] == p) & g["proven"]]
            row[f"{p} median"] = _median(rows_p["ratio_low"])
        for q in qs:
            row[f"PD-ORS worst, Q={int(q)}"] = _worst(_pdors(g, q))
        rows.append(row)
    return pd.DataFrame(rows)


def load_table(table: pd.DataFrame) -> pd.DataFrame:
    """PD-ORS (Q = ``Q_DEFAULT``) by offered-load bin (``LOAD_BINS``), whatever the profile: instances, proven,
    the proven ones in the paper's band, their median and largest ratio, and the unproven ones' intervals."""
    pd_ = _pdors(table)
    rows = []
    for lo, hi in itertools.pairwise(LOAD_BINS):
        g = pd_[(pd_["load"] >= lo) & (pd_["load"] < hi)]
        proven, open_ = g[g["proven"]], g[~g["proven"]]
        rows.append(
            {
                "offered load": f"[{lo:g}, {hi:g})",
                "instances": len(g),
                "proven": len(proven),
                "in band (proven)": f"{int(proven['ratio_low'].le(BAND[1] + 1e-9).sum())}/{len(proven)}",
                "median (proven)": _median(proven["ratio_low"]),
                "max (proven)": float(proven["ratio_low"].max()) if len(proven) else math.nan,
                "unproven": ", ".join(
                    f"[{r.ratio_low:.3f}, {r.ratio_high:.3f}]" for r in open_.sort_values("load").itertuples()
                )
                or "-",
            }
        )
    return pd.DataFrame(rows)


def markdown(profiles: pd.DataFrame) -> str:
    def cell(v: object) -> str:
        return (
            number(v, ".3g")
            if isinstance(v, float) and not math.isnan(v)
            else ("-" if isinstance(v, float) else str(v))
        )

    return table(list(profiles.columns), ([cell(v) for v in r] for r in profiles.itertuples(index=False))) + "\n"


def plot(table: pd.DataFrame, path: Path) -> Path:
    """Left: PD-ORS's ratio per instance against its offered load, one colour per H, a bar [best found, bound] /
    ALG where OPT is unproven. Right: each policy's median ratio over a profile's proven instances against the
    profile's median load. Log-log; the paper's band shaded. PNG and PDF (``pipeline.publish.plots.FORMATS``)."""
    import matplotlib.pyplot as plt

    from pipeline.publish.plots import DPI, FORMATS, PANEL_SIZE, log_ticks, policy_style
    from pipeline.text.names import policy_name

    pd_ = _pdors(table)
    fig, (left, right) = plt.subplots(1, 2, figsize=(2 * PANEL_SIZE[0] + 1.2, 4.4), sharey=True)
    ratios = table[["ratio_low", "ratio_high"]].to_numpy(dtype=float)
    finite = ratios[np.isfinite(ratios)]  # a NaN (no ratio) must not make the top NaN
    top = max(BAND[1], float(finite.max()) if len(finite) else BAND[1]) * 1.1
    for k, (h, g) in enumerate(pd_.groupby("machines")):
        color = f"C{k}"
        proven, open_ = g[g["proven"]], g[~g["proven"]]
        left.plot(
            proven["load"],
            proven["ratio_low"].clip(upper=top),
            "o",
            color=color,
            markersize=4,
            alpha=0.8,
            label=f"H = {h}",
        )
        rows: Iterable[Any] = open_.itertuples()  # pandas types a row's fields as any cell value
        for r in rows:
            lo, hi = (min(v, top) if not math.isnan(v) else top for v in (r.ratio_low, r.ratio_high))
            left.plot([r.load, r.load], [lo, hi], "_-", color=color, linewidth=1.5, markersize=6)
    left.plot([], [], "_-", color="grey", label="OPT unproven: [best found, bound] / ALG")
    left.set_title(f"PD-ORS, every instance (Q = {Q_DEFAULT})", fontsize=10)
    per_profile = table[table["proven"] & ((table["policy"] != "pdors") | (table[Q_AXIS] == Q_DEFAULT))]
    medians = per_profile.groupby(["policy", *PROFILE]).agg(load=("load", "median"), ratio=("ratio_low", "median"))
    for key, g in medians.reset_index().groupby("policy"):
        policy = str(key)
        color, marker = policy_style(policy)
        # markers only: profiles of equal load (H = 4 at 0.005, H = 8 at 0.01) make a line meaningless
        right.plot(
            g["load"],
            g["ratio"].clip(upper=top),
            marker=marker,
            color=color,
            linestyle="none",
            markersize=5,
            alpha=0.85,
            label=policy_name(policy),
        )
    right.set_title("median over each profile's proven instances", fontsize=10)
    for ax in (left, right):
        ax.axhspan(*BAND, color="green", alpha=0.12, label=f"paper's band {BAND[0]}-{BAND[1]}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("offered load (internal rate, dominant resource; log scale)")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7)
    left.set_ylabel("competitive ratio OPT / ALG (log scale)")
    fig.suptitle("Competitive ratio against load (I = 10, T = 10)", fontsize=11)
    for ax in (left, right):  # once the limits are final
        log_ticks(ax.xaxis)
        log_ticks(ax.yaxis)
    fig.tight_layout()
    for suffix in FORMATS:
        fig.savefig(path.with_suffix(suffix), dpi=DPI)
    plt.close(fig)
    return path


def write(root: Path, sweep_id: str, out: Path) -> int:
    """The study of sweep ``sweep_id`` under output root ``root``, written to ``out``; 1 if a policy earned more
    than a proven OPT, else 0."""
    from pipeline.record.storage import Store, manifest_of, recorded_runs

    store = Store(root, sweep_id)
    _, runs = recorded_runs(store, manifest_of(store))
    table = instance_table(runs)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "ratio_vs_load.csv", index=False)
    text = markdown(profile_table(table)) + "\n" + markdown(load_table(table))
    (out / "ratio_vs_load.md").write_text(text)
    plot(table, out / "ratio_vs_load.png")
    print(text + f"written: {out}/ratio_vs_load.{{csv,md,png,pdf}}")
    above = table[table["above_opt"]]
    return ExitStatus.FAILED if len(above) else ExitStatus.OK
