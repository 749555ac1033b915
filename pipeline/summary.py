"""Aggregation over seeds: one row per (grid point, policy), the unit of MLflow child runs and tables; one row per
(policy, x) for a report figure."""
from __future__ import annotations

import json
import math

import pandas as pd

from .columns import DERIVED_METRICS, METRICS, POLICY_STATS_PREFIX
from .opt import ceiling
from .schema import POLICY_AXIS, FigureConfig

NUMERIC = [name for name, _ in METRICS]
TABLE_METRICS = (("total_utility", "utility"), ("completed", "completed"), ("fluid_completable", "fluid bound"),
                 ("admitted", "admitted"), ("median_training_time", "median d"),
                 ("offered_load.internal", "load int"), ("offered_load.external", "load ext"),
                 ("ratio", "OPT/ALG"), ("ratio_bound", "bound/ALG"), ("decision_latency_ms.p50", "p50 ms"),
                 ("wall_s", "wall s"))
FIGURE_COLUMNS = ("policy", "x", "n", "mean", "std", "min", "max")


class FigureDataError(ValueError):
    """A figure cannot be computed from the runs as configured."""


def axis_label(value) -> str:
    """Axis values as text: lists (e.g. a mix) are not hashable, and display better compact."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if hasattr(value, "tolist"):
        value = value.tolist()
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


def _upper_bound(row) -> float:
    """An upper bound on OPT from an OPT row: OPT itself when proven, else the solver's bound (or NaN)."""
    if pd.notna(row["total_utility"]):
        return float(row["total_utility"])
    result = json.loads(row["opt.result"]) if isinstance(row.get("opt.result"), str) else {}
    return float(result["bound"]) if result.get("bound") is not None else math.nan


def _ceiling(row) -> float:
    result = json.loads(row["opt.result"]) if isinstance(row.get("opt.result"), str) else {}
    top = ceiling(result)
    return math.nan if top is None else top


def with_ratio(runs: pd.DataFrame) -> pd.DataFrame:
    """Add ``ratio`` = OPT / ALG on the same instance (the competitive ratio of the paper's Section V, Fig. 10; NaN unless OPT is proven) and
    ``ratio_bound`` = (upper bound on OPT) / ALG, an upper bound on the ratio, when the sweep has OPT rows.
    ALG = 0 leaves both NaN. OPT is exact only to its gap target: ALG above OPT within the gap has ratio 1;
    ALG above OPT's ceiling (``pipeline.opt.ceiling``) is flagged ``above_opt`` (a model or validator bug)
    and has no ratio."""
    runs = runs.copy()
    opt_rows = runs[(runs["kind"] == "opt") & (runs["status"] == "ok")].set_index("instance_id")
    alg = runs["total_utility"].where(runs["kind"] == "sim")
    has_opt = len(opt_rows) > 0
    top = runs["instance_id"].map(opt_rows.apply(_ceiling, axis=1)) if has_opt else pd.Series(math.nan, runs.index)
    runs["above_opt"] = (alg > top).fillna(False).astype(bool)
    alg = alg.where((alg > 0) & ~runs["above_opt"])
    runs["ratio"] = (runs["instance_id"].map(opt_rows["total_utility"]) / alg).clip(lower=1.0)
    upper = opt_rows.apply(_upper_bound, axis=1) if has_opt else pd.Series(dtype=float)
    runs["ratio_bound"] = (runs["instance_id"].map(upper) / alg).clip(lower=1.0)
    return runs


def above_opt(runs: pd.DataFrame) -> pd.DataFrame:
    """Simulation runs whose utility their instance's OPT rules out (each a model or validator bug)."""
    return with_ratio(runs).query("above_opt")


def aggregate(runs: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """Mean, std and n over seeds per point_id; failed counts runs that failed or were lost."""
    runs = with_ratio(runs)
    metrics = [m for m in [*NUMERIC, *DERIVED_METRICS] if runs[m].notna().any()]
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


def metric_values(runs: pd.DataFrame, metric: str) -> pd.Series:
    """One value per run: a column, a derived ratio (``with_ratio`` applied), or ``policy_stats.<key>``."""
    if metric.startswith(POLICY_STATS_PREFIX):
        key = metric[len(POLICY_STATS_PREFIX):]
        stats = runs["policy_stats"].map(lambda text: json.loads(text) if isinstance(text, str) else {})
        return pd.to_numeric(stats.map(lambda d: d.get(key)), errors="coerce").astype(float)
    return pd.to_numeric(runs[metric], errors="coerce").astype(float)


def _normalised(ok: pd.DataFrame, values: pd.Series, policy: str) -> pd.Series:
    """Each run's value over ``policy``'s value on the same instance (NaN where that is missing or 0)."""
    base = values[ok["policy"] == policy]
    ids = ok.loc[base.index, "instance_id"]
    if ids.duplicated().any():
        raise FigureDataError(f"normalise: {policy} has several runs per instance (a grid axis of its own); "
                              f"pick one with 'where'")
    by_instance = pd.Series(base.to_numpy(), index=ids.to_numpy())
    denominator = ok["instance_id"].map(by_instance)
    return values / denominator.where(denominator != 0)


def _matches(column: pd.Series, value) -> pd.Series:
    """Rows whose axis value is ``value``; numbers compare as numbers (a float column holds the YAML's 40 as
    40.0), anything else by its label."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return pd.to_numeric(column, errors="coerce") == float(value)
    return column.map(axis_label) == axis_label(value)


def figure_table(runs: pd.DataFrame, fig: FigureConfig) -> pd.DataFrame:
    """Mean, std, min, max and n over seeds of ``fig.metric`` per (policy, x), ordered by ``fig.policies`` or
    else by first appearance (plan order: grid, policy, seed); x is the axis value as text, ``-`` where a
    policy lacks the axis (another policy's parameter)."""
    ok = with_ratio(runs)
    ok = ok[(ok["status"] == "ok") & (ok["kind"] == "sim")]
    for axis, value in fig.where.items():
        ok = ok[_matches(ok[axis], value)]
    values = metric_values(ok, fig.metric)
    if fig.normalise:
        values = _normalised(ok, values, fig.normalise)
    keep = ok["policy"].isin(fig.policies) if fig.policies else pd.Series(True, index=ok.index)
    ok, values = ok[keep], values[keep]
    x = ok["policy"] if fig.x == POLICY_AXIS else ok[fig.x].map(axis_label)
    frame = pd.DataFrame({"policy": ok["policy"], "x": x, "value": values}).dropna(subset=["value"])
    stats = frame.groupby(["policy", "x"], sort=False)["value"].agg(["count", "mean", "std", "min", "max"])
    table = stats.reset_index().rename(columns={"count": "n"})[list(FIGURE_COLUMNS)]
    if fig.policies:   # the figure's order, else plan order
        table = table.sort_values("policy", key=lambda p: p.map(fig.policies.index), kind="stable")
    return table.reset_index(drop=True)


def figure_markdown(table: pd.DataFrame, x_label: str) -> str:
    """A figure's data as a Markdown table: one row per (policy, x)."""
    lines = [f"| policy | {x_label} | n | mean ± std | min | max |", "|---|---|---|---|---|---|"]
    for r in table.itertuples():
        lines.append(f"| {r.policy} | {r.x} | {r.n} | {_cell(r.mean, r.std)} | {r.min:.4g} | {r.max:.4g} |")
    return "\n".join(lines) + "\n"
