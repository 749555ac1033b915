"""Figures in the paper's style, PNG at 300 dpi and PDF: one series per policy (the same colour and marker in
every figure), the mean over the runs behind each point (their number written next to it) with a 95% Student-t
confidence interval on that mean, clipped to the metric's domain, as a band (lines) or error bars (bars);
one panel per value of every other grid axis unless the figure averages over it. Data come from
:func:`pipeline.summary.figure_table`."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on workers or CI
import math
import zlib

import matplotlib.pyplot as plt
import pandas as pd

from .columns import DERIVED_METRICS
from .schema import POLICY_AXIS, FigureConfig
from .summary import CONFIDENCE, figure_table

POLICY_NAMES = {
    "pdors": "PD-ORS",
    "fifo": "FIFO",
    "drf": "DRF",
    "dorm": "Dorm",
    "oasis": "OASiS",
    "pollux": "Pollux",
    "preemptive": "Preemptive",
}
# One colour and marker per policy in every figure (PD-ORS always red diamonds).
POLICY_STYLE = {
    "pdors": ("C3", "D"),
    "fifo": ("C2", "^"),
    "drf": ("C1", "s"),
    "dorm": ("C0", "o"),
    "oasis": ("C4", "v"),
    "pollux": ("C5", "<"),
    "preemptive": ("C6", ">"),
}
FALLBACK_STYLE = [("C7", "p"), ("C8", "h"), ("C9", "*")]  # by a hash of the name: stable across figures
FORMATS = (".png", ".pdf")
DPI = 300
PANEL_SIZE = (5.4, 3.6)  # inches
MAX_COLUMNS = 3
AXIS_LABELS = {
    "machines": "Number of machines (H)",
    "jobs": "Number of jobs (I)",
    "slots": "Horizon T (slots)",
    "workload.bandwidth_ratio": "Internal / external bandwidth ratio $b^{(i)}/b^{(e)}$",
    "workload.mix": "Mix (insensitive, sensitive, critical)",
    "pdors.rounding.gain": r"Pre-rounding gain factor $G_\delta$",
    POLICY_AXIS: "Policy",
}
METRIC_LABELS = {
    "total_utility": "Total utility",
    "median_training_time": "Median training time (slots)",
    "ratio": "Competitive ratio OPT / ALG",
    "ratio_bound": "OPT upper bound / ALG (a bound)",
    "completed": "Completed jobs",
    "admitted": "Admitted jobs",
    "policy_stats.rounding_attempts_mean": "Rounding attempts per external solve",
    "policy_stats.lp_vs_rounded_ratio": "Rounded cost / LP cost (approximation ratio)",
    "policy_stats.rounding_attempts_roundable_mean": "Rounding attempts per roundable solve",
    "policy_stats.unroundable_share": "Share of external solves with no feasible rounding",
    "policy_stats.rounding_rejects": "Jobs discarded for a failed rounding",
    "policy_stats.infeasible_solves": "External solves with no feasible rounding",
}


def policy_name(policy: str) -> str:
    return POLICY_NAMES.get(policy, policy)


def x_label(axis: str) -> str:
    return AXIS_LABELS.get(axis, axis)


def y_label(fig: FigureConfig) -> str:
    if fig.ylabel:
        return fig.ylabel
    label = METRIC_LABELS.get(fig.metric, fig.metric)
    return f"{label} / {policy_name(fig.normalise)}'s" if fig.normalise else label


def policy_style(policy: str) -> tuple[str, str]:
    """Colour and marker of a policy, the same in every figure."""
    return POLICY_STYLE.get(policy) or FALLBACK_STYLE[zlib.crc32(policy.encode()) % len(FALLBACK_STYLE)]


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _label_counts(ax, xs, ys, ns, color) -> None:
    for x, y, n in zip(xs, ys, ns, strict=False):
        ax.annotate(f"{int(n)}", (x, y), textcoords="offset points", xytext=(3, 3), fontsize=6, color=color)


def _bars(ax, table: pd.DataFrame) -> None:
    low = (table["mean"] - table["ci_low"]).fillna(0).clip(lower=0)
    high = (table["ci_high"] - table["mean"]).fillna(0).clip(lower=0)
    colors = [policy_style(p)[0] for p in table["policy"]]
    names = [policy_name(p) for p in table["x"]]
    ax.bar(names, table["mean"], yerr=[low, high], capsize=4, color=colors)
    for k, (y, n) in enumerate(zip(table["mean"], table["n"], strict=False)):
        ax.annotate(f"n={int(n)}", (k, y), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=6)
    ax.tick_params(axis="x", labelsize=8)


def _lines(ax, table: pd.DataFrame, xs: list[str], pos: dict) -> None:
    for policy, g in table.groupby("policy", sort=False):
        color, marker = policy_style(policy)
        if (g["x"] == "-").all():  # the axis is another policy's parameter: this policy is flat
            ax.axhline(g["mean"].mean(), color=color, linestyle="--", linewidth=1.2, label=policy_name(policy))
            continue
        g = g[g["x"] != "-"].assign(pos=lambda d: d["x"].map(pos)).sort_values("pos")
        ax.plot(g["pos"], g["mean"], color=color, marker=marker, label=policy_name(policy))
        ax.fill_between(g["pos"], g["ci_low"], g["ci_high"], color=color, alpha=0.15, linewidth=0)
        _label_counts(ax, g["pos"], g["mean"], g["n"], color)


def _panel_title(panel: str, part: pd.DataFrame) -> str:
    """The panel's label and the range of its points' mean offered load (the regime it shows)."""
    load = part["offered_load"].dropna() if "offered_load" in part else pd.Series(dtype=float)
    if load.empty:
        return panel
    span = f"{load.min():.2g}" if f"{load.min():.2g}" == f"{load.max():.2g}" else f"{load.min():.2g}-{load.max():.2g}"
    return f"{panel}{'; ' if panel else ''}offered load {span}"


def figure(table: pd.DataFrame, fig: FigureConfig):
    """The matplotlib Figure for one figure's table (columns ``summary.FIGURE_COLUMNS``): one panel per
    value of ``panel``."""
    panels = list(dict.fromkeys(table["panel"])) or [""]
    cols = min(MAX_COLUMNS, len(panels))
    rows = math.ceil(len(panels) / cols)
    # Own y-axes: panels of two regimes differ several-fold in magnitude.
    out, axes = plt.subplots(rows, cols, figsize=(PANEL_SIZE[0] * cols, PANEL_SIZE[1] * rows), squeeze=False)
    xs = [v for v in dict.fromkeys(table["x"]) if v != "-"]
    numeric = bool(xs) and all(_number(v) is not None for v in xs)
    pos = {v: (_number(v) if numeric else k) for k, v in enumerate(xs)}
    order = list(dict.fromkeys(table["policy"]))  # the same legend order in every panel
    for ax, panel in zip(axes.flat, panels, strict=False):
        part = table[table["panel"] == panel].sort_values("policy", key=lambda p: p.map(order.index), kind="stable")
        if part.empty:
            ax.text(
                0.5,
                0.5,
                "no data: every run failed or has no value for this metric",
                ha="center",
                va="center",
                transform=ax.transAxes,
                fontsize=8,
            )
        elif fig.x == POLICY_AXIS:
            _bars(ax, part)
        else:
            _lines(ax, part, xs, pos)
            if numeric:
                ax.set_xticks([pos[v] for v in xs], [f"{pos[v]:g}" for v in xs], fontsize=8)
            else:
                ax.set_xticks(range(len(xs)), xs, rotation=15, fontsize=7)
            ax.legend(fontsize=7)
        if fig.normalise or fig.metric in DERIVED_METRICS:
            ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
        ax.set_yscale(fig.yscale)
        ax.set_xlabel(x_label(fig.x), fontsize=8)
        ax.set_title(_panel_title(panel, part), fontsize=7)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax in axes.flat[: len(panels)]:
        ax.set_ylabel(y_label(fig), fontsize=9)
    spread = "error bars" if fig.x == POLICY_AXIS else "bands"
    pooled = f"; pooled over {', '.join(fig.average)}" if fig.average else ""
    out.suptitle(
        f"{fig.title}\npoints: mean of n runs (n written by each point{pooled}); {spread}: "
        f"{CONFIDENCE:.0%} Student-t CI of the mean, clipped to the metric's range",
        fontsize=8,
    )
    out.tight_layout()
    return out


def draw(table: pd.DataFrame, fig: FigureConfig, path: Path) -> Path:
    """Draw one figure from its table as ``path`` (PNG, ``DPI``) and the same name in every other of
    ``FORMATS``; returns the PNG's path."""
    drawn = figure(table, fig)
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in FORMATS:
        drawn.savefig(path.with_suffix(suffix), dpi=DPI)
    plt.close(drawn)
    return path


def formats(png: Path) -> list[Path]:
    """Every file :func:`draw` wrote for ``png``."""
    return [png.with_suffix(s) for s in FORMATS]


def utility_vs_axis(runs: pd.DataFrame, axes: list[str], path: Path, metric: str = "total_utility") -> Path:
    """The sweep's default plot: ``metric`` against the first grid axis, one line per policy, one panel per
    value of the other axes; with no grid, one bar per policy."""
    title = str(runs["sweep_id"].iloc[0]) if "sweep_id" in runs and len(runs) else metric
    fig = FigureConfig(name=path.stem, title=title, x=axes[0] if axes else POLICY_AXIS, metric=metric)
    return draw(figure_table(runs, fig, axes), fig, path)
