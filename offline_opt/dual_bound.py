"""A certified upper bound on the offline DMLRS optimum at any size: the Lagrangian dual of R-DMLRS (paper Section IV).

For prices ``p[t, c, r] >= 0`` on (slot, machine class, resource),

    D(p) = sum_i max(0, max_k [u_i(k - a_i) - L_ik(p)]) + sum_{t,c,r} p[t,c,r] n_c C_c^r  >=  OPT,

where ``L_ik(p)`` is at most the cost ``p . usage`` of every schedule of job i alone that completes by slot k
(weak duality: for the optimal schedule, OPT = sum_i (u_i - p . usage_i) + p . sum_i usage_i, and the last
term is at most ``p . capacity``). The proof, one line per relaxation, is in docs/OFFLINE_OPT.md; in short:

* machines of one class are pooled (capacity n_c C_c, one price per class);
* an external allocation pays, per worker and per PS, the cheapest class that can hold one (not its real spread);
* a slot's options are the job's integer allocations: W workers with ceil(W / gamma) PSs (surplus PSs only
  cost), internal on one machine of class c (W <= ``w_internal[i, c]``) or external (W <= ``w_external[i]``);
  restarts lose nothing;
* the job must process V_i (1 - 1e-9) samples by k, below what any real completion needs in floating point;
* ``L_ik(p) = mu V'_i - sum_{t = a_i..k} max_o (mu sigma_o - kappa_to(p))`` for ANY ``mu >= 0`` (o ranges over the
  slot's options and idling): every schedule's cost is at least that (sum over its slots of
  ``kappa >= mu sigma - max_o(...)``, and its samples sum to >= V'). ``mu`` is the water-filling slope, at which
  ``L_ik`` equals the least cost of the per-slot convex hulls of the options.

The prices come from column generation on the LP dual of the pooled, per-job-schedule R-DMLRS: a HiGHS master
LP (one convexity row per job, one capacity row per (t, c, r)) whose duals are the prices; the pricing oracle
is the water-filling above, each job's best (k, fractional schedule) a column. Every round's prices give a valid
D; the smallest is kept. The certified value adds an explicit rounding margin (module constant, argued in
docs/OFFLINE_OPT.md) to D evaluated in float64 at the final prices. A short best-first branching on fractional
admissions and completion slots then tightens it (every schedule lies in some leaf; OPT <= the largest leaf bound).
Every limit on this work counts it (rounds, leaves), never seconds: the bound of an instance does not depend on the
machine's load.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from pdors.config import JSON
from pdors.errors import InputError
from pdors.highs_lp import new_highs
from pdors.model import Instance

from .bounds import MachineClasses, count_limits

WORKLOAD_SLACK = 1e-9  # V' = V (1 - 1e-9): below the validator's V (1 - 1e-12) less any float64 sum's error
ROUNDING_MARGIN = 1e-9  # relative to the magnitude of D's terms; 8x the float64 error bound of <= 1e6 operations
MAX_OPERATIONS = 10**6  # the margin's argument holds while a term sums fewer values than this
# Leaves of the admission branching: at Fig. 9's size (H = 30, I = 100, T = 80) 32 leaves take ~2.5 s of CPU
BRANCH_LEAVES = 32


@dataclass(frozen=True, kw_only=True)
class Options:
    """Each job's per-slot options, fixed for the instance (only their costs change with the prices).

    Candidate 0 is idling; then per machine class c an internal allocation of ``g floor(N / g)`` and of ``N =
    w_internal[i, c]`` workers; then the same two for an external allocation. These are the only vertices the lower
    convex hull of a mode's (samples, cost) points can have: cost(W) = a W + b ceil(W / g) lies on the line of
    slope a + b / g at multiples of g and above it elsewhere, so the hull is 0 -> g floor(N / g) -> N."""

    classes: MachineClasses
    sigma: np.ndarray  # [I, P] samples per slot (0 where unusable)
    workers: np.ndarray  # [I, P]
    servers: np.ndarray  # [I, P] ceil(workers / gamma)
    klass: np.ndarray  # [P] machine class of an internal candidate, -1 for external / idle
    worker_ok: np.ndarray  # [I, C] a worker of i fits a machine of class c
    server_ok: np.ndarray  # [I, C] a PS of i fits a machine of class c
    target: np.ndarray  # [I] V'
    utility: np.ndarray  # [I, T] u_i(k - a_i) where job i can complete by k, else -inf
    arrival: np.ndarray  # [I]
    alpha: np.ndarray  # [I, R]
    beta: np.ndarray  # [I, R]
    capacity: np.ndarray  # [C, R] capacity of a class: n_c C_c

    @property
    def slots(self) -> int:
        return int(self.utility.shape[1])


def options(instance: Instance) -> Options:
    jobs, lim = instance.jobs, count_limits(instance)
    C, R = lim.classes.capacity.shape
    if instance.num_jobs + instance.slots * (C * R + 1) + 64 > MAX_OPERATIONS:
        raise InputError(f"dual bound: I + T (C R + 1) must stay below {MAX_OPERATIONS} for its rounding margin")
    gamma = jobs.gamma[:, None]
    rate_int = 1.0 / jobs.time_per_sample(True)
    rate_ext = 1.0 / jobs.time_per_sample(False)
    tops = np.concatenate([lim.w_internal, lim.w_external[:, None]], axis=1)  # [I, C + 1]
    workers = np.concatenate(
        [np.zeros((len(jobs), 1), np.int64), np.stack([tops // gamma * gamma, tops], 2).reshape(len(jobs), -1)], 1
    )
    klass = np.concatenate([[-1], np.repeat(np.append(np.arange(C), -1), 2)])
    rate = np.where(klass[None, :] >= 0, rate_int[:, None], rate_ext[:, None])
    sigma = workers * rate
    V = jobs.workload * (1.0 - WORKLOAD_SLACK)
    k = np.arange(instance.slots)
    reach = (k[None, :] - jobs.arrival[:, None] + 1) * sigma.max(axis=1)[:, None]  # most samples by slot k
    can = (k[None, :] >= jobs.arrival[:, None]) & (reach >= V[:, None])
    duration = np.maximum(k[None, :] - jobs.arrival[:, None], 0)
    utility = np.where(can, jobs.utility(duration.T).T, -np.inf)
    return Options(
        classes=lim.classes,
        sigma=sigma,
        workers=workers,
        servers=-(-workers // gamma),
        klass=klass,
        worker_ok=lim.w_machine > 0,
        server_ok=lim.s_machine > 0,
        target=V,
        utility=utility,
        arrival=jobs.arrival.copy(),
        alpha=jobs.worker_demand,
        beta=jobs.ps_demand,
        capacity=lim.classes.capacity * lim.classes.count[:, None],
    )


@dataclass(frozen=True)
class Costs:
    """Option costs at one price vector: ``kappa[i, t, o]`` (+inf before arrival), and the classes an external
    option's workers / PSs are charged to."""

    kappa: np.ndarray  # [I, T, P]
    ext_worker_class: np.ndarray  # [I, T]
    ext_server_class: np.ndarray  # [I, T]


