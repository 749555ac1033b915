"""Exponential resource prices of PD-ORS, eqs. (12)-(14)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import portable_math
from ..model import Instance, Jobs


@dataclass(frozen=True)
class PriceBounds:
    """``upper[r]`` = U^r (eq. 13) and ``lower`` = L (eq. 14); ``lower_source`` is ``floor`` when the utility
    floor raised L above what eq. (14) gives with the jobs' own u_i(T - a_i), else ``eq14``."""

    upper: np.ndarray
    lower: float
    lower_source: str = "eq14"

    def log_ratio(self) -> np.ndarray:
        """ln(U^r / L) per resource (0 where no job uses the resource), read only: computed once per bounds (eq. (12)
        reads it at every price update)."""
        return self._log_ratio

    @functools.cached_property
    def _log_ratio(self) -> np.ndarray:
        # U^r = L is a constant price, ratio 1: also when both are inf (machines with no capacity at all)
        ratio: np.ndarray = np.divide(
            self.upper, self.lower, out=np.ones_like(self.upper), where=self.upper != self.lower
        )
        out = portable_math.log(ratio)
        out.flags.writeable = False
        return out


def shortest_duration(jobs: Jobs) -> np.ndarray:
    """d_i^min = ceil(V_i (tau_i + 2 g_i gamma_i / (b_i^(i) F_i)) / F_i): F_i co-located workers throughout."""
    out: np.ndarray = np.ceil(jobs.workload * jobs.time_per_sample(True) / jobs.batch)
    return out


def price_bounds(jobs: Jobs, cluster_capacity: np.ndarray, slots: int, utility_floor: float) -> PriceBounds:
    """U^r by eq. (13) and L by eq. (14) from the jobs given.

    [choice] eq. (13) is evaluated at the shortest training *duration* d_i^min (the paper's
    ``d_min - a_i`` subtracts an arrival slot from a duration). In eq. (14) ``1/mu`` takes the largest value
    the paper's condition allows, and u_i(T - a_i) is floored at ``utility_floor`` so that time-critical jobs,
    whose utility underflows at T - a_i, do not drive L to zero.
    """
    demand = jobs.worker_demand + jobs.ps_demand  # [I, R]
    best = jobs.utility(shortest_duration(jobs))  # u_i(d_i^min)
    with np.errstate(divide="ignore", invalid="ignore"):
        unit = np.where(demand > 0, best[:, None] / demand, -np.inf)
    upper = unit.max(axis=0)
    external_work = np.ceil(jobs.workload * jobs.time_per_sample(False))  # ceil(V_i (tau + 2 g gamma / (b_e F)))
    size = external_work * demand.sum(axis=1)
    room = slots * cluster_capacity.sum()
    # no capacity at all (OASiS's PS half of one machine): no job fits, 1/mu and so L and U^r are inf
    inv_mu = np.min(size / room) if room > 0 else np.inf
    at_horizon = jobs.utility(slots - jobs.arrival)
    lower = float(np.min(inv_mu * np.maximum(at_horizon, utility_floor) / (2.0 * size)))
    source = "floor" if lower > np.min(inv_mu * at_horizon / (2.0 * size)) else "eq14"
    # A resource no job uses keeps the constant price L; a U^r below L would make prices fall with use.
    upper = np.where(np.isfinite(upper), np.maximum(upper, lower), lower)
    return PriceBounds(upper=upper, lower=lower, lower_source=source)


def instance_price_bounds(instance: Instance, utility_floor: float) -> PriceBounds:
    return price_bounds(instance.jobs, instance.cluster.capacity, instance.slots, utility_floor)


def prices(bounds: PriceBounds, used: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """p_h^r[t] = L (U^r / L) ** (rho_h^r[t] / C_h^r), eq. (12), for ``used`` = rho of shape [..., H, R].

    A resource of zero capacity is priced at U^r (it is exhausted from the start).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        fill = np.where(capacity > 0, used / capacity, 1.0)
    out: np.ndarray = bounds.lower * portable_math.exp(fill * bounds.log_ratio())
    return out


class SlotPrices:
    """Prices of eq. (12) per slot, kept between decisions: a slot's prices are a function of its rho alone,
    so :meth:`update` recomputes them only for the (slot, machine) rows whose rho changed (elementwise
    operations: the same bits as computing every slot)."""

    def __init__(
        self,
        bounds: PriceBounds,
        capacity: np.ndarray,
        price_of: Callable[[PriceBounds, np.ndarray, np.ndarray], np.ndarray] = prices,
    ):
        """``price_of(bounds, used, capacity)``: eq. (12), :func:`prices` (a policy may pass its own, elementwise
        in rows of ``used`` and ``capacity`` [..., R] alike)."""
        self.bounds, self.capacity, self.price_of = bounds, capacity, price_of
        self.rho: np.ndarray | None = None
        self.price: np.ndarray = np.empty((0, 0, 0))  # [T, H, R] from the first update on

    def update(self, used: np.ndarray, start: int) -> np.ndarray:
        """Bring slots ``start``.. up to date with ``used`` = rho [T, H, R]; returns the slots recomputed."""
        if self.rho is None:
            # A machine's price at rho = 0 is the same in every slot: computed once per machine and copied to the
            # slots where nothing is committed yet (most of a long horizon), the rest row by row; same bits.
            self.rho = used.copy()
            self.price = np.array(
                np.broadcast_to(self.price_of(self.bounds, np.zeros_like(self.capacity), self.capacity), used.shape)
            )
            slot, machine = np.nonzero(((used != 0) | np.signbit(used)).any(axis=2))
            if slot.size:
                self.price[slot, machine] = self.price_of(self.bounds, used[slot, machine], self.capacity[machine])
            return np.arange(len(used))
        # Eq. (12) is elementwise: only the (slot, machine) rows whose rho changed are recomputed.
        # the changed (slot, machine) rows in row-major order, as np.nonzero of any(axis=2) gives them, from the few
        # changed entries (a reduction over the short last axis costs more than the comparison)
        cell = np.unique(np.flatnonzero(used[start:] != self.rho[start:]) // used.shape[2])
        slot, machine = np.divmod(cell, used.shape[1])
        slot += start
        if slot.size:
            self.rho[slot, machine] = used[slot, machine]
            self.price[slot, machine] = self.price_of(self.bounds, used[slot, machine], self.capacity[machine])
        return np.unique(slot)
