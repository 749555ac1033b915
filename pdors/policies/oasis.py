"""OASiS, the fourth baseline of the paper's Section V (Bao, Peng, Wu, Li, "Online Job Scheduling in
Distributed Machine Learning Clusters", INFOCOM'18, arXiv 1801.00936; paper ref. [6]).

Primal-dual online admission like PD-ORS (Algorithm 1), with OASiS's defining restriction: workers and PSs
live on two disjoint halves of the machines (paper Section V: "half of the machines host parameter servers and
the other half host workers"), so every allocation is external (Fact 1) and runs at rate b_i^(e). For a job
arriving at a_i:

* prices: eq. (12) on each half separately, with bounds U^r, L of eqs. (13)-(14) in PD-ORS's form restricted to
  that half (its machines, and the demand of the task it hosts) [choice: OASiS's own constants could not be
  confirmed; see docs/MODEL.md];
* per-slot cost of y workers: y workers on the worker half and ceil(y / gamma) PSs on the PS half, each filled
  greedily onto the cheapest machines at the slot's current prices (:class:`Greedy`); y <= F_i (eq. 4);
* the DP C(t, d) = min_y C(t - 1, d - y) + cost_t(y) over the same discretised workload levels as PD-ORS
  (``plan_levels``; level k needs y = ceil(k V_i / Q * (tau + 2 g gamma / (b^(e) F))) workers); the best
  completion slot maximises u_i(t~ - a_i) - cost, and the job is admitted iff that payoff is > 0.

Under the thesis's model the PS count is ceil(y / min(gamma, B_i / b^(e))) (3.4), and a level with more PSs
than workers is infeasible (3.5).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..config import JSON
from ..model import Instance
from ..portable_math import dot
from ..primal_dual.config import PrimalDualConfig
from ..primal_dual.dynamic_program import plan_levels
from ..primal_dual.prices import PriceBounds, SlotPrices, price_bounds
from ..thesis import ps_ratio
from .base import JobPlan, PlanningPolicy, RunShape, SlotView
from .placement import ps_count, room


@dataclass(frozen=True)
class Config(PrimalDualConfig):
    pass


def halves(machines: int) -> tuple[np.ndarray, np.ndarray]:
    """(worker machines, PS machines): the first ceil(H / 2) host workers, the rest PSs [choice]."""
    split = machines - machines // 2
    return np.arange(split), np.arange(split, machines)


def half_bounds(instance: Instance, machines: np.ndarray, demand: np.ndarray, utility_floor: float) -> PriceBounds:
    """U^r and L (eqs. 13-14, PD-ORS's form) for one half: the jobs as if each task were one of the half's
    tasks (per-task demand ``demand`` [I, R], no second task type) at the external rate, on that half's
    machines. With all demand zero for a resource, the price stays at L (as in PD-ORS)."""
    jobs = instance.jobs
    as_half = replace(jobs, worker_demand=demand, ps_demand=np.zeros_like(demand), bw_internal=jobs.bw_external)
    return price_bounds(as_half, instance.cluster.capacity[machines], instance.slots, utility_floor)


class Greedy:
    """Identical tasks filled onto the cheapest machines first at fixed unit prices (ties to the lowest index)."""

    def __init__(self, price: np.ndarray, free: np.ndarray, demand: np.ndarray, limit: int):
        unit = dot(price, demand)
        k = room(free, demand, limit)
        order = np.argsort(unit, kind="stable")
        self.order = order[k[order] > 0]
        self.room = k[self.order]
        self.unit = unit[self.order]
        self.filled = np.cumsum(self.room)  # tasks placed once machine j is full
        self.spent = np.cumsum(self.room * self.unit)

    def cost(self, tasks: np.ndarray) -> np.ndarray:
        """Cost of ``tasks`` (array of counts) each; inf where they do not fit."""
        if not self.order.size:
            return np.where(tasks == 0, 0.0, np.inf)
        j = np.minimum(np.searchsorted(self.filled, tasks, side="left"), len(self.filled) - 1)
        before_tasks = self.filled[j] - self.room[j]
        before_cost = self.spent[j] - self.room[j] * self.unit[j]
        cost = before_cost + (tasks - before_tasks) * self.unit[j]
        return np.where(tasks > self.filled[-1], np.inf, np.where(tasks == 0, 0.0, cost))

    def counts(self, tasks: int, machines: int) -> np.ndarray:
        """Tasks per machine (indices within the half) for ``tasks`` tasks."""
        out = np.zeros(machines, dtype=np.int64)
        out[self.order] = np.clip(tasks - (self.filled - self.room), 0, self.room)
        return out


class OASiS(PlanningPolicy):
    name = "oasis"

    def __init__(self, config: Config):
        self.config = config

    def reset(self, instance: Instance, seed: int) -> None:
        jobs = instance.jobs
        self.worker_half, self.ps_half = halves(instance.num_machines)
        floor = self.config.utility_floor
        self.bounds_w = half_bounds(instance, self.worker_half, jobs.worker_demand, floor)
        self.bounds_s = half_bounds(instance, self.ps_half, jobs.ps_demand, floor)
        self.gamma = ps_ratio(instance, False)  # gamma_i; under the thesis's (3.4) also B_i / b_i^(e)
        cap = instance.cluster.capacity
        self.prices_w = SlotPrices(self.bounds_w, cap[self.worker_half])
        self.prices_s = SlotPrices(self.bounds_s, cap[self.ps_half])
        self.payoffs: list[float] = []  # best payoff of every decided job (admitted iff > 0)

    def plan(self, job: int, view: SlotView) -> JobPlan | None:
        inst = view.instance
        jobs, a, q = inst.jobs, int(inst.jobs.arrival[job]), self.config.workload_levels
        W, S = self.worker_half, self.ps_half
        alpha, beta = jobs.worker_demand[job], jobs.ps_demand[job]
        gamma, batch = float(self.gamma[job]), int(jobs.batch[job])
        self.prices_w.update(view.reserved[:, W], a)
        self.prices_s.update(view.reserved[:, S], a)
        price_w, price_s = self.prices_w.price[a:], self.prices_s.price[a:]
        free = view.free(slice(a, None))
        levels = np.arange(q + 1) * (jobs.workload[job] / q)
        workers = np.ceil(levels * jobs.time_per_sample(False)[job]).astype(np.int64)  # always external
        servers = ps_count(workers, gamma).astype(np.int64)
        allowed = (workers <= batch) & (
            (inst.ps_bandwidth is None) | (not inst.ps_at_most_workers) | (servers <= workers)
        )  # eq. 4; (3.5)
        fillers = []

        def theta(j: int) -> np.ndarray:
            """Slot j's cost per level; asked for only while a later completion can still win."""
            fw = Greedy(price_w[j], free[j, W], alpha, batch)
            fs = Greedy(price_s[j], free[j, S], beta, int(ps_count(batch, gamma)))
            fillers.append((fw, fs))
            return np.where(allowed, fw.cost(np.minimum(workers, batch)) + fs.cost(servers), np.inf)

        result = plan_levels(theta, jobs.utility_of(job, np.arange(inst.slots - a)))
        self.payoffs.append(result.payoff)
        if result.completion < 0 or not result.payoff > 0:
            return None
        w_plan = np.zeros((inst.slots, inst.num_machines), dtype=np.int64)
        s_plan = np.zeros_like(w_plan)
        for j in np.flatnonzero(result.levels):
            fw, fs = fillers[j]
            k = result.levels[j]
            w_plan[a + j, W] = fw.counts(int(workers[k]), len(W))
            s_plan[a + j, S] = fs.counts(int(servers[k]), len(S))
        return JobPlan(workers=w_plan, servers=s_plan, completion=a + result.completion, payoff=result.payoff)

    def summary(self) -> JSON:
        payoff = np.array(self.payoffs)
        return {
            "decided": int(payoff.size),
            "admitted": int((payoff > 0).sum()),
            "worker_machines": int(self.worker_half.size),
            "ps_machines": int(self.ps_half.size),
            "price_upper_workers": self.bounds_w.upper.tolist(),
            "price_upper_ps": self.bounds_s.upper.tolist(),
            "price_lower_workers": self.bounds_w.lower,
            "price_lower_ps": self.bounds_s.lower,
        }


def make(config: Config, spec: RunShape) -> OASiS:
    return OASiS(config)
