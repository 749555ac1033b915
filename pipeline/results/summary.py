"""Aggregation over seeds: one row per (grid point, policy), the unit of MLflow child runs and tables; one row per
(policy, x) for a report figure."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any, cast

import pandas as pd

from pdors.config import JSON
from pdors.errors import InputError
from pdors.model import CRITICAL, INSENSITIVE, SENSITIVE
from pdors.policies import POLICIES
from pipeline.record.manifest import Manifest
from pipeline.results import paired
from pipeline.spec.columns import DERIVED_METRICS, METRICS, POLICY_STATS_PREFIX
from pipeline.spec.opt_task import ceiling, certified_bound, primal_utility
from pipeline.spec.schema import POLICY_AXIS, FigureConfig, reference_of

NUMERIC = [name for name, _ in METRICS]
TABLE_METRICS = (
    ("total_utility", "utility"),
    ("completed", "completed"),
    ("fluid_completable", "fluid bound"),
    ("admitted", "admitted"),
    ("median_training_time", "median d"),
    ("median_censored", "median censored"),
    ("completed_share", "completed share"),
    ("training_time_completed", "mean d (completed)"),
    ("utility.insensitive", "utility insens."),
    ("utility.sensitive", "utility sens."),
    ("utility.critical", "utility crit."),
    ("offered_load.internal", "load int"),
    ("offered_load.external", "load ext"),
    ("policy_stats.rounding_rejects", "rounding rejects"),
    ("room_share", "gain/room"),
    ("ratio", "OPT/ALG"),
    ("ratio_low", "OPT_lower/ALG"),
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
    "decision_cpu_ms.count",
    "fluid_completable",
    *POLICY_STAT_COUNTS,
)
NONNEGATIVE_METRICS = (
    "total_utility",
    "median_training_time",
    "wall_s",
    "decision_latency_ms.p50",
    "decision_latency_ms.p99",
    "decision_cpu_ms.p50",
    "decision_cpu_ms.p99",
    "offered_load.compute",
    "offered_load.internal",
    "offered_load.external",
    "policy_stats.rounding_attempts_mean",
    "policy_stats.rounding_attempts_roundable_mean",
    *COUNT_METRICS,
)
SHARE_METRICS = ("policy_stats.unroundable_share",)  # besides utilisation.*: in [0, 1]


class FigureDataError(InputError):
    """A figure cannot be computed from the runs as configured."""


def axis_label(value: Any) -> str:
    """Axis values as text: lists (e.g. a mix) are not hashable, and display better compact."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if hasattr(value, "tolist"):
        value = value.tolist()
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


def _upper_bound(row: pd.Series) -> float:
    """An upper bound on OPT from an OPT row: OPT itself when proven, else the least of the solver's bound and the
    certified dual bound (or NaN)."""
    if pd.notna(row["total_utility"]):
        return float(row["total_utility"])
    result = json.loads(row["opt.result"]) if isinstance(row.get("opt.result"), str) else {}
    tops = [b for b in (result.get("bound"), certified_bound(result)) if b is not None]
    return float(min(tops)) if tops else math.nan


def _incumbent(row: pd.Series) -> float:
    """A lower bound on OPT from an OPT row: the best of its validated schedule's utility and its primal schedule's
    (NaN if neither)."""
    result = json.loads(row["opt.result"]) if isinstance(row.get("opt.result"), str) else {}
    ok = result.get("objective") is not None and result.get("status") != "invalid"
    known = [float(result["objective"])] if ok else []
    known += [u for u in [primal_utility(result)] if u is not None]
    return max(known, default=math.nan)


def _ceiling(row: pd.Series) -> float:
    result = json.loads(row["opt.result"]) if isinstance(row.get("opt.result"), str) else {}
    top = ceiling(result)
    return math.nan if top is None else top


def left_out(runs: pd.DataFrame) -> str:
    """The line every table and report carries when runs were recorded ``invalid`` ("" when none): those runs'
    schedules broke the model, so no statistic, ranking or figure counts them."""
    n = int((runs["status"] == "invalid").sum())
    if not n:
        return ""
    return (
        f"{n} invalid runs left out: the validator rejected their schedules (see their `error`), so no table, "
        "ranking or figure counts them"
    )


