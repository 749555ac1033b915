"""The headline table (pipeline/results/headline.py): one row per policy reading, paired with each reading of the
reference, numbers rounded to their intervals, narrow enough for a terminal; on a real in-process sweep."""

from __future__ import annotations

import math

import pytest
from sweep_fixtures import write_config

import pipeline
from pipeline.results import headline
from pipeline.sweep import SweepOptions

TWO_READINGS = {
    "name": "readings",
    "instance": {"machines": 3, "jobs": 5, "slots": 5},
    "policies": {"pdors": {}, "fifo": {}, "drf": {}},
    "grid": {"pdors.on_rounding_failure": ["found_solutions", "reject"], "machines": [3, 4]},
    "seeds": {"start": 1, "count": 2},
    "mlflow": {"enabled": False},
}


@pytest.fixture(scope="module")
def sweep_root(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("headline")
    config = write_config(tmp / "readings.yaml", TWO_READINGS)
    root = tmp / "out"
    result = pipeline.run_sweep(config, SweepOptions(out=str(root), in_process=True))
    assert result.status == 0
    return root


def test_one_block_per_reading_each_policy_paired_with_it(sweep_root):
    frame = pipeline.headline_table(out=sweep_root)
    assert list(dict.fromkeys(frame["reading"])) == ["PD-ORS (found_solutions)", "PD-ORS (reject)"]
    for reading, block in frame.groupby("reading", sort=False):
        policies = list(block["policy"])
        assert policies[0] == reading and sorted(policies[1:]) == ["DRF", "FIFO"]  # the reference's reading first
        others = block.iloc[1:]
        # 2 machines x 2 seeds = 4 instances per baseline, each paired once with this reading
        assert (others["wins"] + others["ties"] + others["losses"]).tolist() == [4, 4]
        assert block["n"].tolist() == [4, 4, 4]
    assert frame["utility_low"].min() >= 0


def test_by_axis_splits_rows_and_text_fits(sweep_root):
    frame = pipeline.headline_table(out=sweep_root, by=("machines",))
    assert len(frame) == 2 * 3 * 2 and set(frame["machines"]) == {"3", "4"}
    shown = headline.text(frame, "pdors", ["machines"])
    assert max(map(len, shown.splitlines())) <= 110
    assert "e-" not in shown and "nan" not in shown
    with pytest.raises(ValueError, match="--by jobs: not a grid axis"):
        pipeline.headline_table(out=sweep_root, by=("jobs",))


def test_a_certified_ratio_of_an_alg_near_zero_keeps_the_table_narrow(sweep_root):
    """fig12's literal regime: DRF earns 5.4e-88 on one instance, its certified OPT / ALG has 88 digits."""
    frame = pipeline.headline_table(out=sweep_root).assign(opt_ratio_low=1.0, opt_ratio_high=1.5, opt_ratio_n=4)
    frame.loc[frame.index[1], ["opt_ratio_low", "opt_ratio_high"]] = [2.2457e88, 2.6184e88]
    shown = headline.text(frame, "pdors")
    assert "[2.25e+88, 2.62e+88]" in shown and "[1.00, 1.50]" in shown and max(map(len, shown.splitlines())) <= 110


@pytest.mark.parametrize(
    ("mean", "low", "high", "shown"),
    [
        (122.772579, 118.31, 127.24, "123 [118, 127]"),
        (1.2345, 1.10, 1.38, "1.23 [1.10, 1.38]"),
        (2.09e-20, -4.2e-20, 6.3e-20, "0"),
        (12345.0, 11900.0, 12790.0, "12300 [11900, 12800]"),
        (0.2854, 0.01623, 5.018, "0.3 [0.0, 5.0]"),
        (5.0, math.nan, math.nan, "5.00"),
        (math.nan, math.nan, math.nan, "-"),
    ],
)
def test_numbers_rounded_to_their_interval(mean, low, high, shown):
    assert headline.rounded(mean, low, high) == shown
