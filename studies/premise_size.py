"""Where PD-ORS's competitive-ratio premise holds: Definition 1 against job size at a fixed offered load.

    pdors study premise --out DIR [--seeds N]

Grid (a rule fixed before the study): jobs shrink against machines while the offered load stays where it is, so
contention stays. The base is the paper's calibrated regime (the generator's defaults: ``capacity_factor`` 18,
``workload_scale`` 0.1) at H = 2, T = 80 with I = 7 jobs: 7 / (H T) = 0.044 jobs per machine-slot, Fig. 9's
100 / (30 x 80) = 0.042. Each step multiplies the machine capacity by 5 and the number of jobs with it (the
offered load, demand over capacity x slots, is unchanged in expectation): capacity factor 18 x 5^k and I = 7 x 5^k,
k = 0..4 (I = 7 .. 4,375). Two loads: ``workload_scale`` 0.1 (calibrated) and 0.4 (4x the samples per job, where
PD-ORS is 1.9-3.8x from OPT at Fig. 9's size). Seeds 1..N. Then the paper's own sizes at the generator's capacity
(Fig. 6: H = 10, I = 50, T = 20; Fig. 9: H = 30, I = 100, T = 80; H = I = 100, T = 80), same seeds: how often
the premise holds in the paper's regime.

Per instance PD-ORS runs once (default parameters); ``pdors.premise`` replays its admissions, and the certified
interval [OPT_lower / ALG, bound / ALG] (dual bound and primal schedule, ``offline_opt.certified``) sits beside
it. Writes ``premise_size.csv`` (a row per run), ``premise_size.md`` (per grid point: admissions where Definition 1
holds over all admissions, pooled over seeds; the certified interval; Theorems 5-6's bound) and
``premise_size.{png,pdf}``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from pdors.markdown import number, table

STEPS = 5  # k = 0..4: capacity and jobs x 5^k
BASE = {"machines": 2, "jobs": 7, "slots": 80, "capacity_factor": 18.0}
SCALES = (0.1, 0.4)
PAPER_SIZES = ((10, 50, 20), (30, 100, 80), (100, 100, 80))  # Fig. 6, Fig. 9, H = I = 100 (H, I, T)


@dataclass(frozen=True, kw_only=True)
class Point:
    part: str  # "scaling" (fixed load, jobs shrinking) or "paper" (the paper's sizes at the generator's capacity)
    step: int  # capacity and jobs are 5^step x the base (0 for the paper's sizes)
    machines: int
    jobs: int
    slots: int
    capacity_factor: float
    workload_scale: float
    seed: int
    offered_load: float  # internal rate, dominant resource (pdors.load)
    utility: float
    dual_bound: float
    opt_lower: float
    ratio_low: float | None  # OPT_lower / ALG (None: ALG = 0)
    upper_ratio: float | None  # dual bound / ALG (None: ALG = 0)
    admitted: int
    premise_held: int  # admissions on which Definition 1 holds on every cell
    premise_share: float | None
    worst_margin: float | None
    cell_share_max: float | None
    cell_share_median: float | None
    competitive_bound: float | None
    theorem_violated: bool


def grid(seeds: int) -> list[dict[str, Any]]:
    """Every run of the study, in order: the fixed-load scaling, then the paper's sizes."""
    out = [
        {
            "part": "scaling",
            "step": k,
            "machines": BASE["machines"],
            "jobs": int(BASE["jobs"]) * 5**k,
            "slots": BASE["slots"],
            "capacity_factor": BASE["capacity_factor"] * 5**k,
            "workload_scale": scale,
            "seed": seed,
        }
        for scale in SCALES
        for k in range(STEPS)
        for seed in range(1, seeds + 1)
    ]
    out += [
        {
            "part": "paper",
            "step": 0,
            "machines": h,
            "jobs": i,
            "slots": t,
            "capacity_factor": BASE["capacity_factor"],
            "workload_scale": SCALES[0],
            "seed": seed,
        }
        for h, i, t in PAPER_SIZES
        for seed in range(1, seeds + 1)
    ]
    return out


def measure(
    *,
    part: str,
    step: int,
    machines: int,
    jobs: int,
    slots: int,
    capacity_factor: float,
    workload_scale: float,
    seed: int,
) -> Point:
    from offline_opt.certified import certify
    from offline_opt.theorem import upper_ratio
    from pdors.premise import theorem_violation
    from pdors.run import run

    workload = {"capacity_factor": capacity_factor, "workload_scale": workload_scale}
    r = run({"policy": "pdors", "machines": machines, "jobs": jobs, "slots": slots, "seed": seed, "workload": workload})
    alg = r.validation.total_utility
    c = certify(r.instance, {"pdors": alg} if r.validation.ok else {})
    upper = upper_ratio(c, "pdors")
    p = r.summary.premise
    admitted = r.summary.admitted
    return Point(
        part=part,
        step=step,
        machines=machines,
        jobs=jobs,
        slots=slots,
        capacity_factor=capacity_factor,
        workload_scale=workload_scale,
        seed=seed,
        offered_load=r.summary.offered_load["internal"],
        utility=alg,
        dual_bound=c.bound.bound,
        opt_lower=c.opt_lower,
        ratio_low=c.opt_lower / alg if alg > 0 else None,
        upper_ratio=upper,
        admitted=admitted,
        premise_held=round((p.premise_share or 0.0) * (p.admissions or 0)),
        premise_share=p.premise_share,
        worst_margin=p.worst_margin,
        cell_share_max=p.cell_share_max,
        cell_share_median=p.cell_share_median,
        competitive_bound=p.competitive_bound,
        theorem_violated=theorem_violation(p, upper) is not None,
    )