def with_ratio(runs: pd.DataFrame) -> pd.DataFrame:
    """Add ``ratio`` = OPT / ALG on the same instance (the competitive ratio of the paper's
    Section V, Fig. 10; NaN unless OPT is proven) and
    ``ratio_bound`` = (upper bound on OPT) / ALG, an upper bound on the ratio, when the sweep has OPT rows.
    ALG = 0 leaves both NaN. OPT is exact only to its gap target: ALG above OPT within the gap has ratio 1;
    ALG above OPT's ceiling (``pipeline.spec.opt_task.ceiling``) is flagged ``above_opt`` (a model or validator bug)
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
    # ratio_low: the best schedule known on the instance (the MILP's incumbent, the primal schedule, every valid
    # policy run) / ALG
    clean = runs["violations"].fillna(0).eq(0) if "violations" in runs else True
    valid = (runs["kind"] == "sim") & (runs["status"] == "ok") & clean & ~runs["above_opt"]
    known = runs["total_utility"].where(valid).groupby(runs["instance_id"]).max()
    if has_opt:
        known = pd.concat([known, opt_rows.apply(_incumbent, axis=1)]).groupby(level=0).max()
    runs["ratio_low"] = (runs["instance_id"].map(known) / alg).clip(lower=1.0).where(runs["ratio_bound"].notna())
    runs["room_share"] = _room_share(runs)
    return runs


def _room_share(runs: pd.DataFrame) -> pd.Series:
    """PD-ORS's gain over the best other policy on the same instance, as a share of the room between that policy
    and the instance's ``utility_ceiling`` (no schedule earns more): 1 = PD-ORS at the ceiling, 0 = no gain,
    < 0 behind. NaN for other policies, and where there is no other policy, no ceiling or no room."""
    ok = runs[(runs["kind"] == "sim") & (runs["status"] == "ok")]
    if "utility_ceiling" not in ok:
        return pd.Series(math.nan, runs.index)
    best = ok[ok["policy"] != "pdors"].groupby("instance_id")["total_utility"].max()
    base = runs["instance_id"].map(best)
    room = runs["utility_ceiling"] - base
    share = (runs["total_utility"] - base) / room.where(room > 0)
    return share.where((runs["policy"] == "pdors") & (runs["kind"] == "sim"))


def above_opt(runs: pd.DataFrame) -> pd.DataFrame:
    """Simulation runs whose utility their instance's OPT rules out (each a model or validator bug)."""
    return with_ratio(runs).query("above_opt")


def aggregate(runs: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """Mean, std and n over seeds per point_id of the run metrics, the ratios and ``POLICY_STAT_COUNTS``; failed
    counts runs that failed or were lost."""
    runs = with_ratio(runs)
    runs = runs.assign(**{m: metric_values(runs, m) for m in POLICY_STAT_COUNTS})
    extra = [m for m in JOB_METRICS if m in runs]
    metrics = [
        m for m in [*NUMERIC, *DERIVED_METRICS, "room_share", *POLICY_STAT_COUNTS, *extra] if runs[m].notna().any()
    ]
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


def markdown(agg: pd.DataFrame, axes: list[str], reference: str = "") -> str:
    """The results table (mean ± std over seeds), with the paired comparison against ``reference`` where
    ``agg`` has it (:func:`with_paired`)."""
    metrics = [(m, label) for m, label in TABLE_METRICS if f"{m}.mean" in agg]
    has_paired = f"{PAIRED_PREFIX}n" in agg
    head = ["policy", *axes, "n", "failed", *(label for _, label in metrics)]
    head += paired_head(reference) if has_paired else []
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in agg.iterrows():
        cells = [
            r["policy"],
            *(r[a] for a in axes),
            str(r["n"]),
            str(r["failed"]),
            *(_cell(r[f"{m}.mean"], r[f"{m}.std"]) for m, _ in metrics),
        ]
        if has_paired:
            cells += _paired_cells({k[len(PAIRED_PREFIX) :]: r[k] for k in r.index if k.startswith(PAIRED_PREFIX)})
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines) + "\n"


