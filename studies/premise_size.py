"""Where PD-ORS's competitive-ratio premise holds: Definition 1's share against job size per machine capacity.

    pdors study premise --out DIR [--seeds N]

Grid (fixed before the study): the machine capacity ``workload.capacity_factor`` (C_h^r = factor x the midpoint of
each worker-demand range; the generator's default 18) in 18, 90, 450, 2250, 11250, the job size
``workload.workload_scale`` (the factor on K_i) in 0.1 (calibrated) and 1 (Section V literally), and H in 2 and 10,
at I = 30, T = 40, seeds 1..N. Per instance PD-ORS runs once (default parameters); ``pdors.premise`` replays its
admissions and the certified dual bound gives its upper ratio bound / ALG. Writes ``premise_size.csv`` (a row per run),
``premise_size.md`` (medians per grid point) and ``premise_size.{png,pdf}`` (left: premise share and the largest
per-slot share of a machine's capacity one job takes; right: PD-ORS's certified upper ratio and Theorems 5-6's
bound, log scale).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from pdors.markdown import number, table

CAPACITY_FACTORS = (18.0, 90.0, 450.0, 2250.0, 11250.0)
WORKLOAD_SCALES = (0.1, 1.0)
MACHINES = (2, 10)
SIZE = {"jobs": 30, "slots": 40}


@dataclass(frozen=True, kw_only=True)
class Point:
    machines: int
    capacity_factor: float
    workload_scale: float
    seed: int
    utility: float
    dual_bound: float
    upper_ratio: float | None  # dual bound / ALG (None: ALG = 0)
    admitted: int
    premise_share: float | None
    worst_margin: float | None
    cell_share_max: float | None
    cell_share_median: float | None
    competitive_bound: float | None
    theorem_violated: bool


def measure(machines: int, capacity_factor: float, workload_scale: float, seed: int) -> Point:
    from offline_opt.certified import certify
    from offline_opt.theorem import upper_ratio
    from pdors.premise import theorem_violation
    from pdors.run import run

    workload = {"capacity_factor": capacity_factor, "workload_scale": workload_scale}
    r = run({"policy": "pdors", "machines": machines, **SIZE, "seed": seed, "workload": workload})
    c = certify(r.instance, {"pdors": r.validation.total_utility} if r.validation.ok else {})
    upper = upper_ratio(c, "pdors")
    p = r.summary.premise
    return Point(
        machines=machines,
        capacity_factor=capacity_factor,
        workload_scale=workload_scale,
        seed=seed,
        utility=r.validation.total_utility,
        dual_bound=c.bound.bound,
        upper_ratio=upper,
        admitted=r.summary.admitted,
        premise_share=p.premise_share,
        worst_margin=p.worst_margin,
        cell_share_max=p.cell_share_max,
        cell_share_median=p.cell_share_median,
        competitive_bound=p.competitive_bound,
        theorem_violated=theorem_violation(p, upper) is not None,
    )


def medians(points: pd.DataFrame) -> pd.DataFrame:
    cols = ["premise_share", "cell_share_max", "cell_share_median", "upper_ratio", "competitive_bound", "admitted"]
    g = points.groupby(["machines", "workload_scale", "capacity_factor"])
    out = g[cols].median()
    out["theorem_violations"] = g["theorem_violated"].sum()
    out["runs"] = g.size()
    return out.reset_index()


def markdown(points: pd.DataFrame) -> str:
    m = medians(points)
    records: list[Any] = list(m.itertuples())  # Any: pandas' stubs type the fields of a row too loosely
    rows = [
        [
            str(r.machines),
            number(r.workload_scale, "g"),
            number(r.capacity_factor, "g"),
            str(int(r.runs)),
            number(r.admitted, "g"),
            number(r.premise_share, ".2f"),
            f"{r.cell_share_max:.3f} / {r.cell_share_median:.3f}",
            number(r.upper_ratio, ".3f"),
            number(r.competitive_bound, ".1f"),
            str(int(r.theorem_violations)),
        ]
        for r in records
    ]
    head = [
        "H",
        "workload_scale",
        "capacity_factor",
        "runs",
        "admitted (median)",
        "premise share (median)",
        "job cell share max / median (medians)",
        "bound / ALG (median)",
        "theorem bound (median)",
        "theorem violations",
    ]
    return table(head, rows) + "\n"


def plot(points: pd.DataFrame, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m = medians(points)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, 5.6))
    for k, ((machines, scale), part) in enumerate(m.groupby(["machines", "workload_scale"])):
        colour, what = f"C{k}", f"H {machines}, scale {scale:g}"
        left.plot(part["capacity_factor"], part["premise_share"], "o-", color=colour, label=f"premise share, {what}")
        left.plot(
            part["capacity_factor"], part["cell_share_max"], "x--", color=colour, label=f"max job cell share, {what}"
        )
        right.plot(
            part["capacity_factor"], part["upper_ratio"], "o-", color=colour, label=f"PD-ORS bound / ALG, {what}"
        )
        right.plot(
            part["capacity_factor"], part["competitive_bound"], "s:", color=colour, label=f"Theorems 5-6 bound, {what}"
        )
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xlabel("machine capacity / mean worker demand (capacity_factor)")
    left.set_ylim(-0.05, 1.05)
    left.set_ylabel("share (median over seeds)")
    left.set_title("Definition 1: share of admissions where it holds", fontsize=9)
    right.set_yscale("log")
    right.set_ylabel("OPT / ALG upper end; bound (median)")
    right.set_title("PD-ORS's certified ratio against the theorem's bound", fontsize=9)
    for ax in (left, right):  # below the axes: the curves fill the panels
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)
    fig.suptitle(f"PD-ORS, I = {SIZE['jobs']}, T = {SIZE['slots']}; medians over seeds", fontsize=9)
    fig.tight_layout()
    paths = [out / "premise_size.png", out / "premise_size.pdf"]
    for p in paths:
        fig.savefig(p, dpi=120)
    plt.close(fig)
    return paths


def run(out: Path, seeds: int = 2) -> pd.DataFrame:
    """The whole grid; writes the CSV, the Markdown table and the figure into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    points = pd.DataFrame(
        [
            asdict(measure(h, f, s, seed))
            for h in MACHINES
            for s in WORKLOAD_SCALES
            for f in CAPACITY_FACTORS
            for seed in range(1, seeds + 1)
        ]
    )
    points.to_csv(out / "premise_size.csv", index=False)
    (out / "premise_size.md").write_text(markdown(points))
    plot(points, out)
    return points
