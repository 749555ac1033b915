"""Aggregation over seeds: one row per (grid point, policy), the unit of MLflow child runs and tables; one row per
(policy, x) for a report figure."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from .columns import DERIVED_METRICS, METRICS, POLICY_STATS_PREFIX
from .opt import ceiling
from .schema import POLICY_AXIS, FigureConfig

NUMERIC = [name for name, _ in METRICS]
TABLE_METRICS = (
    ("total_utility", "utility"),
    ("completed", "completed"),
    ("fluid_completable", "fluid bound"),
    ("admitted", "admitted"),
    ("median_training_time", "median d"),
    ("offered_load.internal", "load int"),
    ("offered_load.external", "load ext"),
    ("policy_stats.rounding_rejects", "rounding rejects"),
    ("ratio", "OPT/ALG"),
    ("ratio_bound", "bound/ALG"),
    ("decision_latency_ms.p50", "p50 ms"),
    ("wall_s", "wall s"),
)
FIGURE_COLUMNS = ("panel", "policy", "x", "n", "mean", "std", "ci_low", "ci_high", "min", "max", "offered_load")
LOAD_COLUMN = "offered_load.internal"  # the load a figure quotes beside each point (docs/MODEL.md, "Load")
CONFIDENCE = 0.95  # figures: Student-t interval on the mean over the runs behind a point
# Where each metric lives (a figure's interval is clipped to it): utilities, counts and times are >= 0, shares
# of capacity lie in [0, 1], OPT / ALG >= 1 (ALG <= OPT); anything else (policy_stats.*) is unbounded.
# PD-ORS's counts in its policy_stats, aggregated and tabled like the run metrics (NaN for other policies):
# external solves without a feasible rounding, and jobs discarded because their schedule needed one (the paper's
# Section V rule, docs/MODEL.md "Three readings" (a)).
POLICY_STAT_COUNTS = ("policy_stats.infeasible_solves", "policy_stats.rounding_rejects")
COUNT_METRICS = (
    "admitted",
    "completed",
    "rejected",
    "violations",
    "decision_latency_ms.count",
    "fluid_completable",
    *POLICY_STAT_COUNTS,
)
NONNEGATIVE_METRICS = (
    "total_utility",
    "median_training_time",
    "wall_s",
    "decision_latency_ms.p50",
    "decision_latency_ms.p99",
    "offered_load.compute",
    "offered_load.internal",
    "offered_load.external",
    "policy_stats.rounding_attempts_mean",
    "policy_stats.rounding_attempts_roundable_mean",
    *COUNT_METRICS,
)
SHARE_METRICS = ("policy_stats.unroundable_share",)  # besides utilisation.*: in [0, 1]


class FigureDataError(ValueError):
    """A figure cannot be computed from the runs as configured."""


def axis_label(value: Any) -> str:
    """Axis values as text: lists (e.g. a mix) are not hashable, and display better compact."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if hasattr(value, "tolist"):
        value = value.tolist()
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


def _upper_bound(row: pd.Series) -> float:
    """An upper bound on OPT from an OPT row: OPT itself when proven, else the solver's bound (or NaN)."""
    if pd.notna(row["total_utility"]):
        return float(row["total_utility"])
    result = json.loads(row["opt.result"]) if isinstance(row.get("opt.result"), str) else {}
    return float(result["bound"]) if result.get("bound") is not None else math.nan


def _ceiling(row: pd.Series) -> float:
    result = json.loads(row["opt.result"]) if isinstance(row.get("opt.result"), str) else {}
    top = ceiling(result)
    return math.nan if top is None else top