def metric_values(runs: pd.DataFrame, metric: str) -> pd.Series:
    """One value per run: a column, a derived ratio (``with_ratio`` applied), or ``policy_stats.<key>``."""
    if metric.startswith(POLICY_STATS_PREFIX):
        key = metric[len(POLICY_STATS_PREFIX) :]
        texts = runs["policy_stats"]
        # each distinct text parsed once: runs of a policy repeat a few statistics (190 texts in 10,000 tiny runs)
        found = {text: json.loads(text).get(key) for text in texts.unique() if isinstance(text, str)}
        return pd.to_numeric(
            texts.map(lambda text: found.get(text) if isinstance(text, str) else None), errors="coerce"
        ).astype(float)
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
    shown = [a for a in axes if a != fig.x and a not in fig.where and a not in fig.average]
    return sorted(shown, key=lambda a: a.split(".")[0] in POLICIES)  # a policy's own axes vary fastest


def _value_order(labels: list[str]) -> dict[str, float]:
    """Panel values in numeric order where they are numbers, else in grid order."""
    numbers = pd.to_numeric(pd.Series(labels), errors="coerce")
    if numbers.notna().all():
        return dict(zip(labels, numbers.astype(float), strict=True))
    return {v: float(k) for k, v in enumerate(labels)}


