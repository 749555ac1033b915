"""PD-ORS, Algorithm 1: admit an arriving job iff its best schedule has positive payoff, then commit it.

For job i arriving at a_i: prices p_h^r[t] of eq. (12) from the resources already committed in each slot;
theta(t, v) by Algorithm 4 for every slot t >= a_i and workload level; the DP of Algorithms 2-3 picks the
completion slot and schedule maximising u_i(t~ - a_i) - cost; admit iff that payoff is > 0 (steps 3-4).
Prices are a pure function of the committed resources (rho), so "update rho and prices" is the simulator
committing the plan.

Where each step of the paper (Yu et al., IEEE TNSE 2022, Section IV) is done. The fast path below merges
Algorithms 2-3 into one min-plus pass and Algorithm 4's steps into class-wise vectorised code;
``pdors_reference.py`` states every step literally, in the paper's order, and tests/test_reference.py checks
that both take the same decisions.

===============  ========================================  ===========================================================
Algorithm, step  What                                      Here (fast path)
===============  ========================================  ===========================================================
1, step 1        rho = 0, p = L                            ``PDORS.reset``; ``prices.instance_price_bounds`` (13)-(14)
1, step 2        best schedule and payoff of job i         ``PDORS.plan``
1, steps 3-4     admit iff payoff > 0, else reject         ``PDORS.plan`` (``result.payoff > 0``)
1, updates       rho and p on the cells used (12)          the simulator commits the plan; ``SlotPrices.update``
2, steps 1-3     every completion slot t~, keep best       ``dynamic_program.plan_levels`` (one forward pass)
3, steps 1-5     Theta(t~, V) = min_v theta + Theta (21)   ``dynamic_program.plan_levels`` (workload levels Q_i)
4, step 1        D, G_delta, S                             ``slot_cost.slot_costs``; ``rounding.rounding_gain``
4, steps 2-7     internal case: cheapest single machine    ``slot_cost.slot_costs`` (vectorised over machines)
4, step 8        LP relaxation of (23)-(26) + ratio row    ``external_lp.LinearProgram``, ``SlotCosts.refine``
4, step 9        scale by G_delta (29)/(30)                ``SlotCosts.refine`` with ``rounding.rounding_gain``
4, steps 10-11   randomised rounding (27)-(28) until S     ``rounding.round_external``
4, final step    cheaper of the two cases                  ``SlotCosts`` (``cost``, ``options``)
===============  ========================================  ===========================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..config import JSON
from ..model import Instance
from ..primal_dual.config import PrimalDualConfig, RoundingConfig
from ..primal_dual.dynamic_program import aligned_levels, plan_levels
from ..primal_dual.gain import competitive_bound
from ..primal_dual.job import JobShape, level_grid
from ..primal_dual.machine_classes import MachineClasses, machine_classes, state_digest
from ..primal_dual.prices import PriceBounds, SlotPrices, instance_price_bounds, prices
from ..primal_dual.slot_cost import ExternalSolve, SlotCosts, slot_costs
from ..solo import fastest_slots
from ..thesis import ps_ratio
from .base import JobPlan, PlanningPolicy, RunShape, SlotView

HISTORY_SEED_OFFSET = 1_000_003


@dataclass(frozen=True, kw_only=True)
class Config(PrimalDualConfig):
    """``round_all_levels``: compute theta for every slot up to T and round every level whose LP is solved,
    instead of only what the decision needs (the DP's early stop and lazy rounding, docs/PERFORMANCE.md).
    Same decisions, 2-3x slower; the rounding statistics (``rounding_attempts_mean``,
    ``lp_vs_rounded_ratio``) then cover every external solve rather than those on the DP's schedules, which
    is what thesis Figs. 3.13-3.14 measure.

    ``on_rounding_failure``: ``found_solutions`` (the default) reads Algorithm 4's
    theta(t, v) as the cost of a solution found: a (slot, level) whose rounding found none in ``max_attempts``
    costs its internal case, or is infeasible to the DP, which plans around it; the job is discarded only if no
    plan of found solutions pays. ``reject`` (the other reading of paper Section V) costs such a level at its LP
    optimum and discards the job when its best schedule needs it (docs/MODEL.md, "Three readings" (a))."""

    price_bounds: Literal["oracle", "history"] = "oracle"
    # ``aligned``: Q_i per job so that its fastest schedule alone is a plan; ``uniform``: Q for every job, the
    # grid before it (a job may lose a slot to it; docs/MODEL.md, "The workload grid")
    workload_grid: Literal["aligned", "uniform"] = "aligned"
    on_rounding_failure: Literal["found_solutions", "reject"] = "found_solutions"
    rounding: RoundingConfig = field(default_factory=RoundingConfig)
    round_all_levels: bool = False


class PDORS(PlanningPolicy):
    def __init__(self, config: Config, history: Instance | None = None, name: str = "pdors"):
        self.name = name
        self.config = config
        self.history = history
        self.rounding = config.rounding
        self.reject_on_failure = config.on_rounding_failure == "reject"

    def reset(self, instance: Instance, seed: int) -> None:
        source = self.history if self.history is not None and self.config.price_bounds == "history" else instance
        self.bounds: PriceBounds = instance_price_bounds(source, self.config.utility_floor)
        self.seed = seed
        self.gamma_internal, self.gamma_external = ps_ratio(instance, True), ps_ratio(instance, False)
        self.thesis = instance.ps_bandwidth is not None
        self.ps_at_most_workers = instance.ps_at_most_workers
        # Q_i per job (a function of the job and the cluster, so known at its arrival)
        q = self.config.workload_levels
        window = instance.slots - instance.jobs.arrival
        self.levels = (
            aligned_levels(q, fastest_slots(instance), window).tolist()
            if self.config.workload_grid == "aligned"
            else [q] * instance.num_jobs
        )
        self._solves: list[ExternalSolve] = []
        self._slots_skipped = 0
        self._lp_solves = 0
        self._rounding_rejects = 0
        self._prices = SlotPrices(self.bounds, instance.cluster.capacity, prices)  # this module's eq. (12)
        self._keys: list[int | None] = [None] * instance.slots  # state key per slot
        self._classes: list[MachineClasses | None] = [None] * instance.slots  # machine classes per slot

    def plan(self, job: int, view: SlotView) -> JobPlan | None:
        inst = view.instance
        jobs, a, q = inst.jobs, int(inst.jobs.arrival[job]), self.levels[job]
        for t in self._prices.update(view.reserved, a).tolist():  # states of these slots changed
            self._keys[t] = self._classes[t] = None
        price = self._prices.price[a:]
        gamma_internal, servers_at_most_workers = self._thesis_rules(job)
        shape = JobShape(
            per_sample_internal=float(jobs.time_per_sample(True)[job]),
            per_sample_external=float(jobs.time_per_sample(False)[job]),
            batch=int(jobs.batch[job]),
            gamma=float(self.gamma_external[job]),
            worker_demand=jobs.worker_demand[job],
            ps_demand=jobs.ps_demand[job],
            gamma_internal=gamma_internal,
            servers_at_most_workers=servers_at_most_workers,
        )
        levels = np.arange(q + 1) * (jobs.workload[job] / q)
        grid = level_grid(shape, levels, self.reject_on_failure)  # the same in every slot state
        cache: dict[int, SlotCosts] = {}  # theta by slot state: identical states cost the same
        first_slot: dict[int, int] = {}  # the first slot of each state
        keys: list[int] = []  # the state of each slot asked for

        def theta(j: int) -> np.ndarray:
            key, free = self._keys[a + j], None  # residual capacities of only the slots asked for
            if key is None:
                free = view.free(a + j)
                key = self._keys[a + j] = state_digest(price[j], free)
            if key not in cache:
                free = view.free(a + j) if free is None else free
                if self._classes[a + j] is None:
                    self._classes[a + j] = machine_classes(price[j], free)
                cache[key] = slot_costs(
                    shape,
                    levels,
                    price[j],
                    free,
                    self.rounding,
                    (self.seed, job, key),
                    lazy=not self.config.round_all_levels,
                    classes=self._classes[a + j],
                    reject_on_failure=self.reject_on_failure,
                    grid=grid,
                )
                first_slot[key] = j
            keys.append(key)
            return cache[key].cost

        def refine(j: int, k: int) -> int | None:
            """Round (slot j, level k) if the DP's schedule uses it; every slot of that state changes."""
            return first_slot[keys[j]] if cache[keys[j]].refine(k) else None

        result = plan_levels(
            theta, jobs.utility_of(job, np.arange(inst.slots - a)), refine, stop_early=not self.config.round_all_levels
        )
        self._slots_skipped += inst.slots - a - result.reached
        for costs in cache.values():
            self._solves.extend(costs.external_solves)
            self._lp_solves += costs.lp_solves
        if result.completion < 0 or not result.payoff > 0:
            return None
        if any(cache[keys[j]].failed[result.levels[j]] for j in np.flatnonzero(result.levels)):
            self._rounding_rejects += 1
            return None
        H = inst.num_machines
        workers = np.zeros((inst.slots, H), dtype=np.int64)
        servers = np.zeros((inst.slots, H), dtype=np.int64)
        for j in np.flatnonzero(result.levels):
            opt = cache[keys[j]].options[int(result.levels[j])]
            assert opt is not None, "every level of a finite plan has an allocation"
            workers[a + j, opt.machines] = opt.workers
            servers[a + j, opt.machines] = opt.servers
        return JobPlan(workers=workers, servers=servers, completion=a + result.completion, payoff=result.payoff)

    def _thesis_rules(self, job: int) -> tuple[float | None, bool]:
        """JobShape's (gamma_internal, servers_at_most_workers): the thesis's (3.4) and (3.5), or none."""
        return (float(self.gamma_internal[job]), self.ps_at_most_workers) if self.thesis else (None, False)

    def summary(self) -> JSON:
        solves = self._solves
        attempts, lp_cost, best_cost, gains, integer_cost = (
            np.array([getattr(s, k) for s in solves], dtype=float)
            for k in ("attempts", "lp_cost", "best_cost", "gain", "integer_cost")
        )
        found = np.isfinite(best_cost)
        log_ratio = self.bounds.log_ratio()
        gains = gains if len(solves) else np.array([self.rounding.gain or 0.0])
        gain = self.rounding.gain if self.rounding.gain is not None else float(gains.max(initial=0.0))
        return {
            "external_solves": len(solves),
            "lp_solves": self._lp_solves,
            "slots_skipped": self._slots_skipped,
            "rounding_attempts_mean": float(attempts.mean()) if len(solves) else 0.0,
            "rounding_attempts_roundable_mean": float(attempts[found].mean()) if found.any() else None,
            "unroundable_share": float((~found).mean()) if len(solves) else None,
            "infeasible_solves": int((~found).sum()),
            "rounding_rejects": self._rounding_rejects,
            "lp_vs_rounded_ratio": float(np.mean(best_cost[found] / np.maximum(lp_cost[found], 1e-300)))
            if found.any()
            else None,
            # rounded cost over the integer program's optimum, over the solves with both (``integer_optimum``)
            "rounded_vs_integer_ratio": float(np.mean(best_cost[both] / np.maximum(integer_cost[both], 1e-300)))
            if (both := found & np.isfinite(integer_cost)).any()
            else None,
            "gain_min": float(gains.min()) if len(solves) else gain,
            "gain_max": float(gains.max()) if len(solves) else gain,
            "price_upper": self.bounds.upper.tolist(),
            "price_lower": self.bounds.lower,
            "price_lower_source": self.bounds.lower_source,
            "competitive_bound": competitive_bound(gain, self.rounding.delta, log_ratio),
        }


def make(config: Config, spec: RunShape) -> PDORS:
    """Build PD-ORS for a run; ``history`` bounds come from an independent draw of the same generator."""
    history = None
    if config.price_bounds == "history":
        from ..workload import generate

        history = generate(spec.workload, spec.machines, spec.jobs, spec.slots, spec.seed + HISTORY_SEED_OFFSET)
    return PDORS(config, history)
