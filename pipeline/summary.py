"""Aggregation over seeds: one row per (grid point, policy), the unit of MLflow child runs, tables and plots."""
from __future__ import annotations

import json
import math

import pandas as pd

from .storage import METRICS

NUMERIC = [name for name, _ in METRICS]
TABLE_METRICS = (("total_utility", "utility"), ("completed", "completed"), ("admitted", "admitted"),
                 ("ratio", "OPT/ALG"), ("decision_latency_ms.p50", "p50 ms"), ("wall_s", "wall s"))


def axis_label(value) -> str:
    """Axis values as text: lists (e.g. a mix) are not hashable, and display better compact."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if hasattr(value, "tolist"):
        value = value.tolist()
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


def with_ratio(runs: pd.DataFrame) -> pd.DataFrame:
    """Add ``ratio`` = OPT / ALG on the same instance (SPEC section 5) when the sweep has OPT rows."""
    runs = runs.copy()
    opt = runs[(runs["kind"] == "opt") & (runs["status"] == "ok")].set_index("instance_id")["total_utility"]
    alg = runs["total_utility"].where(runs["kind"] == "sim")
    runs["ratio"] = runs["instance_id"].map(opt) / alg.where(alg > 0)
    return runs


def aggregate(runs: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """Mean, std and n over seeds per point_id; failed counts runs that failed or were lost."""
    runs = with_ratio(runs)
    metrics = [m for m in [*NUMERIC, "ratio"] if runs[m].notna().any()]
    rows = []
    for point_id, g in runs.groupby("point_id", sort=False):
        ok = g[g["status"] == "ok"]
        first = g.iloc[0]
        row = {"point_id": point_id, "policy": first["policy"],
               **{a: axis_label(first[a]) if a in g else "-" for a in axes},
               "n": len(ok), "failed": int((g["status"] != "ok").sum())}
        for m in metrics:
            values = ok[m].dropna()
            row[f"{m}.mean"] = float(values.mean()) if len(values) else math.nan
            row[f"{m}.std"] = float(values.std()) if len(values) > 1 else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def _cell(mean: float, std: float) -> str:
    if math.isnan(mean):
        return "-"
    return f"{mean:.4g}" if math.isnan(std) else f"{mean:.4g} ± {std:.2g}"


def markdown(agg: pd.DataFrame, axes: list[str]) -> str:
    """The results table (mean ± std over seeds)."""
    metrics = [(m, label) for m, label in TABLE_METRICS if f"{m}.mean" in agg]
    head = ["policy", *axes, "n", "failed", *(label for _, label in metrics)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in agg.iterrows():
        cells = [r["policy"], *(r[a] for a in axes), str(r["n"]), str(r["failed"]),
                 *(_cell(r[f"{m}.mean"], r[f"{m}.std"]) for m, _ in metrics)]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines) + "\n"
