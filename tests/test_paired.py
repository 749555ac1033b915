"""Paired statistics (pipeline/paired.py) against values worked out by hand or by SciPy directly."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pipeline.paired import WILCOXON_MIN_N, compare, interval_text, wtl


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
