"""Fresh paper-scale instances with a stated power: tonight's PD-ORS against a recorded distribution of its
certified efficiency ALG / bound (the inverse of its certified ratio bound / ALG; ``offline_opt.dual_bound``).

The rule, fixed before any measurement (docs/COMPETITIVE_RATIO.md, "The nightly's power"): per cell (setting x
reading of a failed rounding), x = PD-ORS's validated utility / the instance's certified dual bound, in [0, 1].
The record holds x on ``CALIBRATION`` seeds (``CALIBRATION_FIRST`` ..) of each setting: mean m and standard
deviation s. A night with K fresh instances of the cell is red when their mean x is below
m - Z max(s, SD_FLOOR) / sqrt(K): a drop that a healthy PD-ORS reaches with probability ~0.13 % per cell if the
night's mean is normal. The smallest drop the rule detects half the time is that distance; it is printed with the
verdict, and the false-alarm rate and the detection of planted regressions are measured (studies/nightly_mutants.py).
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
Z = 3.0
SD_FLOOR = 0.01  # 1 % of the bound: no claim to see a smaller spread than that from a few recorded instances
CALIBRATION = {"paper": 16}  # recorded seeds per setting
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
        "rule": f"mean x of a night's K instances below m - {Z:g} max(s, {SD_FLOOR:g}) / sqrt(K) is red; m, s over "
        + ", ".join(f"{s} seeds {v[0]} .. {v[-1]}" for s, v in seeds.items()),
        "z": Z,
        "sd_floor": SD_FLOOR,
        "seeds": {s: [v[0], v[-1]] for s, v in seeds.items()},
        "values": x,
    }


@dataclass(frozen=True, kw_only=True)
class CellVerdict:
    """One cell tonight: the recorded mean, tonight's mean, the threshold and the smallest drop it detects."""

    cell: str
    instances: int
    recorded_mean: float
    recorded_sd: float
    mean: float
    threshold: float

    @property
    def detectable(self) -> float:
        """The relative drop of the mean that reaches the threshold (detected half the time)."""
        return (self.recorded_mean - self.threshold) / self.recorded_mean if self.recorded_mean > 0 else math.inf

    @property
    def drop(self) -> float:
        return (self.recorded_mean - self.mean) / self.recorded_mean if self.recorded_mean > 0 else 0.0

    @property
    def red(self) -> bool:
        return self.mean < self.threshold

    @property
    def reason(self) -> str:
        return (
            f"{self.cell}: PD-ORS's mean ALG / bound {self.mean:.4f} on {self.instances} fresh instance(s) is "
            f"{self.drop:.2%} below the recorded {self.recorded_mean:.4f} (red beyond {self.detectable:.2%})"
        )

    def to_dict(self) -> JSON:
        return {**self.__dict__, "detectable": self.detectable, "drop": self.drop, "red": self.red}


def judge(section: JSON, tonight: dict[str, list[float]]) -> list[CellVerdict]:
    """Tonight's x per cell against the recorded distribution. Pure."""
    out = []
    for key, values in tonight.items():
        if not values:
            continue
        rec = np.asarray(section["values"][key], float)
        m, s = float(rec.mean()), float(rec.std(ddof=1)) if len(rec) > 1 else 0.0
        k = len(values)
        out.append(
            CellVerdict(
                cell=key,
                instances=k,
                recorded_mean=m,
                recorded_sd=s,
                mean=float(np.mean(values)),
                threshold=m - section["z"] * max(s, section["sd_floor"]) / math.sqrt(k),
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