KEYS = ["part", "workload_scale", "step", "machines", "jobs", "slots", "capacity_factor"]


def summary(points: pd.DataFrame) -> pd.DataFrame:
    """Per grid point: the pooled premise share (admissions where it holds / all admissions), the runs where it
    holds on every admission, medians of the job's largest cell share and the certified interval, the largest upper
    ratio, the bound's range, violations."""
    g = points.groupby(KEYS, sort=False)
    out = g.agg(
        runs=("seed", "size"),
        load=("offered_load", "median"),
        admitted=("admitted", "sum"),
        held=("premise_held", "sum"),
        cell_share_max=("cell_share_max", "median"),
        ratio_low=("ratio_low", "median"),
        ratio_high=("upper_ratio", "median"),
        ratio_high_max=("upper_ratio", "max"),
        bound_min=("competitive_bound", "min"),
        bound_max=("competitive_bound", "max"),
        theorem_violations=("theorem_violated", "sum"),
        runs_holding=("premise_share", lambda x: int((x >= 1.0).sum())),  # the runs the theorem check covers
    )
    out["share"] = out["held"] / out["admitted"].where(out["admitted"] > 0)
    return out.reset_index()


def markdown(points: pd.DataFrame) -> str:
    s = summary(points)
    records: list[Any] = list(s.itertuples())  # Any: pandas' stubs type the fields of a row too loosely
    rows = [
        [
            "fixed load" if r.part == "scaling" else "paper's sizes",
            number(r.workload_scale, "g"),
            f"{5**r.step}x" if r.part == "scaling" else "1x",
            f"{r.machines} / {r.jobs} / {r.slots}",
            str(int(r.runs)),
            number(r.load, ".2f"),
            f"{int(r.held)} / {int(r.admitted)}",
            number(r.share, ".3f"),
            str(int(r.runs_holding)),
            number(r.cell_share_max, ".3f"),
            f"[{number(r.ratio_low, '.3f')}, {number(r.ratio_high, '.3f')}]",
            number(r.ratio_high_max, ".3f"),
            f"{number(r.bound_min, '.0f')}-{number(r.bound_max, '.0f')}",
            str(int(r.theorem_violations)),
        ]
        for r in records
    ]
    head = [
        "part",
        "workload_scale",
        "capacity and jobs",
        "H / I / T",
        "runs",
        "offered load (median)",
        "admissions where Definition 1 holds",
        "share",
        "runs where it holds on all",
        "a job's largest cell share (median)",
        "certified OPT / ALG (medians)",
        "bound / ALG (max)",
        "theorem bound",
        "theorem violations",
    ]
    return table(head, rows) + "\n"


def plot(points: pd.DataFrame, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pipeline.publish.plots import DPI, FORMATS

    s = summary(points)
    scaling = s[s["part"] == "scaling"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12.0, 5.3))  # 3,600 px wide, as every figure
    for k, scale in enumerate(SCALES):
        part, colour = scaling[scaling["workload_scale"] == scale], f"C{k}"
        what = f"offered load {part['load'].median():.2f} (samples x{scale / SCALES[0]:g})"
        x = 5.0 ** part["step"]
        left.plot(x, part["share"], "o-", color=colour, label=f"admissions where it holds, {what}")
        left.plot(x, part["cell_share_max"], "x--", color=colour, label=f"a job's largest share of a machine, {what}")
        lo, hi = part["ratio_low"], part["ratio_high"]
        right.errorbar(
            x,
            (lo + hi) / 2,
            yerr=[(hi - lo) / 2, (hi - lo) / 2],
            fmt="o-",
            color=colour,
            capsize=3,
            label=f"PD-ORS, certified interval, {what}",
        )
        right.plot(x, part["bound_max"], "s:", color=colour, label=f"Theorems 5-6's bound, {what}")
    ticks = [5.0**k for k in range(STEPS)]
    labels = [f"{5**k}x\nI = {int(BASE['jobs']) * 5**k}" for k in range(STEPS)]
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xticks(ticks, labels, fontsize=8)
        ax.minorticks_off()
        ax.set_xlabel("machine capacity and number of jobs I, x the calibrated regime's")
        ax.grid(True, alpha=0.3)
        # Below the panel: inside, the legend covered the point where the two shares cross.
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=1, frameon=False)
    left.set_ylim(-0.05, 1.05)
    left.set_ylabel("share of admissions / of a machine")
    left.set_title("Definition 1 (Theorems 5-6's premise), pooled over seeds", fontsize=9)
    right.set_yscale("log")
    right.set_ylabel("OPT / ALG (log scale)")
    right.set_title("PD-ORS's certified OPT / ALG (medians) and the theorem's bound", fontsize=9)
    seeds = int(points["seed"].max())
    fig.suptitle(
        f"Jobs shrinking against machines at a fixed offered load (H = 2, T = 80; PD-ORS, seeds 1-{seeds})", fontsize=10
    )
    fig.tight_layout()
    paths = [out / f"premise_size{suffix}" for suffix in FORMATS]
    for p in paths:
        fig.savefig(p, dpi=DPI)
    plt.close(fig)
    return paths


def run(out: Path, seeds: int = 3) -> pd.DataFrame:
    """The whole grid; writes the CSV, the Markdown table and the figure into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    points = pd.DataFrame([asdict(measure(**spec)) for spec in grid(seeds)])
    points.to_csv(out / "premise_size.csv", index=False)
    (out / "premise_size.md").write_text(markdown(points))
    plot(points, out)
    return points
