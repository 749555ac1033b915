"""Sweep figures: confidence bands stay inside the metric's domain, points say how many runs they average, one
panel per value of every other grid axis, PNG and PDF written."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from matplotlib.collections import LineCollection, PolyCollection

from pipeline.publish import plots
from pipeline.results.summary import domain, figure_markdown, figure_table
from pipeline.spec.schema import FigureConfig


def runs_frame(utilities: dict[tuple[str, int, float], list[float]], opt: float | None = None) -> pd.DataFrame:
    """Recorded-run rows: (policy, machines, mix label) -> one utility per seed; with ``opt``, an OPT row per
    instance (seed, machines, mix)."""
    rows = []
    for (policy, machines, mix), values in utilities.items():
        for seed, value in enumerate(values, 1):
            instance = f"{machines}-{mix}-{seed}"
            rows.append(
                {
                    "run_id": f"{policy}-{instance}",
                    "kind": "sim",
                    "status": "ok",
                    "policy": policy,
                    "instance_id": instance,
                    "seed": seed,
                    "machines": machines,
                    "workload.mix": mix,
                    "total_utility": value,
                    "opt.result": None,
                }
            )
            if opt is not None and policy == "pdors":
                rows.append(
                    {
                        "run_id": f"opt-{instance}",
                        "kind": "opt",
                        "status": "ok",
                        "policy": "opt",
                        "instance_id": instance,
                        "seed": seed,
                        "machines": machines,
                        "workload.mix": mix,
                        "total_utility": opt,
                        "opt.result": None,
                    }
                )
    return pd.DataFrame(rows)


SKEWED = {("pdors", m, x): [0.0, 0.0, 9.0] if m == 4 else [3.0, 4.0, 5.0] for m in (4, 6) for x in (0.1, 0.5)} | {
    ("fifo", m, x): [1.0, 1.0, 7.0] for m in (4, 6) for x in (0.1, 0.5)
}


def band_lows(drawn) -> list[float]:
    """The lowest y of every confidence band (fill_between) and error bar in a drawn figure."""
    lows = []
    for ax in drawn.axes:
        for c in ax.collections:
            if isinstance(c, PolyCollection):
                lows += [min(p.vertices[:, 1]) for p in c.get_paths() if len(p.vertices)]
            elif isinstance(c, LineCollection):
                lows += [min(seg[:, 1]) for seg in c.get_segments()]
    return lows


@pytest.mark.parametrize(
    "metric, x, opt",
    [("total_utility", "machines", None), ("ratio", "machines", 9.0), ("total_utility", "policy", None)],
)
def test_bands_stay_in_the_metric_domain_and_both_formats_are_written(metric, x, opt, tmp_path):
    fig = FigureConfig(name="f", title="t", x=x, metric=metric)
    table = figure_table(runs_frame(SKEWED, opt), fig, ["machines", "workload.mix"])
    lower, _ = domain(fig)
    mean, half = table["mean"], table["std"] * 4.303 / math.sqrt(3)  # t(0.975, 2): the unclipped interval
    assert ((mean - half) < lower).any(), "the data must push an unclipped interval out of the domain"
    assert (table["ci_low"].dropna() >= lower).all() and table["ci_low"].notna().any()
    assert set(table["n"]) == ({1, 3} if metric == "ratio" else {3})  # ALG = 0 has no ratio
    drawn = plots.figure(table, fig)
    lows = band_lows(drawn)
    assert lows and min(lows) >= lower - 1e-9
    panels = [ax for ax in drawn.axes if ax.get_visible()]
    expected = (
        [f"machines={m}, workload.mix={v}" for m in (4, 6) for v in (0.1, 0.5)]
        if x == "policy"
        else ["workload.mix=0.1", "workload.mix=0.5"]
    )
    assert [ax.get_title() for ax in panels] == [plots.panel_words(p) for p in expected]  # in words
    for ax, panel in zip(panels, expected, strict=True):  # every point labelled with its number of runs
        assert sorted(t.get_text().removeprefix("n=") for t in ax.texts) == sorted(
            str(n) for n in table.loc[table["panel"] == panel, "n"]
        )
    png = plots.draw(table, fig, tmp_path / "f.png")
    assert png.read_bytes()[:4] == b"\x89PNG" and (tmp_path / "f.pdf").read_bytes()[:5] == b"%PDF-"


def test_averaging_only_when_asked_and_colours_fixed_per_policy():
    panelled = figure_table(
        runs_frame(SKEWED), FigureConfig(name="f", title="t", x="machines"), ["machines", "workload.mix"]
    )
    pooled = figure_table(
        runs_frame(SKEWED),
        FigureConfig(name="f", title="t", x="machines", average=["workload.mix"]),
        ["machines", "workload.mix"],
    )
    assert set(panelled["n"]) == {3} and set(panelled["panel"]) == {"workload.mix=0.1", "workload.mix=0.5"}
    assert set(pooled["n"]) == {6} and set(pooled["panel"]) == {""}
    assert plots.policy_style("pdors") == ("C3", "D") and plots.policy_style("new") == plots.policy_style("new")


def test_each_point_and_panel_quotes_its_offered_load():
    runs = runs_frame(SKEWED)
    runs["offered_load.internal"] = runs["machines"].map({4: 0.9, 6: 0.6}) * runs["workload.mix"].map({0.1: 1, 0.5: 2})
    fig = FigureConfig(name="f", title="t", x="machines")
    table = figure_table(runs, fig, ["machines", "workload.mix"])
    assert table.set_index(["panel", "policy", "x"])["offered_load"].to_dict()[
        ("workload.mix=0.5", "fifo", "4")
    ] == pytest.approx(1.8)
    titles = [ax.get_title() for ax in plots.figure(table, fig).axes if ax.get_visible()]
    assert titles == ["mix 0.1, offered load 0.6-0.9", "mix 0.5, offered load 1.2-1.8"]
    assert "| 1.8 |" in figure_markdown(table, "machines")
    assert "| panel | policy | n |" in figure_markdown(table.assign(x=table["policy"]), "policy")


def test_rounding_rejects_is_a_count_metric_aggregated_and_tabled():
    """PD-ORS's ``policy_stats.rounding_rejects`` (jobs discarded by the paper's Section V rule): a count, so its
    bands stay >= 0, aggregated per point like a run metric and a column of the sweep's summary table; other
    policies have none ('-')."""
    import json

    from pipeline.results.summary import COUNT_METRICS, aggregate, markdown
    from pipeline.spec.columns import METRICS

    frame = runs_frame(SKEWED)
    rejects = frame["total_utility"].astype(int)  # pdors: 0, 0, 9 on machines = 4
    frame["policy_stats"] = [
        json.dumps({"rounding_rejects": int(r)}) if p == "pdors" else "{}"
        for p, r in zip(frame["policy"], rejects, strict=False)
    ]
    frame["point_id"] = frame["policy"] + "-" + frame["machines"].astype(str) + "-" + frame["workload.mix"].astype(str)
    frame = frame.reindex(columns=[*frame.columns, *(m for m, _ in METRICS if m not in frame)])
    fig = FigureConfig(name="f", title="t", x="machines", metric="policy_stats.rounding_rejects")
    assert "policy_stats.rounding_rejects" in COUNT_METRICS and domain(fig) == (0.0, math.inf)
    table = figure_table(frame, fig, ["machines", "workload.mix"])
    assert set(table["policy"]) == {"pdors"} and (table["ci_low"] >= 0).all()
    assert ((table["mean"] - table["std"] * 4.303 / math.sqrt(3)) < 0).any()  # clipping was needed
    agg = aggregate(frame, ["machines", "workload.mix"])
    means = agg.set_index(["policy", "machines"])["policy_stats.rounding_rejects.mean"]
    assert means["pdors", "4"].tolist() == [3.0, 3.0] and means["pdors", "6"].tolist() == [4.0, 4.0]
    assert means["fifo"].isna().all()
    rows = [
        [c.strip() for c in line.strip("|").split("|")]
        for line in markdown(agg, ["machines", "workload.mix"]).splitlines()
    ]
    column = rows[0].index("rounding rejects")
    assert {r[column] for r in rows[2:] if r[0] == "fifo"} == {"-"} and {r[column] for r in rows[2:]} > {"-"}
