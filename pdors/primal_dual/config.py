"""Settings every primal-dual policy shares (PD-ORS, OASiS)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..config import bounded

# The largest Q: the largest any study uses (configs/q_sensitivity.yaml). Algorithm 3's min-plus step is O(Q^2) in
# time and memory per job and slot, and the run sizing (pipeline/spec/sizing.py) is measured at Q = 100: on a
# quickstart-size PD-ORS run (10 x 50 x 20) Q = 100 took 2.7 s and 84 MB, 1,000 12 s and 103 MB, 2,000 25 s and
# 168 MB, 10,000 over 240 s and 1.34 GB (issue 47).
MAX_LEVELS = 1000


@dataclass(frozen=True)
class PrimalDualConfig:
    """``workload_levels``: Q of the workload axis of Algorithm 3; ``utility_floor``: the floor on
    u_i(T - a_i) in eq. (14)."""

    workload_levels: int = 100
    utility_floor: float = 1e-6

    def check(self) -> list[str]:
        out = []
        if not 1 <= self.workload_levels <= MAX_LEVELS:
            out.append(
                f"workload_levels: must lie in [1, {MAX_LEVELS:,}] (Algorithm 3 costs O(Q^2) per job and slot, "
                f"outside the run sizing), got {self.workload_levels}"
            )
        if self.utility_floor <= 0:
            out.append(f"utility_floor: must be > 0, got {self.utility_floor}")
        return out


class GainEquation(enum.IntEnum):
    """Which equation derives G_delta from delta when ``rounding.gain`` is null; the value is the equation's
    number, as configs and the record give it."""

    EQ29_W2 = 29  # eq. (29), Theorem 3: G <= 1 from W_2 = min(F, C^/alpha, C^/beta) over machines with room
    EQ30_W1 = 30  # eq. (30), Theorem 4: G > 1 from W_1 = D


@dataclass(frozen=True, kw_only=True)
class RoundingConfig:
    """Algorithm 4's randomised rounding. ``gain`` fixes G_delta (paper Fig. 11 sweeps 0.2-1.2); with
    ``gain: null`` it is computed per external solve from ``delta`` by eq. (29) or (30). ``delta`` also
    enters the reported bound 6 G / delta max_r(1, ln U^r/L)."""

    gain: float | None = 1.0
    delta: float = 1.0
    theorem: GainEquation = GainEquation.EQ29_W2
    feasible_solutions: int = bounded(5, 1, 10_000, "rounded cases kept per job; each is an LP")
    max_attempts: int = bounded(5000, 1, 10**6, "roundings tried per job; each is a draw and a check")
    integer_optimum: bool = False  # thesis Fig. 3.14: also solve each rounded case's integer program (slow)

    def check(self) -> list[str]:
        out = []
        if self.gain is not None and self.gain <= 0:
            out.append(f"gain: must be > 0 (or null to derive it from delta), got {self.gain}")
        if not 0 < self.delta <= 1:
            out.append(f"delta: must lie in (0, 1], got {self.delta}")
        if self.feasible_solutions < 1:
            out.append(f"feasible_solutions: must be >= 1, got {self.feasible_solutions}")
        if self.max_attempts < self.feasible_solutions:
            out.append(f"max_attempts: must be >= feasible_solutions, got {self.max_attempts}")
        return out
