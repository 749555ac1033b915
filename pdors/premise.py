"""The premise of PD-ORS's competitive ratio, measured on a run: the allocation-cost relationship.

Yu et al., "Online Scheduling Algorithms for Distributed Machine Learning ...", IEEE TNSE 2022, Appendix,
Definition 1: for every admitted job i and every (t, h, r) it uses,

    p_h^{r,i-1}[t] (rho_h^{r,i}[t] - rho_h^{r,i-1}[t]) >= delta / (3 G_delta) * C_h^r / epsilon
                                                           * (p_h^{r,i}[t] - p_h^{r,i-1}[t]),

epsilon = max_r(1, ln(U^r / L)). Lemma 9 turns it into P_i - P_{i-1} >= delta / (3 G_delta epsilon) (D_i - D_{i-1})
and Theorems 5-6 into the ratio 6 G_delta / delta epsilon. The paper derives it from the differential form (Lemma
10) assuming every worker's and PS's demand is much smaller than a machine's capacity; whether it holds is a
property of the run, measured here by replaying its admissions outside the policy: the admitted jobs' validated
allocations in admission order (arrival slot, then job index: the simulator's order), the run's G_delta, delta,
U^r and L as the policy reports them, and eq. (12) (``pdors.primal_dual.prices.prices``).

The replay's rho is each admitted job's realised allocation: the slots a plan held beyond a job's actual completion
are released by the simulator and are not in the schedule. With eq. (12) the margin (left over right side) of a
cell depends only on the job's own increment x = Delta rho / C and ln(U^r / L), not on rho before it:
margin = x epsilon / (k (exp(x ln(U^r/L)) - 1)), k = delta / (3 G_delta).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .model import Instance
from .primal_dual.gain import competitive_bound
from .primal_dual.prices import PriceBounds, prices
from .schedule import Schedule

PriceFunction = Callable[[PriceBounds, np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True, kw_only=True)
class Premise:
    """Definition 1 on one run (all None for a policy it does not apply to).

    ``premise_share``: the share of admissions for which it holds on every cell the job uses (1.0 with no
    admission); ``worst_margin``: the least left side / right side over all those cells (>= 1: it holds;
    None with no admission); ``cell_share_max`` / ``cell_share_median``: the largest share of a machine's
    capacity of one resource one job takes in one slot, its maximum over the run and its median over the
    admissions; ``competitive_bound``: 6 G_delta / delta epsilon; ``theorem``: 5 (0 < G_delta <= 1) or 6."""

    admissions: int | None = None
    premise_share: float | None = None
    worst_margin: float | None = None
    cell_share_max: float | None = None
    cell_share_median: float | None = None
    epsilon: float | None = None
    gain: float | None = None
    delta: float | None = None
    competitive_bound: float | None = None
    theorem: int | None = None

    @property
    def holds(self) -> bool:
        """Definition 1 holds on every admission of the run (so Theorems 5-6 apply to it)."""
        return self.premise_share is not None and self.premise_share >= 1.0


def admission_order(instance: Instance, schedule: Schedule) -> np.ndarray:
    """The admitted jobs in the order a planning policy decided them: by arrival slot, then by index."""
    admitted = np.flatnonzero(schedule.admitted)
    return admitted[np.argsort(instance.jobs.arrival[admitted], kind="stable")]


def measure(
    instance: Instance,
    schedule: Schedule,
    bounds: PriceBounds,
    gain: float,
    delta: float,
    price_of: PriceFunction = prices,
) -> Premise:
    """Replay the admissions of ``schedule`` under the price function ``price_of`` (eq. (12) by default) with
    the run's ``bounds`` (U^r, L), ``gain`` (G_delta) and ``delta``; Definition 1 per cell each job uses."""
    jobs, capacity = instance.jobs, instance.cluster.capacity  # capacity [H, R]
    epsilon = max(1.0, float(np.max(bounds.log_ratio(), initial=0.0)))
    k = delta / (3.0 * gain)
    rho = np.zeros((instance.slots, instance.num_machines, capacity.shape[1]))
    holds, worst, shares = [], np.inf, []
    job_cells = _cells_by_job(schedule)
    for i in admission_order(instance, schedule).tolist():
        w, s = schedule.workers[:, i, :], schedule.servers[:, i, :]  # [T, H]
        t, h = job_cells(i)  # np.nonzero(w | s), without a pass over [T, H] per job
        step = w[t, h, None] * jobs.worker_demand[i] + s[t, h, None] * jobs.ps_demand[i]  # [cells, R]
        before = rho[t, h]
        p_before = price_of(bounds, before, capacity[h])
        p_after = price_of(bounds, before + step, capacity[h])
        lhs = p_before * step
        rhs = k * capacity[h] / epsilon * (p_after - p_before)
        used = step > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            margin = np.where(rhs > 0, lhs / rhs, np.inf)[used]
            share = np.where(capacity[h] > 0, step / capacity[h], np.inf)[used]
        holds.append(bool(np.all(margin >= 1.0)))
        worst = min(worst, float(margin.min(initial=np.inf)))
        shares.append(float(share.max(initial=0.0)))
        rho[t, h] += step
    return Premise(
        admissions=len(holds),
        premise_share=float(np.mean(holds)) if holds else 1.0,
        worst_margin=worst if holds else None,
        cell_share_max=max(shares) if shares else None,
        cell_share_median=float(np.median(shares)) if shares else None,
        epsilon=epsilon,
        gain=gain,
        delta=delta,
        competitive_bound=competitive_bound(gain, delta, bounds.log_ratio()),
        theorem=5 if gain <= 1.0 else 6,
    )


