"""Figures in the paper's style, PNG at 300 dpi and PDF: one series per policy (the same colour and marker in
every figure), the mean over the runs behind each point (their number written next to it) with a 95% Student-t
confidence interval on that mean, clipped to the metric's domain, as a band (lines) or error bars (bars);
one panel per value of every other grid axis unless the figure averages over it. Data come from
:func:`pipeline.results.summary.figure_table`."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import matplotlib

matplotlib.use("Agg")  # files only; no display on workers or CI
import zlib

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pdors import atomic
from pipeline.results.summary import CONFIDENCE, figure_table
from pipeline.spec.columns import DERIVED_METRICS
from pipeline.spec.schema import POLICY_AXIS, FigureConfig
from pipeline.text.names import layout, own_axes, panel_words, policy_name

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
# Paired ratios below this are drawn at it and counted in the panel title: a sigmoid utility can make one ratio
# 1e-140, and a log axis down to it flattens every other point of every panel onto the line at 1.
RATIO_FLOOR = 1e-3
AXIS_LABELS = {
    "machines": "Number of machines (H)",
    "jobs": "Number of jobs (I)",
    "slots": "Horizon T (slots)",
    "workload.bandwidth_ratio": "Internal / external bandwidth ratio $b^{(i)}/b^{(e)}$",
    "workload.mix": "Mix (insensitive, sensitive, critical)",
    "pdors.rounding.gain": r"Pre-rounding gain factor $G_\delta$",
    "workload.workload_scale": "Workload scale (factor on $K_i$)",
    "workload.thesis_ps_rule": "Thesis PS rule",
    POLICY_AXIS: "Policy",
}
METRIC_LABELS = {
    "total_utility": "Total utility",
    "median_training_time": "Median training time (slots)",
    "ratio": "Competitive ratio OPT / ALG",
    "ratio_bound": "OPT upper bound / ALG (a bound)",
    "ratio_low": "best known schedule / ALG (a lower bound on OPT / ALG)",
    "completed": "Completed jobs",
    "admitted": "Admitted jobs",
    "policy_stats.rounding_attempts_mean": "Rounding attempts per external solve",
    "policy_stats.lp_vs_rounded_ratio": "Rounded cost / LP cost (approximation ratio)",
    "policy_stats.rounded_vs_integer_ratio": "Rounded cost / integer optimum cost",
    "policy_stats.rounding_attempts_roundable_mean": "Rounding attempts per roundable solve",
    "policy_stats.unroundable_share": "Share of external solves with no feasible rounding",
    "policy_stats.rounding_rejects": "Jobs discarded for a failed rounding",
    "policy_stats.infeasible_solves": "External solves with no feasible rounding",
}


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


def _label_counts(ax: Axes, xs: pd.Series, ys: pd.Series, ns: pd.Series, color: str) -> None:
    for x, y, n in zip(xs, ys, ns, strict=False):
        ax.annotate(f"{int(n)}", (x, y), textcoords="offset points", xytext=(3, 3), fontsize=6, color=color)


def _bars(ax: Axes, table: pd.DataFrame) -> None:
    low = (table["mean"] - table["ci_low"]).fillna(0).clip(lower=0)
    high = (table["ci_high"] - table["mean"]).fillna(0).clip(lower=0)
    colors = [policy_style(p)[0] for p in table["policy"]]
    names = [policy_name(p) for p in table["x"]]
    ax.bar(names, table["mean"], yerr=[low, high], capsize=4, color=colors)
    for k, (y, n) in enumerate(zip(table["mean"], table["n"], strict=False)):
        ax.annotate(f"n={int(n)}", (k, y), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=6)
    ax.tick_params(axis="x", labelsize=8)


def _lines(ax: Axes, table: pd.DataFrame, xs: list[str], pos: dict[str, float | int | None]) -> None:
    for key, g in table.groupby("policy", sort=False):
        policy = str(key)
        color, marker = policy_style(policy)
        if (g["x"] == "-").all():  # the axis is another policy's parameter: this policy is flat
            ax.axhline(g["mean"].mean(), color=color, linestyle="--", linewidth=1.2, label=policy_name(policy))
            continue
        g = g[g["x"] != "-"].assign(pos=lambda d: d["x"].map(pos)).sort_values("pos")
        ax.plot(g["pos"], g["mean"], color=color, marker=marker, label=policy_name(policy))
        ax.fill_between(g["pos"], g["ci_low"], g["ci_high"], color=color, alpha=0.15, linewidth=0)
        if "censored" in g:  # a median that is T because at most half the jobs finished: a lower bound
            hit = g[g["censored"] > 0]
            ax.scatter(hit["pos"], hit["mean"], s=90, facecolors="none", edgecolors="black", linewidths=1, zorder=3)
        _label_counts(ax, g["pos"], g["mean"], g["n"], color)


def _panel_title(panel: str, part: pd.DataFrame) -> str:
    """The panel's setting in words and the range of its points' mean offered load (the regime it shows)."""
    words = panel_words(panel)
    load = part["offered_load"].dropna() if "offered_load" in part else pd.Series(dtype=float)
    if load.empty:
        return words
    span = f"{load.min():.2g}" if f"{load.min():.2g}" == f"{load.max():.2g}" else f"{load.min():.2g}-{load.max():.2g}"
    return f"{words}{', ' if words else ''}offered load {span}"


def _legend_outside(out: Figure, axes: np.ndarray) -> None:
    """One legend for the figure, right of the panels (never over data); each policy once."""
    entries: dict[str, Artist] = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    if entries:
        out.legend(list(entries.values()), list(entries), loc="outside right upper", fontsize=7)


def _grid(panels: list[str], sharey: bool | Literal["row"]) -> tuple[Figure, np.ndarray]:
    """A constrained figure with ``layout(panels)`` panels of PANEL_SIZE, room on the right for the legend."""
    rows, cols = layout(panels)
    return plt.subplots(
        rows,
        cols,
        figsize=(PANEL_SIZE[0] * cols + 1.2, PANEL_SIZE[1] * rows),
        squeeze=False,
        sharey=sharey,
        layout="constrained",
    )


def figure(table: pd.DataFrame, fig: FigureConfig) -> Figure:
    """The matplotlib Figure for one figure's table (columns ``summary.FIGURE_COLUMNS``): one panel per
    value of ``panel``."""
    panels = list(dict.fromkeys(table["panel"])) or [""]
    # A y-axis per row: a row compares one regime's panels (its last setting varies along it); two regimes
    # differ several-fold in magnitude.
    out, axes = _grid(panels, sharey="row")
    xs = [v for v in dict.fromkeys(table["x"]) if v != "-"]
    numeric = bool(xs) and all(_number(v) is not None for v in xs)
    pos = {v: (_number(v) if numeric else k) for k, v in enumerate(xs)}
    order = list(dict.fromkeys(table["policy"]))  # the same legend order in every panel
    for ax, panel in zip(axes.flat, panels, strict=False):  # the grid may have cells left over (hidden below)
        part = table[table["panel"] == panel].sort_values("policy", key=lambda p: p.map(order.index), kind="stable")
        if part.empty:
            ax.text(
                0.5,
                0.5,
                "no data: every run failed, was invalid or has no value for this metric",
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
        if fig.normalise or fig.metric in DERIVED_METRICS:
            ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
        ax.set_yscale(fig.yscale)
        ax.set_xlabel(x_label(fig.x), fontsize=8)
        ax.set_title(_panel_title(panel, part), fontsize=7)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel(y_label(fig), fontsize=9)
    for ax in axes.flat[: len(panels)]:
        ax.yaxis.set_tick_params(labelleft=True)
    if fig.x != POLICY_AXIS:
        _legend_outside(out, axes)
    spread = "error bars" if fig.x == POLICY_AXIS else "bands"
    pooled = f"; pooled over {', '.join(fig.average)}" if fig.average else ""
    censored = "censored" in table and bool((table["censored"] > 0).any())
    out.suptitle(
        f"{fig.title}\npoints: mean of n runs (n written by each point{pooled}); {spread}: "
        f"{CONFIDENCE:.0%} Student-t CI of the mean, clipped to the metric's range"
        + (
            "\nringed: the median is censored at T (at most half the jobs finished) in some of the runs"
            if censored
            else ""
        ),
        fontsize=8,
    )
    return out


def draw(table: pd.DataFrame, fig: FigureConfig, path: Path) -> Path:
    """Draw one figure from its table as ``path`` (PNG, ``DPI``) and the same name in every other of
    ``FORMATS``; returns the PNG's path."""
    return save(figure(table, fig), path)


