"""Paired statistics of one policy against a reference policy on the same instances (a leaf: NumPy and SciPy).

Every policy of a sweep runs on the same generated instance for each (grid point, seed), so a comparison is
paired: per instance, the ratio ``value / reference`` and the difference ``value - reference``. From the n
pairs of one group (a grid point, or a figure's point): win/tie/loss counts of the reference, a Student-t
``CONFIDENCE`` interval on the mean difference, the geometric-mean ratio with a Student-t interval on the mean
log ratio (exponentiated), and a Wilcoxon signed-rank p-value.

* A pair is a tie when the two values agree to ``TIE_RTOL`` relative (utilities are sums of floats).
* Log ratios need both values positive: a pair with a zero (or negative) value on either side is left out
  of the geometric mean and its interval, and counted in ``ratio_excluded``; it still counts in the
  difference, the win/tie/loss counts and the signed-rank test.
* Wilcoxon (``scipy.stats.wilcoxon``, two-sided, ties dropped as Wilcoxon's own method does) only with at
  least ``WILCOXON_MIN_N`` non-tied pairs: with fewer, the smallest two-sided p-value it can attain,
  2 / 2^n, is above 0.05 (n = 5 gives 0.0625), so no test is reported (NaN).
"""

from __future__ import annotations

import math
import sys
from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import ArrayLike

from pdors.config import JSON

CONFIDENCE = 0.95
TIE_RTOL = 1e-9
WILCOXON_MIN_N = 6


@dataclass(frozen=True, kw_only=True)
class Paired:
    """One policy against the reference over n paired instances; ``wins`` are the reference's (it is better
    by the metric's direction), NaN where too few pairs."""

    n: int
    wins: int
    ties: int
    losses: int
    diff_mean: float
    diff_low: float
    diff_high: float
    ratio_gmean: float
    ratio_low: float
    ratio_high: float
    ratio_min: float
    ratio_max: float
    ratio_excluded: int
    wilcoxon_p: float

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)


FIELDS = tuple(Paired.__dataclass_fields__)


def _t_interval(values: np.ndarray) -> tuple[float, float, float]:
    """Mean and its Student-t ``CONFIDENCE`` interval (NaN bounds with fewer than two values)."""
    from scipy import stats

    if len(values) == 0:
        return math.nan, math.nan, math.nan
    mean = float(values.mean())
    if len(values) < 2:
        return mean, math.nan, math.nan
    sd = float(values.std(ddof=1))
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, len(values) - 1)) * sd / math.sqrt(len(values))
    return mean, mean - half, mean + half


def compare(values: ArrayLike, reference: ArrayLike, higher_is_better: bool = True) -> Paired:
    """Paired statistics of ``values`` against ``reference`` (equal-length arrays, element k of both from
    the same instance); NaN pairs are dropped."""
    from scipy import stats

    v, r = np.asarray(values, dtype=float), np.asarray(reference, dtype=float)
    keep = ~(np.isnan(v) | np.isnan(r))
    v, r = v[keep], r[keep]
    diff = v - r
    tied = np.abs(diff) <= TIE_RTOL * np.maximum(np.maximum(np.abs(v), np.abs(r)), 1.0)
    ref_better = (diff < 0) if higher_is_better else (diff > 0)
    wins = int((ref_better & ~tied).sum())
    ties = int(tied.sum())
    diff_mean, diff_low, diff_high = _t_interval(diff)
    positive = (v > 0) & (r > 0)
    logs = np.log(v[positive] / r[positive])
    log_mean, log_low, log_high = _t_interval(logs)
    untied = diff[~tied]
    p = float(stats.wilcoxon(untied, alternative="two-sided").pvalue) if len(untied) >= WILCOXON_MIN_N else math.nan
    ratios = v[positive] / r[positive]
    return Paired(
        n=len(v),
        wins=wins,
        ties=ties,
        losses=len(v) - wins - ties,
        diff_mean=diff_mean,
        diff_low=diff_low,
        diff_high=diff_high,
        ratio_gmean=_exp(log_mean) if len(logs) else math.nan,
        ratio_low=_exp(log_low) if len(logs) > 1 else math.nan,
        ratio_high=_exp(log_high) if len(logs) > 1 else math.nan,
        ratio_min=float(ratios.min()) if len(ratios) else math.nan,
        ratio_max=float(ratios.max()) if len(ratios) else math.nan,
        ratio_excluded=int((~positive).sum()),
        wilcoxon_p=p,
    )


def _exp(x: float) -> float:
    """exp, inf past float's range: a t interval on a few log ratios of near-zero utilities can be that wide."""
    return math.inf if x > MAX_LOG else math.exp(x)


MAX_LOG = math.log(sys.float_info.max)


def wtl(p: Paired | JSON) -> str:
    """``wins/ties/losses`` of the reference, as text."""
    d = p.to_dict() if isinstance(p, Paired) else p
    return "-" if not d["n"] else f"{int(d['wins'])}/{int(d['ties'])}/{int(d['losses'])}"


def interval_text(mean: float, low: float, high: float) -> str:
    """``mean [low, high]``; ``-`` without a value."""
    if isinstance(mean, float) and math.isnan(mean):
        return "-"
    return f"{mean:.4g}" if math.isnan(low) else f"{mean:.4g} [{low:.4g}, {high:.4g}]"


def p_text(p: float) -> str:
    return "-" if math.isnan(p) else f"{p:.2g}"
