"""Algorithms 2-4 written as literally as the paper states them: the yardstick for PD-ORS's fast path.

Used only by tests (tests/test_reference.py) and ``pdors bench``; slow by design. For job i arriving at a_i:

* Algorithm 2: for t~ = a_i .. T-1, lambda' = u_i(t~ - a_i) - Theta(t~, V_i); keep it if lambda' > lambda
  (lambda starts at 0, so ties go to the earliest t~ and the job is admitted iff lambda > 0).
* Algorithm 3, eq. (21): Theta(t~, V) = min over v = 0..V of theta(t~, v) + Theta(t~ - 1, V - v), by memoised
  recursion over (slot, remaining workload level); v is enumerated upwards with a strict ``<``, so ties go to
  the smallest v in the later slot. Theta(a_i - 1, 0) = 0 and Theta(a_i - 1, V > 0) = inf.
* Algorithm 4, theta(t, v), computed afresh for every (slot, level) it is asked for, with no cache:
  Case 1 (internal) loops over the machines one by one and keeps the cheapest feasible (ties to the lowest
  index); Case 2 (external) builds the LP relaxation of (23)-(26) + the ratio row from scratch on a new HiGHS
  instance and solves it at the covers of the levels below k whose LP PD-ORS solves, in increasing order, then
  at level k's (that sequence defines which optimum a degenerate LP gives, docs/MODEL.md "LP per level"), then
  rounds by (27)-(28) one attempt at a time, checking every constraint on the integer solution, until S
  feasible roundings or the attempt cap; the cheaper case wins (ties to internal).

What it shares with the fast path (``slot_cost.py`` and its parts, ``dynamic_program.py``) is what defines PD-ORS's
decisions rather than their speed, as docs/MODEL.md states it: the prices (eq. 12, ``prices.py``), the
machine classes and the disaggregation of the class LP's optimum (``external_lp.disaggregate``), G_delta
(``rounding.rounding_gain``), the LP cost rescaling, the bound that decides which levels' LPs are solved
(``external_lp.separable_bound``), and the rounding's random stream (a generator seeded by
(run seed, job, state digest, level); attempt j uses the j-th block of 2m uniforms: m worker draws, then m
PS draws). Everything the fast path does to be fast (caching by slot state, one LP model kept per state and
re-solved only where the DP needs it, the vectorised internal case and rounding, skipping roundings that cannot
succeed, skipping external solves a lower bound rules out, stopping the DP early) is absent here.
"""

from __future__ import annotations

import math
from functools import cache

import highspy
import numpy as np
from scipy import sparse

from ..highs_lp import highs_lp, new_highs
from ..model import Instance
from ..portable_math import dot
from ..primal_dual.config import RoundingConfig
from ..primal_dual.external_lp import rescaled_costs, rounded_cost, separable_bound, unit_price
from ..primal_dual.job import FIT_ATOL, JobShape, Option
from ..primal_dual.machine_classes import state_digest
from ..primal_dual.prices import prices
from ..primal_dual.rounding import rounding_gain
from ..solo import COVER_RTOL, workers_for
from .base import JobPlan, SlotView
from .pdors import PDORS, Config


def machine_classes(price: np.ndarray, free: np.ndarray) -> tuple[np.ndarray, list[int], np.ndarray]:
    """Machines with identical prices and residual capacities form a class, numbered by first member.

    Returns (class of each machine, first member of each class, members per class)."""
    index: dict[bytes, int] = {}
    member_class = np.empty(len(price), dtype=np.int64)
    first: list[int] = []
    for h in range(len(price)):
        key = np.concatenate([price[h], free[h]]).tobytes()
        if key not in index:
            index[key] = len(first)
            first.append(h)
        member_class[h] = index[key]
    return member_class, first, np.bincount(member_class)


def internal_case(job: JobShape, v: float, price: np.ndarray, free: np.ndarray) -> Option | None:
    """Case 1: all w = ceil(v (tau + 2 g gamma / (b^(i) F))) workers and s = ceil(w / gamma) PSs on one
    machine, feasible iff w <= F (eq. 4) and the machine has room (eq. 24); the cheapest machine wins."""
    w = int(workers_for(v, job.per_sample_internal))
    s = math.ceil(w / job.gamma)
    if w > job.batch:
        return None
    need = w * job.worker_demand + s * job.ps_demand
    best: Option | None = None
    for h in range(len(price)):
        if not np.all(need <= free[h] + FIT_ATOL):
            continue
        cost = float(unit_price(price[h], need))
        if best is None or cost < best.cost:
            best = Option(
                cost=cost, machines=np.array([h]), workers=np.array([w]), servers=np.array([s]), internal=True
            )
    return best