def costs(opt: Options, prices: np.ndarray) -> Costs:
    per_worker = np.einsum("tcr,ir->itc", prices, opt.alpha)  # [I, T, C]
    per_server = np.einsum("tcr,ir->itc", prices, opt.beta)
    ext_w = np.where(opt.worker_ok[:, None, :], per_worker, np.inf)
    ext_s = np.where(opt.server_ok[:, None, :], per_server, np.inf)
    cw, cs = ext_w.argmin(axis=2), ext_s.argmin(axis=2)
    internal = opt.klass >= 0
    cls = np.where(internal, opt.klass, 0)
    w_cost = np.where(internal, per_worker[:, :, cls], np.take_along_axis(ext_w, cw[:, :, None], 2))
    s_cost = np.where(internal, per_server[:, :, cls], np.take_along_axis(ext_s, cs[:, :, None], 2))
    use = opt.workers[:, None, :] > 0
    with np.errstate(invalid="ignore"):  # 0 workers x an unusable class's inf: masked by ``use``
        kappa = np.where(use, opt.workers[:, None, :] * w_cost + opt.servers[:, None, :] * s_cost, 0.0)
    before = np.arange(opt.slots)[None, :] < opt.arrival[:, None]
    return Costs(np.where(before[:, :, None], np.inf, kappa), cw, cs)


