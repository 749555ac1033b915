"""Algorithm 4: theta(t, v), the cheapest allocation that processes v samples of one job in one slot.

Computed for every workload level v_k = k V_i / Q (k = 1..Q) of one slot *state* (its prices p_h^r[t] and
residual capacities C_h^r - rho_h^r[t]) at once:

* internal (Case 1): all workers and PSs on one machine, w = ceil(v (tau + 2 g gamma / (b^(i) F))),
  s = ceil(w / gamma); feasible iff w <= F (eq. 4) and the machine has room (eq. 24); the cheapest such
  machine, ties to the lowest index.
* external (Case 2): the LP relaxation of eqs. (23)-(26) plus the ratio row gamma * sum s >= sum w [choice:
  (23)-(26) as printed have no PS constraint], scaled by G_delta and randomly rounded by eqs. (27)-(28);
  rounding repeats until ``feasible_solutions`` (S) integer solutions pass every constraint or
  ``max_attempts`` is reached; the cheapest feasible one is kept.
* theta = the cheaper of the two (ties to internal).

Machines with identical prices and residual capacities form a class; the LP is solved over classes (an
exact reformulation, since a sum of copies of one polytope is its scaled copy) and its solution is
disaggregated onto machines by filling the lowest-indexed members first, which yields a vertex-like
solution of the machine-level LP. The external case is skipped, exactly, when
``D (min_h p^w_h + min_h p^s_h / gamma)`` (a lower bound on any external cost) is not below the internal
cost, and when D > F makes it infeasible.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import highspy
import numpy as np

from .gain import gain_eq29, gain_eq30

FIT_ATOL = 1e-9
ROUNDING_BATCH = 64        # first batch of rounding attempts; batches double up to ROUNDING_BATCH_MAX
ROUNDING_BATCH_MAX = 1024
COST_RANGE = 1e12          # LP costs are rescaled to [1, COST_RANGE]: prices start near L ~ 1e-15,
                           # below HiGHS's tolerances, which would make every feasible point "optimal"


@dataclass(frozen=True)
class JobShape:
    """The per-job constants Algorithm 4 needs."""

    per_sample_internal: float
    per_sample_external: float
    batch: int
    gamma: int
    worker_demand: np.ndarray
    ps_demand: np.ndarray


@dataclass(frozen=True)
class Rounding:
    """How the external case rounds: a fixed ``gain`` or one computed per solve from ``delta``."""

    gain: float | None
    delta: float | None
    theorem: int = 29          # 29: G <= 1 from W_2 (Theorem 3); 30: G > 1 from W_1 (Theorem 4)
    feasible_solutions: int = 5
    max_attempts: int = 5000


@dataclass
class Option:
    """One slot's allocation for one level: machine indices with their worker and PS counts."""

    cost: float
    machines: np.ndarray
    workers: np.ndarray
    servers: np.ndarray
    internal: bool


@dataclass
class SlotCosts:
    """theta(t, v_k) for k = 0..Q (cost[0] = 0) and the allocation behind each finite entry."""

    cost: np.ndarray
    options: list
    external_solves: list = field(default_factory=list)   # (attempts, feasible, lp_cost, best_cost, gain)


class LinearProgram:
    """A reusable HiGHS instance: load one slot state's LP, then re-solve it warm for each cover bound."""

    def __init__(self) -> None:
        self.highs = highspy.Highs()
        self.highs.setOptionValue("output_flag", False)

    def load(self, cost, a_matrix, row_lower, row_upper) -> None:
        lp = highspy.HighsLp()
        n = len(cost)
        lp.num_col_, lp.num_row_ = n, a_matrix.shape[0]
        positive = cost[cost > 0]
        scale = positive.min() if positive.size else 1.0
        lp.col_cost_ = np.minimum(cost / scale, COST_RANGE)
        lp.col_lower_ = np.zeros(n)
        lp.col_upper_ = np.full(n, np.inf)
        lp.row_lower_, lp.row_upper_ = row_lower, row_upper
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = _csc(a_matrix)
        self.highs.clearModel()
        self.highs.passModel(lp)

    def solve_with_row_bounds(self, row: int, lower: float, upper: float) -> np.ndarray | None:
        self.highs.changeRowBounds(row, lower, upper)
        self.highs.run()
        if self.highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        return np.asarray(self.highs.getSolution().col_value)


def _csc(a: np.ndarray):
    nz = a != 0
    counts = nz.sum(axis=0)
    start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    rows, cols = np.nonzero(nz.T)  # column-major order
    return start, cols.astype(np.int32), a.T[nz.T].astype(float)