def save(drawn: Figure, path: Path) -> Path:
    """``drawn`` as ``path`` (PNG, ``DPI``) and the same name in every other of ``FORMATS``, then closed; the
    layout is solved for the first format and kept for the others (constrained layout once, not per format)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in FORMATS:
        with atomic.replacing(path.with_suffix(suffix)) as tmp:
            drawn.savefig(tmp, dpi=DPI)
        drawn.set_layout_engine("none")
    plt.close(drawn)
    return path


def formats(png: Path) -> list[Path]:
    """Every file :func:`draw` wrote for ``png``."""
    return [png.with_suffix(s) for s in FORMATS]


def utility_vs_axis(
    runs: pd.DataFrame,
    axes: list[str],
    path: Path,
    drawn: Sequence[FigureConfig] = (),
    files: Sequence[Path] = (),
    metric: str = "total_utility",
) -> Path:
    """The sweep's default plot: ``metric`` against the first grid axis, one line per policy, one panel per
    value of the other axes; with no grid, one bar per policy. Copied, not drawn again, when the same figure is
    in ``drawn`` (the report's figures, whose files are among ``files``: the report's default figure is this
    one)."""
    name = str(runs["sweep_id"].iloc[0]).rsplit("-", 1)[0] if "sweep_id" in runs and len(runs) else ""
    title = f"{name}: {METRIC_LABELS.get(metric, metric).lower()}" if name else metric  # the name, not the hash
    fig = FigureConfig(name=path.stem, title=title, x=axes[0] if axes else POLICY_AXIS, metric=metric)
    same = [p for p in files if p.name == f"{fig.name}.png"]
    if fig not in drawn or not same:
        return draw(figure_table(runs, fig, axes), fig, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for source, target in zip(formats(same[0]), formats(path), strict=True):
        with atomic.replacing(target) as tmp:
            shutil.copyfile(source, tmp)
    return path


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def _numeric(values: pd.Series) -> bool:
    """Whether every value of a grid axis reads as a number (its points then sort by value)."""
    return all(_number(str(v)) is not None for v in pd.unique(values))  # per value, not per pair


def paired_figure(pairs: pd.DataFrame, axes: list[str], reference: str, title: str, path: Path) -> Path:
    """:func:`paired_plot` as ``path`` (PNG) and every other of ``FORMATS``."""
    return save(paired_plot(pairs, axes, reference, title), path)


def paired_plot(pairs: pd.DataFrame, axes: list[str], reference: str, title: str) -> Figure:
    """Per-instance ratios value / ``reference`` (``pipeline.results.summary.pairs``; total utility) against the first
    grid axis that is not the reference's own, one panel per reading of the reference (``versus``) and value of
    the other axes: one dot per instance (policies side by side), a bar at each point's geometric mean; log
    scale shared by every panel, a line at 1 (the reference). Below 1: the reference did better. Pairs where
    either utility is 0 have no log ratio: their count is written in the panel."""
    own = own_axes(reference, axes)
    free = [a for a in axes if a not in own and a in pairs]
    # A numeric axis reads best along x (Fig. 3.11: jobs), the other settings become panels.
    x_axis = next((a for a in free if _numeric(pairs[a])), free[0] if free else POLICY_AXIS)
    others = [a for a in free if a != x_axis]
    pairs = pairs.assign(versus=pairs.get("versus", ""))
    ratios = pairs.assign(ratio=pairs["value"] / pairs["reference"])
    positive = (ratios["value"] > 0) & (ratios["reference"] > 0)
    labels = [", ".join(f"{a}={v}" for a, v in zip(others, key, strict=True)) for key in ratios[others].values]
    ratios = ratios.assign(
        panel=[
            ", ".join(p for p in (v, o) if p)
            for v, o in zip(ratios["versus"], labels or [""] * len(ratios), strict=True)
        ]
    )
    drawn = ratios[positive]
    xs = list(dict.fromkeys(drawn["policy"] if x_axis == POLICY_AXIS else drawn[x_axis]))
    if x_axis != POLICY_AXIS and _numeric(drawn[x_axis]):
        xs.sort(key=float)
    policies = list(dict.fromkeys(drawn["policy"]))
    panels = list(dict.fromkeys(drawn["panel"])) or [""]  # a panel with no log ratio is not drawn
    out, grid = _grid(panels, sharey=True)
    width = 0.8 / max(len(policies), 1)
    for ax, name in zip(grid.flat, panels, strict=False):
        part = ratios[(ratios["panel"] == name) & positive]
        zero = int(((ratios["panel"] == name) & ~positive).sum())
        below = int((part["ratio"] < RATIO_FLOOR).sum())
        for k, policy in enumerate(policies):
            color, marker = policy_style(policy)
            mine = part[part["policy"] == policy]
            if mine.empty:  # a policy with no instance paired in this panel
                continue
            x_of = mine["policy"] if x_axis == POLICY_AXIS else mine[x_axis]
            pos = x_of.map(xs.index) + (k - (len(policies) - 1) / 2) * width
            shown = mine["ratio"].clip(lower=RATIO_FLOOR)
            ax.scatter(pos, shown, color=color, marker=marker, s=12, alpha=0.6, label=policy_name(policy))
            means = mine.assign(pos=pos).groupby("pos")["ratio"].apply(lambda r: float(np.exp(np.log(r).mean())))
            bars = means.clip(lower=RATIO_FLOOR).to_numpy()
            ax.hlines(bars, means.index - width / 2, means.index + width / 2, color=color, linewidth=2)
        ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
        if part.empty:  # one policy only: nothing to pair
            ax.text(0.5, 0.5, "no paired instances", ha="center", va="center", transform=ax.transAxes, fontsize=8)
            continue
        ax.set_yscale("log")
        ax.set_xticks(range(len(xs)), [policy_name(v) if x_axis == POLICY_AXIS else v for v in xs], fontsize=7)
        ax.set_xlabel(x_label(x_axis), fontsize=8)
        words = panel_words(name)
        notes = [f"{_count(zero, 'pair')} with a zero utility not drawn"] * bool(zero)
        notes += [f"{_count(below, 'ratio')} below {RATIO_FLOOR:g} drawn at it"] * bool(below)
        ax.set_title(words + "".join(f"\n({n})" for n in notes), fontsize=7)
        ax.grid(alpha=0.3)
    for ax in grid[:, 0]:
        ax.set_ylabel(f"Total utility / {policy_name(reference)}'s (same instance)", fontsize=8)
    for ax in grid.flat[len(panels) :]:
        ax.set_visible(False)
    _legend_outside(out, grid)
    out.suptitle(
        f"{title}\npaired: one dot per instance (grid point x seed); bar: geometric mean; "
        f"below 1: {policy_name(reference)} did better",
        fontsize=8,
    )
    return out