@dataclass(frozen=True, kw_only=True)
class Hull:
    """Lower convex hull of each (job, slot)'s (samples, cost) options as up to P - 1 segments from idling:
    segment q goes from option ``start`` to ``end``, ``length`` samples at cost ``slope`` per sample (length 0
    and slope +inf past the last vertex)."""

    start: np.ndarray  # [I, T, Q]
    end: np.ndarray
    length: np.ndarray
    slope: np.ndarray


def hull(opt: Options, kappa: np.ndarray) -> Hull:
    J, T, P = kappa.shape
    sigma = np.broadcast_to(opt.sigma[:, None, :], kappa.shape)
    cur = np.zeros((J, T), dtype=np.int64)
    parts: list[tuple[np.ndarray, ...]] = []
    for _ in range(P - 1):
        s0 = np.take_along_axis(sigma, cur[:, :, None], 2)
        k0 = np.take_along_axis(kappa, cur[:, :, None], 2)
        ahead = (sigma > s0) & np.isfinite(kappa) & np.isfinite(k0)
        with np.errstate(invalid="ignore", divide="ignore"):
            slope = np.where(ahead, (kappa - k0) / np.where(ahead, sigma - s0, 1.0), np.inf)
        best = slope.min(axis=2, keepdims=True)
        # among equally steep options take the farthest, so no segment is split at a collinear point
        far = np.where(ahead & (slope == best), sigma, -1.0).argmax(axis=2)
        ok = np.isfinite(best[:, :, 0])
        nxt = np.where(ok, far, cur)
        length = np.where(ok, np.take_along_axis(sigma, nxt[:, :, None], 2)[:, :, 0] - s0[:, :, 0], 0.0)
        parts.append((cur, nxt, length, np.where(ok, best[:, :, 0], np.inf)))
        cur = nxt
    start, end, length, slope = (np.stack(x, axis=2) for x in zip(*parts, strict=True))
    return Hull(start=start, end=end, length=length, slope=slope)


@dataclass(frozen=True, kw_only=True)
class Pricing:
    """The oracle's answer at one price vector: per job the best completion slot and its value
    u - cost (``value`` = max(0, that)), and per (job, k) the least cost and the water-filling slope ``mu``."""

    value: np.ndarray  # [I]
    best: np.ndarray  # [I] best completion slot (-1 if none is feasible)
    gain: np.ndarray  # [I] u - cost at ``best`` (-inf if none)
    cost: np.ndarray  # [I, T] least cost of completing by k (+inf where it cannot)
    mu: np.ndarray  # [I, T]
    order: np.ndarray  # [I, W] segments sorted by slope (stable: a slot's segments stay in hull order)
    length: np.ndarray  # [I, W] their lengths
    slot: np.ndarray  # [I, W] their slots
    cross: np.ndarray  # [I, T] where V' is reached in the sorted order, per completion slot

    def taken(self, jobs: np.ndarray, target: np.ndarray) -> np.ndarray:
        """[len(jobs), W] fraction of each sorted segment in each job's best schedule: every segment before the
        crossing one (of slots up to the best k) whole, the crossing one as far as V' needs."""
        k = self.best[jobs]
        at = self.cross[jobs, k]
        inside = np.where(self.slot[jobs] <= k[:, None], self.length[jobs], 0.0)
        pos = np.arange(inside.shape[1])[None, :]
        before = np.where(pos < at[:, None], inside, 0.0)
        n = np.arange(len(jobs))
        last = inside[n, at]
        with np.errstate(invalid="ignore", divide="ignore"):
            part = np.clip((target[jobs] - before.sum(axis=1)) / last, 0.0, 1.0)
        out = (before > 0).astype(float)
        out[n, at] = np.where(last > 0, part, 0.0)
        return out


