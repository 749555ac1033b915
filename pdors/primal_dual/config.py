"""Settings every primal-dual policy shares (PD-ORS, OASiS)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PrimalDualConfig:
    """``workload_levels``: Q of the workload axis of Algorithm 3; ``utility_floor``: the floor on
    u_i(T - a_i) in eq. (14)."""

    workload_levels: int = 100
    utility_floor: float = 1e-6

    def check(self) -> list[str]:
        out = []
        if not 1 <= self.workload_levels <= 10000:
            out.append(f"workload_levels: must lie in [1, 10000], got {self.workload_levels}")
        if self.utility_floor <= 0:
            out.append(f"utility_floor: must be > 0, got {self.utility_floor}")
        return out
