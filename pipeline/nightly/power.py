"""Fresh paper-scale instances with a stated power: tonight's PD-ORS against a recorded distribution of its
certified efficiency ALG / bound (the inverse of its certified ratio bound / ALG; ``offline_opt.dual_bound``).

The rule, fixed before any measurement (docs/COMPETITIVE_RATIO.md, "The nightly's power"): per cell (setting x
reading of a failed rounding), x = PD-ORS's validated utility / the instance's certified dual bound, in [0, 1].
The record holds x on ``CALIBRATION`` seeds (``CALIBRATION_FIRST`` ..) of each setting. A night with K fresh
instances of the cell is red when their mean x is below the ``QUANTILE`` quantile of the means of K x drawn with
replacement from the recorded ones (``RESAMPLES`` draws from a generator of fixed seed: the threshold is a pure
function of the record and K). x piles up at 1 with a long left tail, so no normal approximation: the empirical
distribution of a night's mean. A uniform relative drop d of every x reaches the threshold half the time when
d = 1 - threshold / median night mean; that is printed with the verdict, and the false-alarm rate and the
detection of planted regressions are measured (studies/nightly_mutants.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pdors.config import JSON

from . import paper as nightly_paper
from .paper_record import READINGS, run_pdors

# The fresh instances of the paper's size (pipeline.nightly.paper, --paper). Not Fig. 9's (--fig09): its dual bound
# takes ~10 s against ~0.1 s here and PD-ORS ~3x longer, and its ALG / bound spreads 0.60-0.85 over three seeds, so
# two a night would see only drops of ~20 %; the pinned record guards H = 30 and H = 10 exactly.
SETTINGS = ("paper",)
# per cell and night; two cells a night: <= 1 % of healthy nights red, with room for the tail the record under-samples
QUANTILE = 0.001
RESAMPLES = 200_000
RESAMPLE_SEED = 0
CALIBRATION = {"paper": 200}  # recorded seeds per setting
CALIBRATION_FIRST = 1000  # disjoint from the pinned seeds (1 ..) and the nights' date seeds (YYYYMMDD * 100 ..)


def cell(setting: str, reading: str) -> str:
    return f"{setting}/{reading}"


def bound(setting: str, seed: int) -> float:
    """The instance's certified dual bound (>= OPT)."""
    from offline_opt.dual_bound import dual_bound

    return dual_bound(nightly_paper.draw(seed, setting)).bound


def efficiency(setting: str, seed: int, bound_value: float) -> dict[str, float]:
    """x = ALG / bound of PD-ORS under each reading on one instance (1.0 when the bound is 0)."""
    out = {}
    for reading in READINGS:
        u = run_pdors(setting, seed, reading).utility
        out[cell(setting, reading)] = u / bound_value if bound_value > 0 else 1.0
    return out


def record(count: int | None = None, first: int = CALIBRATION_FIRST) -> JSON:
    """The record's ``power`` section: x per cell on seeds ``first`` .. of each setting (``count`` of each, default
    ``CALIBRATION``)."""
    seeds = {s: list(range(first, first + (count or CALIBRATION[s]))) for s in SETTINGS}
    return section(seeds, values(seeds, {}))


def section(seeds: dict[str, list[int]], x: dict[str, list[float]]) -> JSON:
    """The ``power`` section of x per cell measured on ``seeds`` per setting."""
    return {
        "rule": f"mean x of a night's K instances below the {QUANTILE:.1%} quantile of the means of K x resampled "
        "from " + ", ".join(f"{s} seeds {v[0]} .. {v[-1]}" for s, v in seeds.items()) + " is red",
        "quantile": QUANTILE,
        "resamples": RESAMPLES,
        "seeds": {s: [v[0], v[-1]] for s, v in seeds.items()},
        "values": x,
    }


@dataclass(frozen=True, kw_only=True)
class CellVerdict:
    """One cell tonight: the median of healthy night means (resampled from the record), tonight's mean, the
    threshold and the smallest drop it detects."""

    cell: str
    instances: int
    recorded: int  # calibration instances
    median: float
    mean: float
    threshold: float

    @property
    def detectable(self) -> float:
        """The uniform relative drop of x that reaches the threshold half the time."""
        return 1 - self.threshold / self.median if self.median > 0 else math.inf

    @property
    def drop(self) -> float:
        return 1 - self.mean / self.median if self.median > 0 else 0.0

    @property
    def red(self) -> bool:
        return self.mean < self.threshold

    @property
    def reason(self) -> str:
        return (
            f"{self.cell}: PD-ORS's mean ALG / bound {self.mean:.4f} on {self.instances} fresh instance(s) is "
            f"{self.drop:.2%} below a healthy night's median {self.median:.4f} (red below {self.threshold:.4f}, "
            f"a drop of {self.detectable:.2%})"
        )

    def to_dict(self) -> JSON:
        return {**self.__dict__, "detectable": self.detectable, "drop": self.drop, "red": self.red}


def night_means(recorded: np.ndarray, k: int, resamples: int) -> np.ndarray:
    """Means of ``k`` values drawn with replacement from ``recorded``, ``resamples`` times (fixed generator)."""
    rng = np.random.default_rng(RESAMPLE_SEED)
    means: np.ndarray = recorded[rng.integers(0, len(recorded), size=(resamples, k))].mean(axis=1)
    return means


def judge(section: JSON, tonight: dict[str, list[float]]) -> list[CellVerdict]:
    """Tonight's x per cell against the recorded distribution. Pure."""
    out = []
    for key, values in tonight.items():
        if not values:
            continue
        rec = np.asarray(section["values"][key], float)
        means = night_means(rec, len(values), section["resamples"])
        out.append(
            CellVerdict(
                cell=key,
                instances=len(values),
                recorded=len(rec),
                median=float(np.median(means)),
                mean=float(np.mean(values)),
                threshold=float(np.quantile(means, section["quantile"])),
            )
        )
    return out


def values(seeds: dict[str, list[int]], bounds: dict[tuple[str, int], float]) -> dict[str, list[float]]:
    """x per cell on the given seeds per setting. ``bounds`` caches the dual bound by (setting, seed) (a bound does
    not depend on PD-ORS); missing ones are computed and added."""
    out: dict[str, list[float]] = {cell(s, r): [] for s in seeds for r in READINGS}
    for setting, chosen in seeds.items():
        for seed in chosen:
            if (setting, seed) not in bounds:
                bounds[setting, seed] = bound(setting, seed)
            for key, x in efficiency(setting, seed, bounds[setting, seed]).items():
                out[key].append(x)
    return out


def night(section: JSON, seeds: dict[str, list[int]], bounds: dict[tuple[str, int], float]) -> list[CellVerdict]:
    """PD-ORS on the night's fresh seeds per setting, judged against the record."""
    return judge(section, values(seeds, bounds))