def price(opt: Options, hl: Hull) -> Pricing:
    """Water-filling: for each completion slot k, the cheapest hull segments of slots a_i..k until V'."""
    J, T, Q = hl.length.shape
    slope, length = hl.slope.reshape(J, T * Q), hl.length.reshape(J, T * Q)
    order = np.argsort(slope, axis=1, kind="stable")
    width = max(1, int(np.isfinite(slope).sum(axis=1).max(initial=1)))  # past it only empty segments
    order = order[:, :width]
    s = np.take_along_axis(slope, order, 1)
    ln = np.take_along_axis(length, order, 1)
    slot = order // Q
    s_fin = np.where(ln > 0, s, 0.0)
    paid = ln * s_fin
    mu = np.zeros((J, T))
    cost = np.full((J, T), np.inf)
    cross = np.zeros((J, T), dtype=np.int64)
    for k in range(T):
        rows = np.flatnonzero(opt.utility[:, k] > -np.inf)
        if not rows.size:
            continue
        inside = slot[rows] <= k
        cl = np.cumsum(np.where(inside, ln[rows], 0.0), axis=1)
        cc = np.cumsum(np.where(inside, paid[rows], 0.0), axis=1)
        target = opt.target[rows]
        at = np.minimum((cl < target[:, None]).sum(axis=1), width - 1)
        n = np.arange(len(rows))
        m = s_fin[rows, at]
        short = cl[n, at] < target  # rounding left V' just out of reach: the steepest segment used
        if short.any():
            m[short] = np.where(inside[short], s_fin[rows[short]], 0.0).max(axis=1)
        mu[rows, k] = m
        cost[rows, k] = cc[n, at] - (cl[n, at] - target) * m
        cross[rows, k] = at
    gain_k = opt.utility - cost
    best = gain_k.argmax(axis=1)
    gain = gain_k[np.arange(J), best]
    best = np.where(np.isfinite(gain), best, -1)
    return Pricing(
        value=np.maximum(gain, 0.0),
        best=best,
        gain=gain,
        cost=cost,
        mu=mu,
        order=order,
        length=ln,
        slot=slot,
        cross=cross,
    )


def columns(opt: Options, hl: Hull, cs: Costs, pr: Pricing, jobs: np.ndarray) -> tuple[np.ndarray, ...]:
    """Usage of each given job's best fractional schedule: (job, row, value) triples with row = (t C + c) R + r."""
    _, T, Q = hl.length.shape
    C, R = opt.capacity.shape
    P = opt.sigma.shape[1]
    weight = np.zeros((len(jobs), T, P))  # convex weights on each slot's options
    sel = pr.taken(jobs, opt.target)
    seg = pr.order[jobs]
    n, pos = np.nonzero(sel)
    t, q = seg[n, pos] // Q, seg[n, pos] % Q
    i = jobs[n]
    np.add.at(weight, (n, t, hl.end[i, t, q]), sel[n, pos])
    np.add.at(weight, (n, t, hl.start[i, t, q]), -sel[n, pos])
    n, t, o = np.nonzero(weight > 1e-15)
    i, w = jobs[n], weight[n, t, o]
    internal = opt.klass[o] >= 0
    cw = np.where(internal, opt.klass[o], cs.ext_worker_class[i, t])
    cv = np.where(internal, opt.klass[o], cs.ext_server_class[i, t])
    r = np.arange(R)
    col = np.repeat(n, 2 * R)
    row = np.concatenate([((t * C + cw)[:, None] * R + r), ((t * C + cv)[:, None] * R + r)], axis=1).ravel()
    val = np.concatenate(
        [(w * opt.workers[i, o])[:, None] * opt.alpha[i], (w * opt.servers[i, o])[:, None] * opt.beta[i]], axis=1
    ).ravel()
    return col, row, val