def _panels(ok: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """``ok`` with a ``panel`` label (``axis=value, ...``; "" with no panel axes). A run lacking an axis
    (another policy's parameter) belongs to every panel of that axis."""
    ok = ok.assign(panel="")
    order = []
    for k, axis in enumerate(axes):
        labels = ok[axis].map(axis_label)
        values = [v for v in dict.fromkeys(labels) if v != "-"]
        if not values:  # only policies without this parameter are drawn
            continue
        ok = ok.assign(_value=labels.map(lambda v, values=values: values if v == "-" else [v])).explode("_value")
        ok["panel"] = ok["panel"].where(ok["panel"] == "", ok["panel"] + ", ") + f"{axis}=" + ok["_value"]
        ok[f"_order{k}"] = ok["_value"].map(_value_order(values))
        order.append(f"_order{k}")
    ok = ok.sort_values(order, kind="stable") if order else ok  # panels in the order of their axes' values
    return ok.drop(columns=["_value", *order], errors="ignore")


def figure_table(runs: pd.DataFrame, fig: FigureConfig, axes: Sequence[str] = (), reference: str = "") -> pd.DataFrame:
    """Per (panel, policy, x): n runs, mean, std, the ``CONFIDENCE`` Student-t interval on the mean (clipped to
    the metric's :func:`domain`), min and max of ``fig.metric``. A panel is one value of every grid axis in
    ``axes`` that the figure neither plots, fixes nor averages (:func:`panel_axes`): by default a point is
    the mean over seeds only. Rows are ordered by panel, then by ``fig.policies`` or else the registry's
    order (PD-ORS first); x is the axis value as text, ``-`` where a policy lacks the axis (another policy's
    parameter). With a ``reference`` policy: ``paired.<field>`` columns (:func:`figure_paired`)."""
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
    frame = pd.DataFrame(
        {
            "panel": ok["panel"],
            "policy": ok["policy"],
            "x": x,
            "value": ok["value"],
            "load": load,
            "instance_id": ok["instance_id"],
            "censored": ok.get("median_censored", math.nan),
        }
    )
    frame = frame.dropna(subset=["value"])
    groups = frame.groupby(["panel", "policy", "x"], sort=False)
    stats = groups["value"].agg(["count", "mean", "std", "min", "max"]).assign(offered_load=groups["load"].mean())
    table = stats.reset_index().rename(columns={"count": "n"})
    table["ci_low"], table["ci_high"] = confidence_interval(table["mean"], table["std"], table["n"], domain(fig))
    table = table[list(FIGURE_COLUMNS)]
    if fig.metric == "median_training_time" and frame["censored"].notna().any():
        table["censored"] = groups["censored"].mean().to_numpy()  # share of the point's runs censored at T
    if reference:
        stats = figure_paired(frame, fig, reference).add_prefix(PAIRED_PREFIX)
        keys = {f"{PAIRED_PREFIX}{k}": k for k in ("panel", "policy", "x")}
        table = table.merge(stats.rename(columns=keys), on=list(keys.values()), how="left")
    order = list(fig.policies) or [*POLICIES, *dict.fromkeys(table["policy"])]  # the figure's, else PD-ORS first
    panels = list(dict.fromkeys(table["panel"]))
    rank = table["panel"].map(panels.index) * len(order) + table["policy"].map(order.index)
    table = table.iloc[rank.argsort(kind="stable")]
    return table.reset_index(drop=True)


def missing_panels(runs: pd.DataFrame, fig: FigureConfig, axes: Sequence[str], table: pd.DataFrame) -> list[str]:
    """The panels of the sweep's grid (within ``fig.where`` and ``fig.policies``) that ``table``
    (:func:`figure_table`) has no row for: no run of theirs has a value of the metric (e.g. no proven OPT)."""
    ok = runs[(runs["status"] == "ok") & (runs["kind"] == "sim")]
    for axis, value in fig.where.items():
        ok = ok[_matches(ok[axis], value)]
    if fig.policies:
        ok = ok[ok["policy"].isin(fig.policies)]
    drawn = set(table["panel"])
    return [p for p in dict.fromkeys(_panels(ok, panel_axes(fig, list(axes)))["panel"]) if p not in drawn]


def paired_head(reference: str) -> list[str]:
    return [
        f"W/T/L of {reference}",
        f"minus {reference} [95% CI]",
        f"over {reference}, geo. mean [95% CI]",
        "Wilcoxon p",
    ]


def _paired_cells(p: JSON) -> list[str]:
    if not p or pd.isna(p.get("n")) or not p["n"]:
        return ["-"] * 4
    return [
        paired.wtl(p),
        paired.interval_text(p["diff_mean"], p["diff_low"], p["diff_high"]),
        paired.interval_text(p["ratio_gmean"], p["ratio_low"], p["ratio_high"]),
        paired.p_text(p["wilcoxon_p"]),
    ]


def _interval(low: float, high: float) -> str:
    return "-" if math.isnan(low) else f"[{low:.4g}, {high:.4g}]"


def figure_markdown(table: pd.DataFrame, x_label: str, reference: str = "") -> str:
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
    has_paired = f"{PAIRED_PREFIX}n" in table
    head += paired_head(reference) if has_paired else []
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    rows: Iterable[Any] = table.itertuples()  # pandas types a row's fields as any cell value
    for k, r in enumerate(rows):
        load = "-" if math.isnan(r.offered_load) else f"{r.offered_load:.3g}"
        cells = [
            r.panel or "-",
            r.policy,
            *([r.x] if x_column else []),
            r.n,
            _cell(r.mean, r.std) + (f" (censored in {r.censored:.0%})" if getattr(r, "censored", 0) > 0 else ""),
            _interval(r.ci_low, r.ci_high),
            f"{r.min:.4g}",
            f"{r.max:.4g}",
            load,
        ]
        if has_paired:
            row = table.iloc[k]
            cells += _paired_cells(
                {c[len(PAIRED_PREFIX) :]: row[c] for c in table.columns if c.startswith(PAIRED_PREFIX)}
            )
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines) + "\n"