def external_lp(
    job: JobShape, demands: list[float], price: np.ndarray, free: np.ndarray
) -> tuple[tuple[np.ndarray, np.ndarray] | None, tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The LP relaxation of (23)-(26) plus gamma sum s >= sum w, over machine classes, built on a new HiGHS
    instance with the cover at ``demands[0]`` and solved cold, then re-solved warm with the cover at each later
    demand in turn: the optimum of the last one is returned. Where the LP's optimum is not unique, which one a
    level gets is fixed by this sequence (docs/MODEL.md, "LP per level"; see :func:`solved_before`).

    Variables: W_c, S_c (workers and PSs of class c in total). Rows: for each class and each resource the job
    uses, alpha^r W_c + beta^r S_c <= |c| (C^r - rho^r) (eq. 24 summed over the class); demand <= sum W <= F
    ((25)-(26)); gamma sum S - sum W >= 0. Costs p^w, p^s rescaled as in the fast path. Returns the class
    solution (W, S), clipped at 0, or None if the LP is infeasible, the classes (member_class, counts) and
    the class prices (p^w, p^s).
    """
    member_class, first, counts = machine_classes(price, free)
    n = len(first)
    p_w = np.array([unit_price(price[h], job.worker_demand) for h in first])
    p_s = np.array([unit_price(price[h], job.ps_demand) for h in first])
    cost, _ = rescaled_costs(np.concatenate([p_w, p_s]))
    rows, lower, upper = [], [], []
    for c, h in enumerate(first):
        for r in range(len(job.worker_demand)):
            if job.worker_demand[r] == 0 and job.ps_demand[r] == 0:
                continue
            row = np.zeros(2 * n)
            row[c], row[n + c] = job.worker_demand[r], job.ps_demand[r]
            rows.append(row)
            lower.append(-np.inf)
            upper.append(max(counts[c] * free[h, r], 0.0))
    cover = np.zeros(2 * n)
    cover[:n] = 1.0
    ratio = np.zeros(2 * n)
    ratio[:n], ratio[n:] = -1.0, job.gamma
    rows += [cover, ratio]
    lower += [demands[0], 0.0]
    upper += [job.batch, np.inf]
    a = sparse.csc_matrix(np.array(rows))
    highs = new_highs()
    highs.passModel(highs_lp(cost, len(rows), (a.indptr, a.indices, a.data), np.array(lower), np.array(upper)))
    highs.run()
    for demand in demands[1:]:
        highs.changeRowBounds(len(rows) - 2, demand, job.batch)
        highs.run()
    if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None, (member_class, counts), (p_w, p_s)
    x = np.asarray(highs.getSolution().col_value)
    return (x[:n].clip(min=0), x[n:].clip(min=0)), (member_class, counts), (p_w, p_s)


def disaggregate(
    job: JobShape, lp_sol: tuple[np.ndarray, np.ndarray], member_class: np.ndarray, counts: np.ndarray, free: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The class optimum spread over machines, class by class and machine by machine: each member, lowest
    index first, takes ``stretch`` times the class's mean point, the largest multiple (between 1 and the
    class size) that leaves room to round every entry up; the next one takes what is left."""
    cls_w, cls_s = lp_sol
    machines, ws, ss = [], [], []
    for c in range(len(counts)):
        if not (cls_w[c] > 1e-12 or cls_s[c] > 1e-12):
            continue
        members = np.flatnonzero(member_class == c)
        per_w, per_s = cls_w[c] / counts[c], cls_s[c] / counts[c]
        load = per_w * job.worker_demand + per_s * job.ps_demand
        round_up = (per_w > 0) * job.worker_demand + (per_s > 0) * job.ps_demand
        room = free[members[0]] - round_up
        stretch = min([room[r] / load[r] for r in range(len(load)) if load[r] > 0], default=np.inf)
        stretch = max(1.0, min(stretch, float(counts[c])))
        full = int(np.floor(counts[c] / stretch + 1e-12))  # members taking a whole stretch
        rest = counts[c] - full * stretch
        # the members beyond the shares take nothing: zip stops at the shorter list
        for h, share in zip(members, [stretch] * full + ([rest] if rest > 1e-9 else []), strict=False):
            machines.append(h)
            ws.append(per_w * share)
            ss.append(per_s * share)
    return np.array(machines, dtype=np.int64), np.array(ws), np.array(ss)


def round_solution(
    job: JobShape,
    demand: float,
    machines: np.ndarray,
    w_scaled: np.ndarray,
    s_scaled: np.ndarray,
    price: np.ndarray,
    free: np.ndarray,
    rounding: RoundingConfig,
    rng: np.random.Generator,
) -> tuple[int, int, Option | None]:
    """(27)-(28) one attempt at a time: round every entry up with probability its fractional part; keep the
    cheapest of the first S integer solutions that satisfy (24), (25), (26) and the ratio (ties to the
    earliest); stop after S of them or ``max_attempts`` attempts."""
    m = len(machines)
    w_floor, s_floor = np.floor(w_scaled), np.floor(s_scaled)
    p_w = np.array([unit_price(price[h], job.worker_demand) for h in machines])
    p_s = np.array([unit_price(price[h], job.ps_demand) for h in machines])
    attempts = feasible = 0
    best: Option | None = None
    while feasible < rounding.feasible_solutions and attempts < rounding.max_attempts:
        attempts += 1
        draws = rng.random(2 * m)
        w = w_floor + (draws[:m] < w_scaled - w_floor)
        s = s_floor + (draws[m:] < s_scaled - s_floor)
        load = w[:, None] * job.worker_demand + s[:, None] * job.ps_demand
        if not (
            np.all(load <= free[machines] + FIT_ATOL)
            and demand <= w.sum() <= job.batch
            and job.gamma * s.sum() >= w.sum()
            and s.sum() > 0
        ):
            continue
        feasible += 1
        cost = rounded_cost(w, s, p_w, p_s)
        if best is None or cost < best.cost:
            keep = (w > 0) | (s > 0)
            best = Option(
                cost=cost,
                machines=machines[keep],
                workers=w[keep].astype(np.int64),
                servers=s[keep].astype(np.int64),
                internal=False,
            )
    return attempts, feasible, best


def external_case(
    job: JobShape,
    demands: list[float],
    price: np.ndarray,
    free: np.ndarray,
    rounding: RoundingConfig,
    rng: np.random.Generator,
) -> tuple[Option | None, float]:
    """Case 2 at cover ``demands[-1]``: LP relaxation (Step 8; solved after ``demands[:-1]``, :func:`external_lp`),
    scaled by G_delta (Step 9), randomly rounded (Steps 10-11). Returns the rounding (None if none is feasible)
    and the LP's cost (inf if the LP is infeasible)."""
    demand = demands[-1]
    lp_sol, (member_class, counts), (p_w, p_s) = external_lp(job, demands, price, free)
    if lp_sol is None:
        return None, math.inf
    machines, w_bar, s_bar = disaggregate(job, lp_sol, member_class, counts, free)
    g = rounding_gain(rounding, job, demand, free)
    lp_cost = float(dot(lp_sol[0], p_w) + dot(lp_sol[1], p_s))
    return round_solution(job, demand, machines, w_bar * g, s_bar * g, price, free, rounding, rng)[2], lp_cost


def solved_before(job: JobShape, levels: np.ndarray, k: int, price: np.ndarray, free: np.ndarray) -> list[float]:
    """The covers D of the levels below ``k`` whose LP PD-ORS solves before level k's in a slot state, in increasing
    order: those where a lower bound on any external cost (:func:`~pdors.primal_dual.external_lp.separable_bound`)
    is below the internal cost. The others can never beat Case 1, so their LPs are not part of the sequence."""
    _, first, counts = machine_classes(price, free)
    p_w = np.array([unit_price(price[h], job.worker_demand) for h in first])
    p_s = np.array([unit_price(price[h], job.ps_demand) for h in first])
    covers = []
    for j in range(1, k):
        cover = float(levels[j] * job.per_sample_external * (1.0 - COVER_RTOL))
        internal = internal_case(job, float(levels[j]), price, free)
        bound = separable_bound(job, np.array([cover]), p_w, p_s, free[first], counts)[0]
        if bound < (math.inf if internal is None else internal.cost):
            covers.append(cover)
    return covers


def theta(
    job: JobShape,
    levels: np.ndarray,
    k: int,
    price: np.ndarray,
    free: np.ndarray,
    rounding: RoundingConfig,
    seed_key: tuple[int, ...],
    reject_on_failure: bool = False,
) -> Option | float | None:
    """Algorithm 4 for v = ``levels[k]`` samples (workload level k) in one slot: the cheaper of Case 1 and Case 2.
    With ``reject_on_failure``, an external case cheaper than Case 1 by its LP but with no feasible
    rounding gives that LP cost (a float): a schedule using it discards the job."""
    v = float(levels[k])
    internal = internal_case(job, v, price, free)
    rng = np.random.Generator(np.random.PCG64([*seed_key, k]))
    demands = [*solved_before(job, levels, k, price, free), v * job.per_sample_external * (1.0 - COVER_RTOL)]
    external, lp_cost = external_case(job, demands, price, free, rounding, rng)
    if external is not None and (internal is None or external.cost < internal.cost):
        return external
    if external is None and reject_on_failure and lp_cost < (math.inf if internal is None else internal.cost):
        return lp_cost
    return internal


def plan_job(job: int, view: SlotView, policy: PDORS) -> JobPlan | None:
    """Algorithms 2-3 for one arriving job, with theta from :func:`theta`."""
    inst: Instance = view.instance
    jobs, a, q = inst.jobs, int(inst.jobs.arrival[job]), policy.levels[job]
    price = prices(policy.bounds, view.reserved[a:], inst.cluster.capacity)
    free = view.free(slice(a, None))
    shape = JobShape(
        per_sample_internal=float(jobs.time_per_sample(True)[job]),
        per_sample_external=float(jobs.time_per_sample(False)[job]),
        batch=int(jobs.batch[job]),
        gamma=int(jobs.gamma[job]),
        worker_demand=jobs.worker_demand[job],
        ps_demand=jobs.ps_demand[job],
    )
    grid = np.arange(q + 1) * (jobs.workload[job] / q)  # the fast path's levels, bit for bit

    @cache
    def slot_theta(j: int, k: int) -> tuple[float, Option | None]:
        if k == 0:
            return 0.0, None
        key = (policy.seed, job, state_digest(price[j], free[j]))
        opt = theta(shape, grid, k, price[j], free[j], policy.rounding, key, policy.reject_on_failure)
        if isinstance(opt, float):  # failed rounding: costed at the LP, marked
            return opt, None
        return (opt.cost, opt) if opt is not None else (math.inf, None)

    @cache
    def big_theta(j: int, k: int) -> tuple[float, tuple[int, ...]]:
        """Theta over slots a_i .. a_i + j for k levels, and the levels per slot (eq. 21)."""
        if j < 0:
            return (0.0, ()) if k == 0 else (math.inf, ())
        best, levels = math.inf, tuple[int, ...]()
        for v in range(k + 1):
            cost_v = slot_theta(j, v)[0]
            rest, rest_levels = big_theta(j - 1, k - v)
            if cost_v + rest < best:
                best, levels = cost_v + rest, (*rest_levels, v)
        return best, levels

    utility = jobs.utility_of(job, np.arange(inst.slots - a))
    lam, plan = 0.0, None
    for j in range(inst.slots - a):  # Algorithm 2, t~ = a_i + j
        total, levels = big_theta(j, q)
        payoff = float(utility[j] - total)
        if payoff > lam:
            lam, plan = payoff, (j, levels)
    if plan is None:
        return None
    done, levels = plan
    if any(k and slot_theta(j, k)[1] is None for j, k in enumerate(levels)):
        policy._rounding_rejects += 1  # Section V: the job is discarded
        return None
    workers = np.zeros((inst.slots, inst.num_machines), dtype=np.int64)
    servers = np.zeros_like(workers)
    for j, k in enumerate(levels):
        if k:
            opt = slot_theta(j, k)[1]
            assert opt is not None  # checked above: no level of the plan failed to round
            workers[a + j, opt.machines] = opt.workers
            servers[a + j, opt.machines] = opt.servers
    return JobPlan(workers=workers, servers=servers, completion=a + done, payoff=lam)


class ReferencePDORS(PDORS):
    """PD-ORS with :func:`plan_job` in place of the fast path (same config, bounds and seed)."""

    def __init__(self, config: Config, history: Instance | None = None):
        super().__init__(config, history, name="pdors-reference")

    def plan(self, job: int, view: SlotView) -> JobPlan | None:
        return plan_job(job, view, self)