def with_ratio(runs: pd.DataFrame) -> pd.DataFrame:
    """Add ``ratio`` = OPT / ALG on the same instance (the competitive ratio of the paper's
    Section V, Fig. 10; NaN unless OPT is proven) and
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
    """Mean, std and n over seeds per point_id of the run metrics, the ratios and ``POLICY_STAT_COUNTS``; failed
    counts runs that failed or were lost."""
    runs = with_ratio(runs)
    runs = runs.assign(**{m: metric_values(runs, m) for m in POLICY_STAT_COUNTS})
    metrics = [m for m in [*NUMERIC, *DERIVED_METRICS, *POLICY_STAT_COUNTS] if runs[m].notna().any()]
    rows = []
    for point_id, g in runs.groupby("point_id", sort=False):
        ok = g[g["status"] == "ok"]
        first = g.iloc[0]
        row = {
            "point_id": point_id,
            "policy": first["policy"],
            **{a: axis_label(first[a]) if a in g else "-" for a in axes},
            "n": len(ok),
            "failed": int((g["status"] != "ok").sum()),
        }
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
        cells = [
            r["policy"],
            *(r[a] for a in axes),
            str(r["n"]),
            str(r["failed"]),
            *(_cell(r[f"{m}.mean"], r[f"{m}.std"]) for m, _ in metrics),
        ]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines) + "\n"


def metric_values(runs: pd.DataFrame, metric: str) -> pd.Series:
    """One value per run: a column, a derived ratio (``with_ratio`` applied), or ``policy_stats.<key>``."""
    if metric.startswith(POLICY_STATS_PREFIX):
        key = metric[len(POLICY_STATS_PREFIX) :]
        stats = runs["policy_stats"].map(lambda text: json.loads(text) if isinstance(text, str) else {})
        return pd.to_numeric(stats.map(lambda d: d.get(key)), errors="coerce").astype(float)
    return pd.to_numeric(runs[metric], errors="coerce").astype(float)


def _normalised(ok: pd.DataFrame, values: pd.Series, policy: str) -> pd.Series:
    """Each run's value over ``policy``'s value on the same instance (NaN where that is missing or 0)."""
    base = values[ok["policy"] == policy]
    ids = ok.loc[base.index, "instance_id"]
    if ids.duplicated().any():
        raise FigureDataError(
            f"normalise: {policy} has several runs per instance (a grid axis of its own); pick one with 'where'"
        )
    by_instance = pd.Series(base.to_numpy(), index=ids.to_numpy())
    denominator = ok["instance_id"].map(by_instance)
    return values / denominator.where(denominator != 0)


def _matches(column: pd.Series, value: Any) -> pd.Series:
    """Rows whose axis value is ``value``; numbers compare as numbers (a float column holds the YAML's 40 as
    40.0), anything else by its label."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return pd.to_numeric(column, errors="coerce") == float(value)
    return column.map(axis_label) == axis_label(value)


def domain(fig: FigureConfig) -> tuple[float, float]:
    """The interval a figure's values can take (its confidence intervals are clipped to it)."""
    if fig.normalise:  # a ratio of two values of the same metric
        return (
            (0.0, math.inf)
            if fig.metric in NONNEGATIVE_METRICS or fig.metric in DERIVED_METRICS
            else (-math.inf, math.inf)
        )
    if fig.metric in DERIVED_METRICS:
        return 1.0, math.inf
    if fig.metric.startswith("utilisation.") or fig.metric in SHARE_METRICS:
        return 0.0, 1.0
    return (0.0, math.inf) if fig.metric in NONNEGATIVE_METRICS else (-math.inf, math.inf)


def confidence_interval(
    mean: pd.Series, std: pd.Series, n: pd.Series, bounds: tuple[float, float]
) -> tuple[pd.Series, pd.Series]:
    """Student-t ``CONFIDENCE`` interval on the mean of n values, clipped to ``bounds``; NaN where n < 2."""
    from scipy import stats

    dof = n.astype(float) - 1
    half = stats.t.ppf(0.5 + CONFIDENCE / 2, dof.where(dof > 0)) * std / n.astype(float) ** 0.5
    return (mean - half).clip(*bounds), (mean + half).clip(*bounds)


def panel_axes(fig: FigureConfig, axes: list[str]) -> list[str]:
    """The grid axes that get a panel per value: every axis but x, those fixed by ``where`` and those the
    figure averages over."""
    return [a for a in axes if a != fig.x and a not in fig.where and a not in fig.average]