def certify(opt: Options, prices: np.ndarray, mu: np.ndarray, forced: np.ndarray) -> tuple[float, float]:
    """(D, magnitude): D(p) with ``L_ik = mu_ik V' - sum_{t=a..k} max_o (mu_ik sigma_o - kappa_to)`` evaluated in
    float64 at any ``mu >= 0`` (valid for every mu), and the sum of the absolute values of every term of it, the
    scale of its rounding error. A ``forced`` job must complete: its term is not clipped at 0 (-inf: it cannot)."""
    kappa = costs(opt, prices).kappa
    J, T, _ = kappa.shape
    finite = np.isfinite(kappa)
    best = np.full(J, -np.inf)
    size = np.zeros(J)
    for k in range(T):
        live = opt.utility[:, k] > -np.inf
        if not live.any():
            continue
        m = mu[:, k]
        gain = m[:, None, None] * opt.sigma[:, None, :] - kappa
        phi = np.where(finite, gain, -np.inf).max(axis=2)  # idling is option 0: phi >= 0 from arrival on
        mag = np.where(finite, m[:, None, None] * opt.sigma[:, None, :] + kappa, 0.0).max(axis=2)
        upto = (np.arange(T) <= k)[None, :] & np.isfinite(phi)
        low = m * opt.target - np.where(upto, phi, 0.0).sum(axis=1)
        val = np.where(live, opt.utility[:, k] - low, -np.inf)
        best = np.maximum(best, val)
        size = np.maximum(
            size, np.where(live, opt.utility[:, k] + m * opt.target + np.where(upto, mag, 0.0).sum(axis=1), 0)
        )
    paid = prices * opt.capacity[None, :, :]
    return float(np.where(forced, best, np.maximum(best, 0.0)).sum() + paid.sum()), float(size.sum() + paid.sum())


class _Master:
    """The restricted master LP: max sum u x over the columns, sum_{columns of i} x <= 1 per job (= 1 for a job forced
    in, kept feasible by an artificial column of utility -``big``), usage <= capacity per (t, c, r). HiGHS minimises
    -u x, so prices and job duals are the negated row duals. Columns are kept so that a branch can start from them."""

    def __init__(self, capacity: np.ndarray, forced: np.ndarray, big: float) -> None:
        self.jobs, self.slots, self.highs = len(forced), capacity.shape[0], new_highs()
        self.highs.setOptionValue("simplex_strategy", 4)  # primal: added columns leave the last basis feasible
        upper = np.concatenate([np.ones(self.jobs), capacity.ravel()])
        lower = np.concatenate([np.where(forced, 1.0, -np.inf), np.full(capacity.size, -np.inf)])
        n = len(upper)
        self.highs.addRows(n, lower, upper, 0, np.zeros(n, np.int32), np.zeros(0, np.int32), np.zeros(0))
        self.forced = forced
        art = np.flatnonzero(forced)
        self.art = len(art)
        if self.art:
            self.highs.addCols(
                self.art,
                np.full(self.art, big),
                np.zeros(self.art),
                np.full(self.art, np.inf),
                self.art,
                np.arange(self.art, dtype=np.int32),
                art.astype(np.int32),
                np.ones(self.art),
            )
        self.utility: list[np.ndarray] = []
        self.job: list[np.ndarray] = []
        self.slot: list[np.ndarray] = []  # each column's completion slot
        self.cells: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (column, row, value), rows past the jobs

    @property
    def count(self) -> int:
        return sum(len(u) for u in self.utility)

    def add(
        self, utility: np.ndarray, job: np.ndarray, slot: np.ndarray, col: np.ndarray, row: np.ndarray, val: np.ndarray
    ) -> None:
        n = len(utility)
        key = col.astype(np.int64) * (1 << 32) + row
        key, inverse = np.unique(key, return_inverse=True)
        val = np.bincount(inverse, weights=val)
        keep = val > 0
        key, val = key[keep], val[keep]
        c, r = key >> 32, key & ((1 << 32) - 1)
        self.utility.append(utility)
        self.job.append(job)
        self.slot.append(slot)
        self.cells.append((c, r, val))
        c = np.concatenate([np.arange(n), c])
        r = np.concatenate([job, r + self.jobs])
        v = np.concatenate([np.ones(n), val])
        o = np.lexsort((r, c))
        c, r, v = c[o], r[o], v[o]
        starts = np.searchsorted(c, np.arange(n)).astype(np.int32)
        self.highs.addCols(n, -utility, np.zeros(n), np.full(n, np.inf), len(v), starts, r.astype(np.int32), v)

    def inherit(self, parent: _Master, allowed: np.ndarray) -> None:
        """The parent's columns whose (job, completion slot) is still ``allowed``."""
        for u, j, k, (c, r, v) in zip(parent.utility, parent.job, parent.slot, parent.cells, strict=True):
            keep = allowed[j, k]
            if not keep.any():
                continue
            renumber = np.cumsum(keep) - 1
            cell = keep[c]
            self.add(u[keep], j[keep], k[keep], renumber[c[cell]], r[cell], v[cell])

    def solve(self) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """(LP value, job duals, prices, x[job, k]: how much of each job completes in slot k): the duals of the job
        rows (clipped at 0 unless the job is forced in) and of the capacity rows (clipped at 0)."""
        self.highs.run()
        sol = self.highs.getSolution()
        dual = -np.asarray(sol.row_dual)
        lam = np.where(self.forced, dual[: self.jobs], np.maximum(dual[: self.jobs], 0.0))
        x = np.zeros((self.jobs, self.slots))
        if self.utility:
            cols = (np.concatenate(self.job), np.concatenate(self.slot))
            np.add.at(x, cols, np.asarray(sol.col_value)[self.art :])
        value = -float(self.highs.getInfo().objective_function_value)
        return value, lam, np.maximum(dual[self.jobs :], 0.0), x


