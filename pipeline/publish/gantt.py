"""One run's schedule as a Gantt-style figure: machines (rows) over slots (columns). Each job in a cell gets an
equal share of the machine's row in its own colour, labelled ``i: w/s`` (job, workers w_ih[t], PSs s_ih[t]);
hatched where the job ran at the external rate that slot (its workers and PSs on more than one machine)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.patches import Patch

DPI = 300
FORMATS = (".png", ".pdf")
LEGEND_JOBS = 20  # jobs named in the legend (colours repeat after tab20's 20)


def draw(cells: pd.DataFrame, machines: int, slots: int, title: str, path: Path) -> Path:
    """``cells``: one row per (job, machine, slot) with ``workers``, ``servers``, ``internal`` (the columns of
    :mod:`pdors.schedule_io`). Writes ``path`` (PNG) and a PDF beside it; returns ``path``."""
    with plt.rc_context({"hatch.linewidth": 0.4, "hatch.color": "0.35"}):  # hatching must not hide labels
        return _draw(cells, machines, slots, title, path)


def _draw(cells: pd.DataFrame, machines: int, slots: int, title: str, path: Path) -> Path:
    colours = plt.get_cmap("tab20")
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * slots + 2), max(3.0, 0.4 * machines + 1.5)))
    for key, cell in cells.sort_values("job").groupby(["machine", "slot"]):
        machine, slot = cast(tuple[int, int], key)
        share = 0.9 / len(cell)
        rows: Iterable[Any] = cell.itertuples()  # pandas types a row's fields as any cell value
        for k, row in enumerate(rows):
            bottom = machine - 0.45 + k * share
            ax.bar(
                slot,
                share,
                bottom=bottom,
                width=0.95,
                color=colours(row.job % 20),
                edgecolor="0.35",
                linewidth=0.3,
                hatch=None if row.internal else "///",
            )
            if share >= 0.3:
                ax.text(
                    slot,
                    bottom + share / 2,
                    f"{row.job}: {row.workers}/{row.servers}",
                    ha="center",
                    va="center",
                    fontsize=5,
                )
    ax.set_xlim(-0.5, slots - 0.5)
    ax.set_ylim(-0.5, machines - 0.5)
    ax.set_xticks(range(slots))
    ax.set_yticks(range(machines))
    ax.tick_params(labelsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("Slot t")
    ax.set_ylabel("Machine h")
    jobs = sorted(cells["job"].unique())[:LEGEND_JOBS]
    handles = [Patch(color=colours(j % 20), label=f"job {j}") for j in jobs]
    handles.append(Patch(facecolor="white", edgecolor="black", hatch="///", label="external rate"))
    ax.legend(handles=handles, fontsize=5, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    ax.set_title(
        f"{title}\nlabel: job: workers/PSs; hatched: the job's placement spans machines (external rate)", fontsize=7
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in FORMATS:
        fig.savefig(path.with_suffix(suffix), dpi=DPI)
    plt.close(fig)
    return path