def _panels(ok: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """``ok`` with a ``panel`` label (``axis=value, ...``; "" with no panel axes). A run lacking an axis
    (another policy's parameter) belongs to every panel of that axis."""
    ok = ok.assign(panel="")
    for axis in axes:
        labels = ok[axis].map(axis_label)
        values = [v for v in dict.fromkeys(labels) if v != "-"]
        if not values:  # only policies without this parameter are drawn
            continue
        ok = ok.assign(_value=labels.map(lambda v, values=values: values if v == "-" else [v])).explode("_value")
        ok["panel"] = ok["panel"].where(ok["panel"] == "", ok["panel"] + ", ") + f"{axis}=" + ok["_value"]
    return ok.drop(columns="_value", errors="ignore")


def figure_table(runs: pd.DataFrame, fig: FigureConfig, axes: Sequence[str] = ()) -> pd.DataFrame:
    """Per (panel, policy, x): n runs, mean, std, the ``CONFIDENCE`` Student-t interval on the mean (clipped to
    the metric's :func:`domain`), min and max of ``fig.metric``. A panel is one value of every grid axis in
    ``axes`` that the figure neither plots, fixes nor averages (:func:`panel_axes`): by default a point is
    the mean over seeds only. Rows are ordered by ``fig.policies`` or else by first appearance (plan order:
    grid, policy, seed); x is the axis value as text, ``-`` where a policy lacks the axis (another policy's
    parameter)."""
    ok = with_ratio(runs)
    ok = ok[(ok["status"] == "ok") & (ok["kind"] == "sim")]
    for axis, value in fig.where.items():
        ok = ok[_matches(ok[axis], value)]
    values = metric_values(ok, fig.metric)
    if fig.normalise:
        values = _normalised(ok, values, fig.normalise)
    keep = ok["policy"].isin(fig.policies) if fig.policies else pd.Series(True, index=ok.index)
    ok = _panels(ok[keep].assign(value=values[keep]), panel_axes(fig, list(axes)))
    x = ok["policy"] if fig.x == POLICY_AXIS else ok[fig.x].map(axis_label)
    load = pd.to_numeric(ok[LOAD_COLUMN], errors="coerce") if LOAD_COLUMN in ok else math.nan
    frame = pd.DataFrame({"panel": ok["panel"], "policy": ok["policy"], "x": x, "value": ok["value"], "load": load})
    frame = frame.dropna(subset=["value"])
    groups = frame.groupby(["panel", "policy", "x"], sort=False)
    stats = groups["value"].agg(["count", "mean", "std", "min", "max"]).assign(offered_load=groups["load"].mean())
    table = stats.reset_index().rename(columns={"count": "n"})
    table["ci_low"], table["ci_high"] = confidence_interval(table["mean"], table["std"], table["n"], domain(fig))
    table = table[list(FIGURE_COLUMNS)]
    if fig.policies:  # the figure's order, else plan order
        table = table.sort_values("policy", key=lambda p: p.map(fig.policies.index), kind="stable")
    return table.reset_index(drop=True)


def _interval(low: float, high: float) -> str:
    return "-" if math.isnan(low) else f"[{low:.4g}, {high:.4g}]"


def figure_markdown(table: pd.DataFrame, x_label: str) -> str:
    """A figure's data as a Markdown table: one row per (panel, policy, x), with the mean offered load of the
    instances behind it."""
    x_column = x_label != POLICY_AXIS  # one bar per policy: x is the policy already
    head = [
        "panel",
        "policy",
        *([x_label] if x_column else []),
        "n",
        "mean ± std",
        f"{CONFIDENCE:.0%} CI (Student t)",
        "min",
        "max",
        "offered load",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    rows: Iterable[Any] = table.itertuples()  # pandas types a row's fields as any cell value
    for r in rows:
        load = "-" if math.isnan(r.offered_load) else f"{r.offered_load:.3g}"
        cells = [
            r.panel or "-",
            r.policy,
            *([r.x] if x_column else []),
            r.n,
            _cell(r.mean, r.std),
            _interval(r.ci_low, r.ci_high),
            f"{r.min:.4g}",
            f"{r.max:.4g}",
            load,
        ]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines) + "\n"