# Paired comparisons (pipeline/results/paired.py) and censoring. Metrics where the smaller value is the better one (a
# reference "wins" a pair by being lower); every other metric is better higher.
LOWER_IS_BETTER = (
    "median_training_time",
    "training_time_completed",
    "ratio",
    "ratio_bound",
    "rejected",
    "violations",
    "wall_s",
    "decision_latency_ms.p50",
    "decision_latency_ms.p99",
    "decision_cpu_ms.p50",
    "decision_cpu_ms.p99",
    "policy_stats.rounding_rejects",
    "policy_stats.infeasible_solves",
)
PAIRED_PREFIX = "paired."
SENSITIVITY_CLASSES = {INSENSITIVE: "insensitive", SENSITIVE: "sensitive", CRITICAL: "critical"}
# Per-run metrics derived from the jobs table (with_job_metrics): the share of jobs completed, the mean
# training time (slots from arrival to completion) over the completed jobs only, and utility per class;
# ``median_censored`` is 1 where at most half the jobs completed (``median_training_time`` is then T).
JOB_METRICS = (
    "median_censored",
    "completed_share",
    "training_time_completed",
    *(f"utility.{name}" for name in SENSITIVITY_CLASSES.values()),
)


def reference_policy(manifest: Manifest) -> str:
    """The sweep's reference policy for paired comparisons (``reference:``; older records: the default)."""
    config = manifest.config
    return reference_of(config.get("reference"), list(config["policies"]))


def with_job_metrics(runs: pd.DataFrame, jobs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with :data:`JOB_METRICS` from the runs' jobs (columns ``run_id, arrival, completion, utility,
    sensitivity``). ``median_training_time`` counts an unfinished job as T, so it is censored at T when at most
    half the jobs complete: ``completed_share`` and ``training_time_completed`` say how much."""
    runs = runs.copy()
    runs["completed_share"] = pd.to_numeric(runs["completed"], errors="coerce") / pd.to_numeric(
        runs["jobs"], errors="coerce"
    )
    runs["median_censored"] = (runs["completed_share"] <= 0.5).astype(float).where(runs["completed_share"].notna())
    done = jobs[jobs["completion"].notna()]
    runs["training_time_completed"] = runs["run_id"].map(
        (done["completion"] - done["arrival"]).groupby(done["run_id"]).mean()
    )
    by_class = jobs.groupby(["run_id", "sensitivity"])["utility"].sum().unstack()
    ran = set(jobs["run_id"].tolist())  # a set: isin on Arrow strings converts each job's id alone
    simulated = pd.Series([r in ran for r in runs["run_id"].tolist()], index=runs.index, dtype=bool)
    for code, name in SENSITIVITY_CLASSES.items():
        values = by_class[code] if code in by_class else pd.Series(dtype=float)
        runs[f"utility.{name}"] = runs["run_id"].map(values).where(simulated).fillna(0.0).where(simulated)
    return runs


def pairs(runs: pd.DataFrame, axes: list[str], reference: str, metric: str = "total_utility") -> pd.DataFrame:
    """One row per (simulation run of a policy other than ``reference``, its reference run on the same
    instance and grid point): ``point_id, policy, <axes> (labels), instance_id, seed, value, reference,
    versus``. A reference run matches on every axis both runs have. Where the reference has parameter axes of
    its own (``pdors.on_rounding_failure``: two readings), a run is paired with each reading separately:
    ``versus`` names the reading (``axis=value, ...``; "" without such axes), so no pairing pools readings."""
    ok = runs[(runs["status"] == "ok") & (runs["kind"] == "sim")]
    ok = ok.assign(value=metric_values(ok, metric), **{a: ok[a].map(axis_label) for a in axes if a in ok})
    present = [a for a in axes if a in ok]
    ref = ok[ok["policy"] == reference]
    out = []
    for _, g in ok[ok["policy"] != reference].groupby("point_id", sort=False):
        first = g.iloc[0]
        match = ref[ref["instance_id"].isin(g["instance_id"])]
        for a in present:
            if first[a] != "-":
                match = match[match[a].isin([first[a], "-"])]
        own = [a for a in present if first[a] == "-" and (match[a] != "-").any()]
        readings = match.groupby(own, sort=False) if own else [((), match)]
        for key, m in readings:
            values = key if isinstance(key, tuple) else (key,)
            versus = ", ".join(f"{a}={v}" for a, v in zip(own, values, strict=True))
            unique = m.drop_duplicates("instance_id", keep=False).set_index("instance_id")["value"]
            paired_runs = g.assign(reference=g["instance_id"].map(unique), versus=versus)
            out.append(paired_runs.dropna(subset=["reference"]))
    columns = ["point_id", "policy", *present, "instance_id", "seed", "value", "reference", "versus"]
    return pd.concat(out)[columns].reset_index(drop=True) if out else pd.DataFrame(columns=columns)


def paired_stats(pairs_frame: pd.DataFrame, by: list[str], metric: str = "total_utility") -> pd.DataFrame:
    """Per group of ``by``: :class:`pipeline.results.paired.Paired` of ``value`` against ``reference``."""
    higher = metric not in LOWER_IS_BETTER
    rows = [
        {**dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True)), **p.to_dict()}
        for key, g in pairs_frame.groupby(by, sort=False)
        for p in [paired.compare(g["value"], g["reference"], higher)]
    ]
    return pd.DataFrame(rows, columns=[*by, *paired.FIELDS])


def with_paired(
    agg: pd.DataFrame, runs: pd.DataFrame, axes: list[str], reference: str, found: pd.DataFrame | None = None
) -> pd.DataFrame:
    """``agg`` (:func:`aggregate`) with ``paired.<field>`` columns: each point's total utility against the
    reference's on the same instances (NaN on the reference's own rows); ``found``: :func:`pairs` of the same
    arguments if already computed."""
    found = pairs(runs, axes, reference) if found is None else found
    first_reading = found["versus"].iloc[0] if len(found) else ""  # one row per point: the grid's first reading
    stats = paired_stats(found[found["versus"] == first_reading], ["point_id"]).set_index("point_id")
    return agg.join(stats.add_prefix(PAIRED_PREFIX), on="point_id")


def paired_overall(
    runs: pd.DataFrame, axes: list[str], reference: str, found: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Per (reference reading, policy), its total utility against the reference's over every paired instance of
    the sweep; ``found``: :func:`pairs` of the same arguments if already computed."""
    return paired_stats(pairs(runs, axes, reference) if found is None else found, ["versus", "policy"])