@dataclass(frozen=True, kw_only=True)
class DualBound:
    """A certified upper bound on OPT. ``bound`` = the largest certified leaf bound (D at its best prices plus the
    rounding margin; >= OPT); ``root`` the same before branching; ``lagrangian`` the root's D without the margin;
    ``master`` the root's last restricted master LP value (a lower estimate of the relaxation's optimum, not of
    OPT), so ``gap`` = (lagrangian - master) / lagrangian measures how far from converged its prices stopped;
    ``stopped``: converged | rounds (the root's); ``leaves``: leaves of the admission branching; ``wall_s`` is a
    measurement only (no limit reads the clock)."""

    bound: float
    root: float
    lagrangian: float
    master: float
    gap: float
    rounds: int
    columns: int
    classes: int
    stopped: str
    leaves: int
    wall_s: float
    prices: np.ndarray

    def to_dict(self) -> JSON:
        return {k: v for k, v in self.__dict__.items() if k != "prices"}


@dataclass(kw_only=True)
class _Leaf:
    """One node of the branching: job i may complete only in the slots k with ``allowed[i, k]``; ``forced`` jobs
    must complete."""

    bound: float  # certified (-inf: no schedule completes every forced job)
    lagrangian: float
    master: float
    x: np.ndarray  # [I, T] the master's completion of each job per slot
    rounds: int
    stopped: str
    prices: np.ndarray
    columns: _Master
    forced: np.ndarray
    allowed: np.ndarray
    cap: float = np.inf  # the least bound of its ancestors: OPT in this leaf is below it too

    @property
    def value(self) -> float:
        return min(self.bound, self.cap)


def _solve(
    opt: Options,
    forced: np.ndarray,
    allowed: np.ndarray,
    parent: _Leaf | None,
    tol: float,
    rounds_max: int,
) -> _Leaf:
    """Column generation for one leaf until (D_best - master) <= tol D_best or ``rounds_max`` rounds."""
    C, R = opt.capacity.shape
    T, J = opt.slots, len(forced)
    if not allowed.all():
        opt = replace(opt, utility=np.where(allowed, opt.utility, -np.inf))
    big = 1.0 + float(np.where(np.isfinite(opt.utility), opt.utility, 0.0).max(axis=1, initial=0.0).sum())
    master = _Master(np.broadcast_to(opt.capacity, (T, C, R)), forced, big)
    z, lam, x, prices = -np.inf, np.zeros(J), np.zeros((J, T)), np.zeros((T, C, R))
    if parent is not None:
        master.inherit(parent.columns, allowed)
        z, lam, p, x = master.solve()
        prices = p.reshape(T, C, R)
    rounds, stopped = 0, "rounds"
    best_d, best_p, best_mu = np.inf, prices, np.zeros((J, T))
    while rounds < rounds_max:
        rounds += 1
        cs = costs(opt, prices)
        hl = hull(opt, cs.kappa)
        pr = price(opt, hl)
        d = float(np.where(forced, pr.gain, pr.value).sum() + (prices * opt.capacity[None]).sum())
        if d < best_d:
            best_d, best_p, best_mu = d, prices, pr.mu
        if best_d == -np.inf or best_d - z <= tol * max(1.0, abs(best_d)):
            stopped = "converged"
            break
        new = np.flatnonzero(pr.gain - lam > tol * np.maximum(1.0, np.abs(pr.gain)))
        if not len(new):
            stopped = "converged"
            break
        col, row, val = columns(opt, hl, cs, pr, new)
        master.add(opt.utility[new, pr.best[new]], new, pr.best[new], col, row, val)
        z, lam, p, x = master.solve()
        prices = p.reshape(T, C, R)
    d, size = certify(opt, best_p, best_mu, forced)
    bound = d + ROUNDING_MARGIN * size if d > -np.inf else -np.inf
    return _Leaf(
        bound=bound,
        lagrangian=best_d,
        master=z,
        x=x,
        rounds=rounds,
        stopped=stopped,
        prices=best_p,
        columns=master,
        forced=forced,
        allowed=allowed,
    )