def state_digest(prices: np.ndarray, free: np.ndarray) -> int:
    """A stable 64-bit fingerprint of a slot state (seeds the rounding and keys caches)."""
    h = hashlib.blake2b(digest_size=8)
    h.update(np.ascontiguousarray(prices, dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(free, dtype=np.float64).tobytes())
    return int.from_bytes(h.digest(), "little")


def slot_costs(job: JobShape, levels: np.ndarray, prices: np.ndarray, free: np.ndarray,
               rounding: Rounding, seed_key: tuple, lp: LinearProgram) -> SlotCosts:
    """theta for workload ``levels`` (samples, levels[0] = 0) in a slot with ``prices``/``free`` [H, R].

    ``seed_key`` (ints) seeds the randomised rounding together with the level, so the outcome is a
    deterministic function of the job, the slot state and the level.
    """
    q = len(levels)
    cost = np.full(q, np.inf)
    cost[0] = 0.0
    options: list = [None] * q
    classes, first, inverse, counts = np.unique(np.hstack([prices, free]), axis=0, return_index=True,
                                                return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    order = np.argsort(first)          # classes by lowest member index, for deterministic ties
    first, counts = first[order], counts[order]
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    member_class = rank[inverse]
    cls_prices, cls_free = prices[first], free[first]

    # Case 1 (internal), all levels and classes at once.
    w_int = np.ceil(levels * job.per_sample_internal)
    s_int = np.ceil(w_int / job.gamma)
    need = w_int[:, None] * job.worker_demand + s_int[:, None] * job.ps_demand       # [Q, R]
    fits = np.all(need[None, :, :] <= cls_free[:, None, :] + FIT_ATOL, axis=2)       # [C, Q]
    fits &= (w_int <= job.batch)[None, :]
    fits[:, 0] = False
    int_cost = np.where(fits, cls_prices @ need.T, np.inf)                             # [C, Q]
    best_cls = np.argmin(int_cost, axis=0)
    internal = int_cost[best_cls, np.arange(q)]
    for k in np.flatnonzero(np.isfinite(internal)):
        c = best_cls[k]
        cost[k] = internal[k]
        options[k] = Option(float(internal[k]), np.array([first[c]]), np.array([int(w_int[k])]),
                            np.array([int(s_int[k])]), True)

    # Case 2 (external).
    p_w, p_s = cls_prices @ job.worker_demand, cls_prices @ job.ps_demand
    per_worker_floor = p_w.min() + p_s.min() / job.gamma
    demand_ext = levels * job.per_sample_external
    solves = []
    loaded = False
    for k in range(1, q):
        d = demand_ext[k]
        if d > job.batch or d * per_worker_floor >= cost[k]:
            continue
        if not loaded:
            _load_external_lp(job, p_w, p_s, cls_free, counts, lp)
            loaded = True
        lp_sol = _solve_external_lp(d, job, len(counts), lp)
        if lp_sol is None:
            continue
        machines, w_bar, s_bar = _disaggregate(job, lp_sol, member_class, counts, free)
        g = _gain(rounding, job, d, free)
        rng = np.random.Generator(np.random.PCG64([*seed_key, k]))
        found = _round(job, d, machines, w_bar * g, s_bar * g, prices, free, rounding, rng)
        lp_cost = float(p_w @ lp_sol[0] + p_s @ lp_sol[1])
        attempts, feasible, best = found
        solves.append((attempts, feasible, lp_cost, best.cost if best else np.inf, g))
        if best is not None and best.cost < cost[k]:
            cost[k] = best.cost
            options[k] = best
    return SlotCosts(cost, options, solves)


def _load_external_lp(job, p_w, p_s, cls_free, counts, lp) -> None:
    """LP relaxation of (23)-(26) + ratio over machine classes; the cover bound is set per level."""
    n = len(counts)
    used = (job.worker_demand > 0) | (job.ps_demand > 0)
    alpha, beta = job.worker_demand[used], job.ps_demand[used]
    cap = (cls_free[:, used] * counts[:, None]).clip(min=0)                   # [C, R']
    r = alpha.size
    a = np.zeros((n * r + 2, 2 * n))
    for i in range(n):                                                        # eq. (24) per class
        a[i * r:(i + 1) * r, i], a[i * r:(i + 1) * r, n + i] = alpha, beta
    a[n * r, :n] = 1.0                                                        # D <= sum w <= F, (25)-(26)
    a[n * r + 1, :n], a[n * r + 1, n:] = -1.0, job.gamma                      # gamma sum s - sum w >= 0
    lower = np.concatenate([np.full(n * r, -np.inf), [0.0, 0.0]])
    upper = np.concatenate([cap.ravel(), [job.batch, np.inf]])
    lp.load(np.concatenate([p_w, p_s]), a, lower, upper)


def _solve_external_lp(demand, job, n, lp):
    """Per-class (W, S) of the LP optimum with cover bound ``demand``, or None if infeasible."""
    rows = lp.highs.getNumRow()
    sol = lp.solve_with_row_bounds(rows - 2, demand, job.batch)
    if sol is None:
        return None
    return sol[:n].clip(min=0), sol[n:].clip(min=0)


def _disaggregate(job, lp_sol, member_class, counts, free):
    """Spread each class's (W, S) over its machines, filling the lowest-indexed ones first.

    Each machine gets a multiple of the class's mean point, as large as leaves room to round every
    entry up: rounding then cannot break capacity (24), only the cover (26) and the ratio, whose
    sums are met about half the time each at G = 1. A class with too few machines for that falls
    back to the even split (rounding up may then not fit).
    """
    cls_w, cls_s = lp_sol
    machines, ws, ss = [], [], []
    for c in np.flatnonzero((cls_w > 1e-12) | (cls_s > 1e-12)):
        members = np.flatnonzero(member_class == c)
        per = np.array([cls_w[c], cls_s[c]]) / counts[c]
        load = per[0] * job.worker_demand + per[1] * job.ps_demand
        round_up = (per[0] > 0) * job.worker_demand + (per[1] > 0) * job.ps_demand
        room = free[members[0]] - round_up
        with np.errstate(divide="ignore", invalid="ignore"):
            stretch = np.min(np.where(load > 0, room / load, np.inf))
        stretch = max(1.0, min(stretch, float(counts[c])))
        full = int(np.floor(counts[c] / stretch + 1e-12))
        rest = counts[c] - full * stretch
        share = [stretch] * full + ([rest] if rest > 1e-9 else [])
        for m, f in zip(members, share):
            machines.append(m)
            ws.append(per[0] * f)
            ss.append(per[1] * f)
    return np.array(machines, dtype=np.int64), np.array(ws), np.array(ss)


def _gain(rounding: Rounding, job: JobShape, demand: float, free: np.ndarray) -> float:
    if rounding.gain is not None:
        return rounding.gain
    if rounding.theorem == 30:
        return gain_eq30(rounding.delta, demand)                               # W_1 = V_i[t] (tau + ...)
    usable = free[np.all(free > 0, axis=1)]
    ratios = [float(job.batch)]
    for demand_vec in (job.worker_demand, job.ps_demand):
        pos = demand_vec > 0
        if usable.size and pos.any():
            ratios.append(float((usable[:, pos] / demand_vec[pos]).min()))
    return gain_eq29(rounding.delta, min(ratios), free.shape[1], free.shape[0])  # W_2


def _round(job, demand, machines, w_scaled, s_scaled, prices, free, rounding, rng):
    """Randomised rounding (27)-(28) until S feasible solutions or the attempt cap; the cheapest wins.

    Each machine's four outcomes (worker count down/up x PS count down/up) are checked against its capacity
    once; an attempt is then a lookup per machine instead of a load computation per resource.
    """
    w_floor, s_floor = np.floor(w_scaled), np.floor(s_scaled)
    w_frac, s_frac = w_scaled - w_floor, s_scaled - s_floor
    room = free[machines] + FIT_ATOL                                          # [m, R]
    fits = np.stack([np.all((w_floor + dw)[:, None] * job.worker_demand
                            + (s_floor + ds)[:, None] * job.ps_demand <= room, axis=1)
                     for ds in (0, 1) for dw in (0, 1)], axis=1)            # [m, 4], index dw + 2 ds
    critical = np.flatnonzero(~fits.all(axis=1))
    fits_critical = fits[critical]
    p_w = prices[machines] @ job.worker_demand
    p_s = prices[machines] @ job.ps_demand
    base_w, base_s = w_floor.sum(), s_floor.sum()
    attempts = feasible = 0
    best_cost, best = np.inf, None
    m = len(machines)
    size = ROUNDING_BATCH
    while feasible < rounding.feasible_solutions and attempts < rounding.max_attempts:
        # Attempt j always uses the j-th block of 2m draws, so the batch size changes no outcome.
        batch = min(size, rounding.max_attempts - attempts)
        size = min(2 * size, ROUNDING_BATCH_MAX)
        draws = rng.random((batch, 2 * m))
        up_w, up_s = draws[:, :m] < w_frac, draws[:, m:] < s_frac
        wsum, ssum = base_w + up_w.sum(axis=1), base_s + up_s.sum(axis=1)
        ok = (wsum <= job.batch) & (wsum >= demand) & (job.gamma * ssum >= wsum) & (ssum > 0)
        if critical.size:
            outcome = up_w[:, critical] + 2 * up_s[:, critical]
            ok &= np.take_along_axis(fits_critical[None], outcome[..., None], axis=2)[..., 0].all(axis=1)
        idx = np.flatnonzero(ok)
        take = idx[: rounding.feasible_solutions - feasible]
        attempts += int(take[-1]) + 1 if take.size == rounding.feasible_solutions - feasible else batch
        feasible += take.size
        if take.size:
            w, s = w_floor + up_w[take], s_floor + up_s[take]
            costs = w @ p_w + s @ p_s
            j = int(np.argmin(costs))
            if costs[j] < best_cost:
                best_cost, best = float(costs[j]), (w[j], s[j])
    if best is None:
        return attempts, 0, None
    w, s = best
    keep = (w > 0) | (s > 0)
    option = Option(best_cost, machines[keep], w[keep].astype(np.int64), s[keep].astype(np.int64), False)
    return attempts, feasible, option