def paired_markdown(overall: pd.DataFrame, reference: str) -> str:
    """Per policy over all grid points: the reference's wins/ties/losses, paired mean difference and
    geometric-mean ratio (policy / reference) with 95% intervals, and the signed-rank p-value."""
    head = [
        "policy",
        "pairs",
        f"W/T/L of {reference}",
        "utility - ref [95% CI]",
        "utility / ref, geo. mean [95% CI]",
        "ratio min-max",
        "Wilcoxon p",
    ]
    readings = overall["versus"].ne("").any()  # the reference has readings: each pairs on its own
    head = head[:1] + ([f"against {reference}"] if readings else []) + head[1:]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in cast(list[JSON], overall.to_dict("records")):  # pandas types the keys Hashable: these are columns
        span = "-" if math.isnan(r["ratio_min"]) else f"{r['ratio_min']:.3g}-{r['ratio_max']:.3g}"
        cells = [
            r["policy"],
            *([r["versus"]] if readings else []),
            r["n"],
            paired.wtl(r),
            paired.interval_text(r["diff_mean"], r["diff_low"], r["diff_high"]),
            paired.interval_text(r["ratio_gmean"], r["ratio_low"], r["ratio_high"]),
            span,
            paired.p_text(r["wilcoxon_p"]),
        ]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines) + "\n"


def figure_paired(frame: pd.DataFrame, fig: FigureConfig, reference: str) -> pd.DataFrame:
    """Per (panel, policy, x) of a figure's per-run ``frame`` (``panel, policy, x, instance_id, value``): the
    paired statistics of the plotted value against the reference's on the same instance in the same panel
    (and x, unless x is the policy); a reference with several runs per instance there is not paired."""
    keys = ["panel", "instance_id"] + ([] if fig.x == POLICY_AXIS else ["x"])
    ref = frame[frame["policy"] == reference].drop_duplicates(keys, keep=False)
    both = frame[frame["policy"] != reference].merge(
        ref[[*keys, "value"]].rename(columns={"value": "reference"}), on=keys
    )
    return paired_stats(both, ["panel", "policy", "x"], fig.metric)
