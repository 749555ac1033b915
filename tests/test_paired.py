"""Paired statistics (pipeline/results/paired.py) against values worked out by hand or by SciPy directly; their use on a
recorded sweep (pairing by instance, censoring columns, tables) and the self-contained HTML report."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sweep_fixtures import TINY

from pdors.config import ConfigError
from pipeline.execute.executor import execute
from pipeline.publish import plots, report
from pipeline.record import storage
from pipeline.record.storage import Store
from pipeline.results import summary
from pipeline.results.paired import WILCOXON_MIN_N, compare, interval_text, wtl
from pipeline.spec import grid, schema
from pipeline.spec.schema import FigureConfig


def test_wins_ties_losses_follow_the_metric_direction() -> None:
    reference = [10.0, 10.0, 10.0, 10.0]
    values = [5.0, 10.0 + 1e-12, 12.0, 8.0]
    up = compare(values, reference)
    assert (up.n, up.wins, up.ties, up.losses) == (4, 2, 1, 1)
    assert wtl(up) == "2/1/1"
    down = compare(values, reference, higher_is_better=False)
    assert (down.wins, down.ties, down.losses) == (1, 1, 2)


def test_difference_interval_is_student_t_on_the_pairs() -> None:
    reference = np.array([100.0, 120.0, 90.0, 110.0, 105.0])
    values = reference - np.array([10.0, 12.0, 7.0, 15.0, 9.0])
    p = compare(values, reference)
    diff = values - reference
    half = stats.t.ppf(0.975, 4) * diff.std(ddof=1) / math.sqrt(5)
    assert p.diff_mean == pytest.approx(-10.6)
    assert (p.diff_low, p.diff_high) == pytest.approx((-10.6 - half, -10.6 + half))
    assert p.diff_high < 0  # the paired interval excludes 0 although the unpaired spreads overlap
    assert p.wins == 5


def test_geometric_mean_ratio_and_its_interval_come_from_log_ratios() -> None:
    reference = [2.0, 4.0, 8.0]
    values = [1.0, 1.0, 4.0]  # ratios 0.5, 0.25, 0.5
    p = compare(values, reference)
    logs = np.log([0.5, 0.25, 0.5])
    half = stats.t.ppf(0.975, 2) * logs.std(ddof=1) / math.sqrt(3)
    assert p.ratio_gmean == pytest.approx((0.5 * 0.25 * 0.5) ** (1 / 3))
    assert (p.ratio_low, p.ratio_high) == pytest.approx((math.exp(logs.mean() - half), math.exp(logs.mean() + half)))
    assert (p.ratio_min, p.ratio_max) == (0.25, 0.5)


def test_zero_utilities_leave_the_ratio_but_count_elsewhere() -> None:
    p = compare([0.0, 3.0, 0.0], [2.0, 6.0, 0.0])
    assert p.ratio_excluded == 2
    assert p.ratio_gmean == pytest.approx(0.5)
    assert math.isnan(p.ratio_low)  # one log ratio: no interval
    assert (p.wins, p.ties, p.losses) == (2, 1, 0)
    assert p.diff_mean == pytest.approx(-5 / 3)


def test_wilcoxon_needs_enough_untied_pairs() -> None:
    reference = np.arange(1.0, 11.0)
    small = compare(reference[: WILCOXON_MIN_N - 1] * 0.9, reference[: WILCOXON_MIN_N - 1])
    assert math.isnan(small.wilcoxon_p)
    values = reference * np.array([0.9, 0.8, 1.1, 0.7, 0.85, 0.95, 0.6, 0.9, 0.75, 0.5])
    p = compare(values, reference)
    assert p.wilcoxon_p == pytest.approx(stats.wilcoxon(values - reference).pvalue)
    assert p.wilcoxon_p < 0.05


def test_nan_pairs_are_dropped_and_text_forms() -> None:
    p = compare([1.0, math.nan, 3.0], [2.0, 2.0, math.nan])
    assert p.n == 1 and math.isnan(p.diff_low)
    assert interval_text(p.diff_mean, p.diff_low, p.diff_high) == "-1"
    assert interval_text(1.0, 0.5, 1.5) == "1 [0.5, 1.5]"
    assert wtl(compare([], [])) == "-"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, list[str]]:
    """A tiny sweep with a PD-ORS parameter axis, executed and recorded; its runs with the job metrics."""
    root = tmp_path_factory.mktemp("paired")
    plan = grid.expand(schema.parse({**TINY, "instance": {"jobs": 8, "slots": 8}}))
    store = Store(root, plan.sweep_id)
    store.write([(task, execute(task)) for task in plan.tasks], "abc123")
    runs = storage.read(root).to_pandas()
    jobs = storage.read(root, "jobs", columns=report.JOB_COLUMNS).to_pandas()
    return summary.with_job_metrics(runs, jobs), plan.axes


def test_job_metrics_state_the_censoring(recorded: tuple[pd.DataFrame, list[str]]) -> None:
    runs, _ = recorded
    assert (runs["completed_share"] == runs["completed"] / runs["jobs"]).all()
    assert ((runs["median_censored"] == 1) == (runs["completed"] <= runs["jobs"] / 2)).all()
    assert (runs.loc[runs["median_censored"] == 1, "median_training_time"] == runs["slots"]).all()
    classes = runs[[f"utility.{c}" for c in summary.SENSITIVITY_CLASSES.values()]].sum(axis=1)
    assert classes.to_numpy() == pytest.approx(runs["total_utility"].to_numpy())
    done = runs["completed"] > 0
    assert runs.loc[done, "training_time_completed"].between(1, 8).all()
    assert runs.loc[~done, "training_time_completed"].isna().all()


def test_pairs_match_the_same_instance_and_skip_ambiguous_references(
    recorded: tuple[pd.DataFrame, list[str]],
) -> None:
    runs, axes = recorded
    one_gain = runs[runs["pdors.rounding.gain"].isna() | (runs["pdors.rounding.gain"] == 1.0)]
    flat = [a for a in axes if a != "pdors.rounding.gain"]
    pairs = summary.pairs(one_gain, flat, "pdors")
    fifo = one_gain[one_gain["policy"] == "fifo"]
    assert len(pairs) == len(fifo) == 4 and set(pairs["policy"]) == {"fifo"}
    pdors = one_gain[one_gain["policy"] == "pdors"].set_index("instance_id")["total_utility"]
    assert (pairs["reference"].to_numpy() == pairs["instance_id"].map(pdors).to_numpy()).all()
    agg = summary.with_paired(summary.aggregate(one_gain, flat), one_gain, flat, "pdors")
    fifo_rows = agg[agg["policy"] == "fifo"]
    assert (fifo_rows["paired.n"] == 2).all()
    assert (fifo_rows[["paired.wins", "paired.ties", "paired.losses"]].sum(axis=1) == 2).all()
    assert agg.loc[agg["policy"] == "pdors", "paired.n"].isna().all()
    table = summary.markdown(agg, flat, "pdors")
    assert "W/T/L of pdors" in table and "over pdors, geo. mean [95% CI]" in table
    # with both gains, FIFO's instance has two PD-ORS runs: each FIFO run is paired with each gain separately
    both = summary.pairs(runs, axes, "pdors")
    fifo_all = runs[runs["policy"] == "fifo"]
    assert len(both) == 2 * len(fifo_all) and both.groupby("versus").size().to_dict() == {
        "pdors.rounding.gain=0.5": len(fifo_all),
        "pdors.rounding.gain=1.0": len(fifo_all),
    }
    fig = FigureConfig(name="u", title="u", x="machines")
    figure = summary.figure_table(runs, fig, axes, "pdors")
    fifo_points = figure[figure["policy"] == "fifo"]
    assert len(fifo_points) == 4 and (fifo_points["paired.n"] == 2).all()  # 2 gains x 2 machine counts
    assert "W/T/L of pdors" in summary.figure_markdown(figure, "machines", "pdors")


def test_html_report_embeds_its_images(tmp_path: Path) -> None:
    png = tmp_path / "a.png"
    png.write_bytes(b"\x89PNG fake")
    page = report.html_report("# T\n\ntext <b>\n\n![a](a.png)\n\n| x | y |\n|---|---|\n| 1 | 2 |\n", tmp_path)
    assert 'src="data:image/png;base64,iVBORyBmYWtl"' in page
    assert "<h1>T</h1>" in page and "text &lt;b&gt;" in page and "<td>1</td><td>2</td>" in page
    assert "a.png" not in page.replace('alt="a"', "")


def test_paired_figure_draws_pairs_or_says_there_are_none(
    recorded: tuple[pd.DataFrame, list[str]], tmp_path: Path
) -> None:
    runs, _ = recorded
    pairs = summary.pairs(runs[runs["pdors.rounding.gain"] != 0.5], ["machines"], "pdors")
    assert len(pairs) == 4
    for name, frame in (("some", pairs), ("none", pairs.iloc[:0])):
        png = plots.paired_figure(frame, ["machines"], "pdors", name, tmp_path / f"{name}.png")
        assert png.read_bytes()[:4] == b"\x89PNG" and png.with_suffix(".pdf").exists()


def test_paired_figure_floors_tiny_ratios_and_puts_a_numeric_axis_along_x() -> None:
    pairs = pd.DataFrame(
        {
            "policy": ["fifo"] * 4,
            "rule": ["a", "a", "b", "b"],
            "jobs": [20, 5, 20, 5],
            "seed": [1, 1, 1, 1],
            "value": [1e-140, 2.0, 3.0, 4.0],
            "reference": [1.0, 4.0, 4.0, 4.0],
        }
    )
    out = plots.paired_plot(pairs, ["rule", "jobs"], "pdors", "t")
    shown = [ax for ax in out.axes if ax.get_visible()]
    assert len(shown) == 2  # one panel per rule, jobs along x
    assert [t.get_text() for t in shown[0].get_xticklabels()] == ["5", "20"]
    assert shown[0].get_ylim()[0] >= plots.RATIO_FLOOR / 10  # the 1e-140 ratio does not stretch the axis
    assert "1 ratio below 0.001 drawn at it" in shown[0].get_title()


def test_reference_is_a_policy_of_the_sweep() -> None:
    assert schema.reference_of(None, ["fifo", "pdors"]) == "pdors"
    assert schema.reference_of(None, ["fifo", "drf"]) == "fifo"
    assert schema.parse({**TINY, "reference": "fifo"}).reference == "fifo"
    with pytest.raises(ConfigError, match="reference") as e:
        schema.parse({**TINY, "reference": "drf"})
    assert "'drf' is not a policy of this sweep" in str(e.value)


def test_a_median_figure_marks_censored_points(recorded: tuple[pd.DataFrame, list[str]], tmp_path: Path) -> None:
    runs, _ = recorded
    runs = runs[runs["pdors.rounding.gain"] != 0.5]  # one run per (policy, machines, seed)
    fig = FigureConfig(name="d", title="d", x="machines", metric="median_training_time")
    table = summary.figure_table(runs, fig, ["machines"], "pdors")
    sim = runs[runs["kind"] == "sim"]
    assert sim["median_censored"].sum() > 0  # 8 jobs in 8 slots: some medians are T
    assert table["censored"].sum() * 2 == pytest.approx(sim["median_censored"].sum())  # each point: 2 seeds
    if (table["censored"] > 0).any():
        assert "(censored in" in summary.figure_markdown(table, "machines", "pdors")
    assert plots.draw(table, fig, tmp_path / "d.png").exists()


def test_a_wide_log_interval_of_near_zero_utilities_is_infinite_not_an_error() -> None:
    p = compare([1e-300, 100.0], [100.0, 1e-300])
    assert p.ratio_high == math.inf and p.ratio_low == 0.0 and p.n == 2
