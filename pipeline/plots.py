"""Figures (PNG) in the paper's style: one series per policy, mean over seeds with a ±1 std band (lines) or error
bars (bars), labelled axes, a legend. Data come from :func:`pipeline.summary.figure_table`."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")   # files only; no display on workers or CI
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from .schema import DERIVED_METRICS, POLICY_AXIS, FigureConfig  # noqa: E402
from .summary import figure_table  # noqa: E402

POLICY_NAMES = {"pdors": "PD-ORS", "fifo": "FIFO", "drf": "DRF", "dorm": "Dorm", "oasis": "OASiS",
                "pollux": "Pollux", "preemptive": "Preemptive"}
# One colour and marker per policy in every figure (PD-ORS always red diamonds).
POLICY_STYLE = {"pdors": ("C3", "D"), "fifo": ("C2", "^"), "drf": ("C1", "s"), "dorm": ("C0", "o"),
                "oasis": ("C4", "v"), "pollux": ("C5", "<"), "preemptive": ("C6", ">")}
FALLBACK_STYLE = [("C7", "p"), ("C8", "h"), ("C9", "*")]
AXIS_LABELS = {"machines": "Number of machines (H)", "jobs": "Number of jobs (I)", "slots": "Horizon T (slots)",
               "workload.bandwidth_ratio": "Internal / external bandwidth ratio $b^{(i)}/b^{(e)}$",
               "workload.mix": "Mix (insensitive, sensitive, critical)",
               "pdors.rounding.gain": r"Pre-rounding gain factor $G_\delta$", POLICY_AXIS: "Policy"}
METRIC_LABELS = {"total_utility": "Total utility", "median_training_time": "Median training time (slots)",
                 "ratio": "Competitive ratio OPT / ALG", "ratio_bound": "OPT upper bound / ALG (a bound)",
                 "completed": "Completed jobs", "admitted": "Admitted jobs",
                 "rounding.attempts_mean": "Rounding attempts per external solve",
                 "policy_stats.lp_vs_rounded_ratio": "Rounded cost / LP cost (approximation ratio)",
                 "policy_stats.rounding_attempts_roundable_mean": "Rounding attempts per roundable solve",
                 "policy_stats.unroundable_share": "Share of external solves with no feasible rounding"}


def policy_name(policy: str) -> str:
    return POLICY_NAMES.get(policy, policy)


def x_label(axis: str) -> str:
    return AXIS_LABELS.get(axis, axis)


def y_label(fig: FigureConfig) -> str:
    if fig.ylabel:
        return fig.ylabel
    label = METRIC_LABELS.get(fig.metric, fig.metric)
    return f"{label} / {policy_name(fig.normalise)}'s" if fig.normalise else label


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def draw(table: pd.DataFrame, fig: FigureConfig, path: Path) -> Path:
    """Draw one figure from its table (columns ``summary.FIGURE_COLUMNS``)."""
    ax_fig, ax = plt.subplots(figsize=(5.4, 3.6))
    others = iter(FALLBACK_STYLE * len(table))
    style = {p: POLICY_STYLE.get(p) or next(others) for p in dict.fromkeys(table["policy"])}
    if table.empty:
        ax.text(0.5, 0.5, "no data: every run failed or has no value for this metric", ha="center",
                va="center", transform=ax.transAxes, fontsize=8)
    elif fig.x == POLICY_AXIS:
        ax.bar([policy_name(p) for p in table["x"]], table["mean"], yerr=table["std"].fillna(0), capsize=4,
               color=[style[p][0] for p in table["policy"]])
    else:
        xs = [v for v in dict.fromkeys(table["x"]) if v != "-"]
        numeric = bool(xs) and all(_number(v) is not None for v in xs)
        pos = {v: (_number(v) if numeric else k) for k, v in enumerate(xs)}
        for policy, g in table.groupby("policy", sort=False):
            color, marker = style[policy]
            if (g["x"] == "-").all():   # the axis is another policy's parameter: this policy is flat
                ax.axhline(g["mean"].mean(), color=color, linestyle="--", linewidth=1.2, label=policy_name(policy))
                continue
            g = g[g["x"] != "-"].assign(pos=lambda d: d["x"].map(pos)).sort_values("pos")
            std = g["std"].fillna(0)
            ax.plot(g["pos"], g["mean"], color=color, marker=marker, label=policy_name(policy))
            ax.fill_between(g["pos"], g["mean"] - std, g["mean"] + std, color=color, alpha=0.15, linewidth=0)
        if numeric:
            ax.set_xticks([pos[v] for v in xs], [f"{pos[v]:g}" for v in xs], fontsize=8)
        else:
            ax.set_xticks(range(len(xs)), xs, rotation=15, fontsize=7)
        ax.legend(fontsize=8)
    if fig.normalise or fig.metric in DERIVED_METRICS:
        ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.set_yscale(fig.yscale)
    ax.set_xlabel(x_label(fig.x))
    ax.set_ylabel(y_label(fig), fontsize=9)
    runs = int(table["n"].max()) if len(table) else 0
    spread = "error bars" if fig.x == POLICY_AXIS else "band"
    ax.set_title(f"{fig.title}\nmean of up to {runs} runs (seeds) per point, {spread}: ±1 std", fontsize=8)
    ax.grid(alpha=0.3)
    ax_fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    ax_fig.savefig(path, dpi=110)
    plt.close(ax_fig)
    return path


def utility_vs_axis(runs: pd.DataFrame, axes: list[str], path: Path, metric: str = "total_utility") -> Path:
    """The sweep's default plot: ``metric`` against the first grid axis (mean over seeds and the other axes),
    one line per policy; with no grid, one bar per policy."""
    title = str(runs["sweep_id"].iloc[0]) if "sweep_id" in runs and len(runs) else metric
    fig = FigureConfig(name=path.stem, title=title, x=axes[0] if axes else POLICY_AXIS, metric=metric)
    return draw(figure_table(runs, fig), fig, path)