def _cells_by_job(schedule: Schedule) -> Callable[[int], tuple[np.ndarray, np.ndarray]]:
    """``cells(i)``: job i's non-zero (slot, machine) cells, as ``np.nonzero`` of its [T, H] counts gives them (slot,
    then machine, ascending), from one pass over the schedule slot by slot up to its horizon."""
    found = [np.nonzero(schedule.workers[t] | schedule.servers[t]) for t in range(schedule.horizon())]  # (i, h)
    slot = np.concatenate([np.full(len(i), t) for t, (i, _) in enumerate(found)] or [np.zeros(0, np.intp)])
    job = np.concatenate([i for i, _ in found] or [np.zeros(0, np.intp)])
    machine = np.concatenate([h for _, h in found] or [np.zeros(0, np.intp)])
    order = np.argsort(job, kind="stable")  # each job's cells keep their (slot, machine) order
    slot, job, machine = slot[order], job[order], machine[order]
    bounds = np.searchsorted(job, np.arange(schedule.admitted.size + 1))

    def cells(i: int) -> tuple[np.ndarray, np.ndarray]:
        return slot[bounds[i] : bounds[i + 1]], machine[bounds[i] : bounds[i + 1]]

    return cells


def of_run(instance: Instance, schedule: Schedule, policy_config: Any, stats: dict[str, Any]) -> Premise:
    """Definition 1 on a PD-ORS run from what it reports (``stats``: ``price_upper``, ``price_lower``,
    ``gain_max``) and its config (``rounding.gain``, ``rounding.delta``); an empty :class:`Premise` for any other
    policy. G_delta is the fixed ``gain``, or with ``gain: null`` the largest of the run's external solves (the
    one the run's ``competitive_bound`` uses)."""
    from .policies.pdors import Config

    if not isinstance(policy_config, Config) or "price_upper" not in stats:
        return Premise()
    rounding = policy_config.rounding
    gain = rounding.gain if rounding.gain is not None else float(stats["gain_max"])
    bounds = PriceBounds(upper=np.asarray(stats["price_upper"], dtype=float), lower=float(stats["price_lower"]))
    if gain <= 0:  # eq. (29) with W_2 = 0: no G_delta, no theorem
        return Premise(admissions=int(schedule.admitted.sum()), gain=gain, delta=rounding.delta)
    return measure(instance, schedule, bounds, gain, rounding.delta)


def theorem_violation(premise: Premise, upper_ratio: float | None) -> str | None:
    """Theorems 5-6 checked on a run: a run on which Definition 1 holds for every admission and whose certified
    upper ratio (dual bound / ALG; ``inf`` when ALG = 0 < bound) exceeds 6 G_delta / delta epsilon contradicts
    them. Returns why, or None (no contradiction, or the premise does not hold, or nothing to compare)."""
    if not premise.holds or premise.competitive_bound is None or upper_ratio is None:
        return None
    if upper_ratio <= premise.competitive_bound * (1.0 + 1e-9):
        return None
    return (
        f"Theorem {premise.theorem} violated: Definition 1 holds on all {premise.admissions} admission(s), yet the "
        f"certified OPT / ALG <= {upper_ratio:.6g} exceeds the bound 6 G_delta / delta epsilon = "
        f"{premise.competitive_bound:.6g} (G_delta {premise.gain:.4g}, delta {premise.delta:.4g}, "
        f"epsilon {premise.epsilon:.4g})"
    )
