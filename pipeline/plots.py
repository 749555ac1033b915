"""Per-sweep plots (PNG). Kept separate so ``pdors report`` can grow the paper's figures from here."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")   # files only; no display on workers or CI
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from .summary import axis_label  # noqa: E402


def utility_vs_axis(runs: pd.DataFrame, axes: list[str], path: Path, metric: str = "total_utility") -> Path:
    """``metric`` against the first grid axis, one line per policy: mean over seeds and the other axes, with
    the standard deviation as error bars. Policies without that axis (e.g. another policy's parameter) are
    drawn as a flat line at their overall mean. With no grid: one bar per policy."""
    ok = runs[runs["status"] == "ok"]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    if axes:
        axis = axes[0]
        labels = ok[axis].map(axis_label)
        values = [v for v in dict.fromkeys(labels) if v != "-"]
        numeric = all(_is_number(v) for v in values)
        xs = sorted(values, key=float) if numeric else values
        pos = {v: (float(v) if numeric else k) for k, v in enumerate(xs)}
        for policy, g in ok.assign(_x=labels).groupby("policy", sort=False):
            if (g["_x"] == "-").all():
                ax.axhline(g[metric].mean(), linestyle="--", linewidth=1, label=policy)
                continue
            stats = g.groupby("_x")[metric].agg(["mean", "std"]).reindex(xs).dropna(how="all")
            ax.errorbar([pos[x] for x in stats.index], stats["mean"], yerr=stats["std"].fillna(0),
                        marker="o", capsize=3, label=policy)
        if not numeric:
            ax.set_xticks(range(len(xs)), xs, rotation=20, fontsize=8)
        ax.set_xlabel(axis)
    else:
        stats = ok.groupby("policy", sort=False)[metric].agg(["mean", "std"])
        ax.bar(stats.index, stats["mean"], yerr=stats["std"].fillna(0), capsize=3)
    ax.set_ylabel(f"{metric} (mean ± std over seeds)")
    ax.set_title(f"{runs['sweep_id'].iloc[0] if 'sweep_id' in runs and len(runs) else ''}", fontsize=9)
    if axes:
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