def dual_bound(
    instance: Instance,
    tol: float = 1e-7,
    max_rounds: int = 500,
    branch_leaves: int = BRANCH_LEAVES,
) -> DualBound:
    """The certified bound: the root's column generation (``tol``, ``max_rounds`` rounds), then a best-first branching
    on the most fractional admission of the leaf with the largest bound (job out / job forced in) while the leaves
    stay within ``branch_leaves``. OPT lies in some leaf, so the largest certified leaf bound is >= OPT."""
    start = time.perf_counter()
    opt = options(instance)
    J = instance.num_jobs
    none = np.zeros(J, dtype=bool)
    root = _solve(opt, none, np.ones((J, opt.slots), dtype=bool), None, tol, max_rounds)
    open_, closed, leaves = [root], [], 1
    while open_ and leaves + 2 <= branch_leaves:
        leaf = max(open_, key=lambda n: n.value)
        open_.remove(leaf)
        split = _branch(leaf) if leaf.stopped == "converged" else None
        if split is None:
            closed.append(leaf)  # nothing fractional to branch on (or not converged): its bound stands
            continue
        for forced, allowed in split:
            child = _solve(opt, forced, allowed, leaf, tol, max_rounds)
            child.cap = leaf.value
            leaves += 1
            if child.bound > -np.inf:
                open_.append(child)
    final = [n.value for n in open_ + closed]
    return DualBound(
        bound=max(final) if final else 0.0,
        root=root.bound,
        lagrangian=root.lagrangian,
        master=root.master,
        gap=(root.lagrangian - root.master) / max(abs(root.lagrangian), 1e-300),
        rounds=root.rounds,
        columns=root.columns.count,
        classes=opt.capacity.shape[0],
        stopped=root.stopped,
        leaves=leaves,
        wall_s=time.perf_counter() - start,
        prices=root.prices,
    )


def _branch(leaf: _Leaf) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """Two children covering every schedule of ``leaf``: on the most fractional admission (job out / job forced in),
    else on the most evenly split completion slot of one job (completes by k0 / not by k0); None if the master's
    solution is integral in both."""
    x = leaf.x.sum(axis=1)
    free = ~leaf.forced & (x > 1e-6) & (x < 1 - 1e-6)
    if free.any():
        j = int(np.argmin(np.where(free, np.abs(x - 0.5), np.inf)))
        out, forced = leaf.allowed.copy(), leaf.forced.copy()
        out[j] = False
        forced[j] = True
        return [(leaf.forced, out), (forced, leaf.allowed)]
    share = np.cumsum(leaf.x, axis=1) / np.maximum(x, 1e-300)[:, None]  # share completed by each k
    split = (share > 1e-6) & (share < 1 - 1e-6)
    if not split.any():
        return None
    j, k = (int(v) for v in np.unravel_index(int(np.argmin(np.where(split, np.abs(share - 0.5), np.inf))), share.shape))
    early, late = leaf.allowed.copy(), leaf.allowed.copy()
    early[j, k + 1 :] = False
    late[j, : k + 1] = False
    return [(leaf.forced, early), (leaf.forced, late)]
