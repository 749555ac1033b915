"""A feasible offline schedule, a lower bound on OPT, from the dual bound's prices (docs/OFFLINE_OPT.md, "Primal").

1. **Columns.** At the bound's root prices, each job's cheapest integer schedule completing by k (whole hull
   vertices of the water-filling oracle of :mod:`.dual_bound`, taken in slope order until V') for the
   ``K_PER_JOB`` completion slots of largest ``u - cost``; plus every completed job of each given policy schedule.
2. **Integer restricted master.** HiGHS picks at most one column per job under the pooled capacity rows
   (machines of one class pooled), limited by ``MIP_NODES`` branch-and-bound nodes: work, never seconds. With
   policy schedules given it is solved with and without their columns, and the better placement is kept.
3. **Machine assignment and repair.** The chosen jobs (largest utility first), then the rest, are placed one at a
   time on concrete machines: a slot's planned allocation on the tightest machine that holds it (internal) or
   spread (external); where it does not fit, the most samples that fit; a job still short is given idle slots,
   later ones too (a later completion), and dropped if it cannot complete. Only what fits the residual capacity is
   placed, so the schedule is feasible by construction; :func:`pdors.validator.validate` judges it.

The result is the better of that schedule and the best given policy schedule, so it is never below the best policy.
Every step counts work (nodes, slots, jobs) and none reads the clock: the result is the same on any machine load.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from pdors.config import JSON
from pdors.highs_lp import highs_lp, new_highs
from pdors.model import Instance
from pdors.schedule import Schedule
from pdors.validator import Validation, validate

from .bounds import CountLimits, count_limits, machine_classes
from .dual_bound import Costs, DualBound, Hull, Options, Pricing, costs, hull, options, price

K_PER_JOB = 4  # completion slots per job and price scale offered to the master
PRICE_SCALES = (0.5, 1.0, 2.0)  # the bound's prices scaled: cheap ones give fast columns, dear ones lean columns
MIP_NODES = 50  # branch-and-bound nodes of the integer master
MAX_CELLS = 20_000_000  # T x I x H of the dense schedule arrays built (two int32 arrays: 160 MB)


@dataclass(frozen=True, kw_only=True)
class Primal:
    """``utility``: the validated utility of ``schedule`` (a lower bound on OPT); ``source``: "rmp" (built here),
    "policy <name>" (a given policy's schedule was better) or "none"; ``master``: the integer master's value under
    pooled capacity (not a bound on anything: packing may lose some of it); ``master_status``: HiGHS's model status
    (or why the master did not run); ``placed``: jobs the placement completed."""

    schedule: Schedule | None
    utility: float
    source: str
    master: float
    master_status: str
    columns: int
    placed: int
    violations: int
    wall_s: float

    def to_dict(self) -> JSON:
        return {k: v for k, v in self.__dict__.items() if k != "schedule"}


@dataclass(frozen=True, kw_only=True)
class _Column:
    job: int
    slot: int  # completion slot
    utility: float
    workers: np.ndarray  # [T] planned workers per slot (0: idle)
    klass: np.ndarray  # [T] machine class of an internal allocation, -1 external
    rows: np.ndarray  # capacity rows (t C + c) R + r
    use: np.ndarray  # their usage


def _price_columns(instance: Instance, prices: np.ndarray) -> list[_Column]:
    """Each job's integer columns at ``prices`` scaled by each of ``PRICE_SCALES`` (leaner schedules at higher
    prices): the water-filling's segments in slope order until V', whole except the last, whose slot gets the
    fewest workers of the segment's mode that cover what is left."""
    opt, lim = options(instance), count_limits(instance)
    out = []
    for scale in PRICE_SCALES:
        cs = costs(opt, prices * scale)
        hl = hull(opt, cs.kappa)
        pr = price(opt, hl)
        gain = opt.utility - pr.cost
        for i in range(len(opt.target)):
            ks = [int(k) for k in np.argsort(-gain[i], kind="stable")[:K_PER_JOB] if np.isfinite(gain[i, k])]
            out += [_column(opt, cs, hl, pr, i, k, int(instance.jobs.gamma[i])) for k in ks]
            if scale == 1.0:
                out += [c for k in ks if (c := _even(instance, lim, opt, cs, prices, i, k)) is not None]
    return out


def _even(
    instance: Instance, lim: CountLimits, opt: Options, cs: Costs, prices: np.ndarray, i: int, k: int
) -> _Column | None:
    """Job i completing by k with the same fewest workers in every slot a_i..k: internal on the class where that
    costs least at ``prices``, else external; None if neither holds them."""
    jobs = instance.jobs
    a, gamma = int(jobs.arrival[i]), int(jobs.gamma[i])
    n = k - a + 1
    ts = np.arange(a, k + 1)
    w_int = int(np.ceil(opt.target[i] * jobs.time_per_sample(True)[i] / n))
    w_ext = int(np.ceil(opt.target[i] * jobs.time_per_sample(False)[i] / n))
    fit = np.flatnonzero(lim.w_internal[i] >= w_int)
    if fit.size:
        per = w_int * opt.alpha[i] + -(-w_int // gamma) * opt.beta[i]
        c = int(fit[np.argmin([(prices[a : k + 1, c] @ per).sum() for c in fit])])
        cw = cv = np.full(n, c)
        w, klass = w_int, c
    elif 0 < w_ext <= lim.w_external[i]:
        cw, cv, w, klass = cs.ext_worker_class[i, ts], cs.ext_server_class[i, ts], w_ext, -1
    else:
        return None
    use = np.concatenate([np.tile(w * opt.alpha[i], (n, 1)), np.tile(-(-w // gamma) * opt.beta[i], (n, 1))])
    workers, klasses = np.zeros(opt.slots, dtype=np.int64), np.full(opt.slots, -1, dtype=np.int64)
    workers[ts], klasses[ts] = w, klass
    return _built(opt, i, k, ts, cw, cv, use, workers, klasses)


def _built(
    opt: Options,
    i: int,
    k: int,
    ts: np.ndarray,
    cw: np.ndarray,
    cv: np.ndarray,
    use: np.ndarray,
    workers: np.ndarray,
    klass: np.ndarray,
) -> _Column:
    """Job i completing at k with ``workers`` per slot (``klass`` -1: split externally): its workers' classes
    ``cw`` and servers' ``cv`` in slots ``ts`` give the capacity rows it uses, ``use`` (workers' rows first)."""
    C, R = opt.capacity.shape
    rows = np.concatenate([((ts * C + cw)[:, None] * R + np.arange(R)), ((ts * C + cv)[:, None] * R + np.arange(R))])
    return _Column(
        job=i,
        slot=k,
        utility=float(opt.utility[i, k]),
        workers=workers,
        klass=klass,
        rows=rows.ravel(),
        use=use.ravel(),
    )


def _column(opt: Options, cs: Costs, hl: Hull, pr: Pricing, i: int, k: int, gamma: int) -> _Column:
    _, T, Q = hl.length.shape
    at = int(pr.cross[i, k])
    pos = np.arange(at + 1)
    take = pos[(pr.slot[i, pos] <= k) & (pr.length[i, pos] > 0)]
    workers, klass = np.zeros(T, dtype=np.int64), np.full(T, -1, dtype=np.int64)
    last_q = np.full(T, -1)
    done = 0.0
    for p in take:  # a slot's segments come in hull order: its last taken segment ends at its allocation
        t, q = divmod(int(pr.order[i, p]), Q)
        o0, o1 = int(hl.start[i, t, q]), int(hl.end[i, t, q])
        w0, w1 = int(opt.workers[i, o0]), int(opt.workers[i, o1])
        n = w1
        left = opt.target[i] - done
        if p == take[-1] and (o0 == 0 or opt.klass[o0] == opt.klass[o1]) and w1 > w0:
            rate = opt.sigma[i, o1] / w1
            n = min(w1, w0 + int(np.ceil(left / rate)))
        if q > last_q[t]:
            last_q[t] = q
            workers[t], klass[t] = n, int(opt.klass[o1])
        done += float(pr.length[i, p])
    ts = np.flatnonzero(workers)
    w = workers[ts]
    s = -(-w // gamma)
    internal = klass[ts] >= 0
    cw = np.where(internal, klass[ts], cs.ext_worker_class[i, ts])
    cv = np.where(internal, klass[ts], cs.ext_server_class[i, ts])
    use = np.concatenate([w[:, None] * opt.alpha[i], s[:, None] * opt.beta[i]])
    return _built(opt, i, k, ts, cw, cv, use, workers, klass)


def _policy_columns(instance: Instance, schedule: Schedule, v: Validation, of_machine: np.ndarray) -> list[_Column]:
    jobs = instance.jobs
    C, R = int(of_machine.max()) + 1, len(instance.cluster.resources)
    out = []
    for i in np.flatnonzero(schedule.admitted & (v.completion >= 0)):
        w, s = schedule.workers[:, i, :], schedule.servers[:, i, :]
        per_machine = w[:, :, None] * jobs.worker_demand[i] + s[:, :, None] * jobs.ps_demand[i]
        usage = np.einsum("thr,hc->tcr", per_machine, of_machine[:, None] == np.arange(C))
        t, c, r = np.nonzero(usage)
        wsum = w.sum(axis=1)
        host = of_machine[(w + s).argmax(axis=1)]
        out.append(
            _Column(
                job=int(i),
                slot=int(v.completion[i]),
                utility=float(v.utility[i]),
                workers=wsum.astype(np.int64),
                klass=np.where(v.internal[:, i], host, -1),
                rows=(t * C + c) * R + r,
                use=usage[t, c, r],
            )
        )
    return out


def _master(columns: list[_Column], jobs: int, capacity: np.ndarray) -> tuple[np.ndarray, float, str]:
    """The integer restricted master: which columns (at most one per job) under the pooled capacity rows."""
    n = len(columns)
    cap = capacity.ravel()
    col = np.concatenate([np.full(len(c.rows) + 1, j) for j, c in enumerate(columns)])
    row = np.concatenate([np.concatenate([[c.job], jobs + c.rows]) for c in columns])
    val = np.concatenate([np.concatenate([[1.0], c.use]) for c in columns])
    key = col * (jobs + len(cap)) + row
    key, inv = np.unique(key, return_inverse=True)
    val = np.bincount(inv, weights=val)
    col, row = key // (jobs + len(cap)), key % (jobs + len(cap))
    start = np.searchsorted(col, np.arange(n + 1)).astype(np.int32)
    upper = np.concatenate([np.ones(jobs), cap])
    highs = new_highs()
    highs.setOptionValue("mip_max_nodes", MIP_NODES)
    cost = -np.array([c.utility for c in columns])
    lp = highs_lp(
        cost,
        len(upper),
        (start, row.astype(np.int32), val),
        np.full(len(upper), -np.inf),
        upper,
        np.ones(n),
        integer=True,
    )
    highs.passModel(lp)
    highs.run()
    status = highs.modelStatusToString(highs.getModelStatus())
    x = np.asarray(highs.getSolution().col_value)
    if len(x) != n:
        return np.zeros(n, dtype=bool), 0.0, status
    chosen = x > 0.5
    return chosen, float(-cost[chosen].sum()), status


class _Placer:
    """Jobs placed one at a time on the residual capacity of concrete machines."""

    def __init__(self, instance: Instance) -> None:
        self.inst = instance
        jobs = instance.jobs
        T, J, H = instance.slots, instance.num_jobs, instance.num_machines
        self.cap = instance.cluster.capacity
        self.res = np.broadcast_to(self.cap, (T, H, self.cap.shape[1])).copy()
        self.w = np.zeros((T, J, H), dtype=np.int32)
        self.s = np.zeros((T, J, H), dtype=np.int32)
        self.per_sample = {True: jobs.time_per_sample(True), False: jobs.time_per_sample(False)}
        self.scale = np.maximum(self.cap.max(axis=0), 1e-300)
        self.of_machine = np.unique(self.cap, axis=0, return_inverse=True)[1].ravel()

    def servers(self, i: int, w: np.ndarray, internal: bool) -> np.ndarray:
        """PSs for ``w`` workers: ceil(w / gamma), and under the thesis's model enough for their traffic (3.4);
        -1 where (3.5) s <= w cannot hold."""
        jobs = self.inst.jobs
        s = -(-w // int(jobs.gamma[i]))
        bw_all = self.inst.ps_bandwidth
        if bw_all is None:
            return s
        bw = jobs.bw_internal[i] if internal else jobs.bw_external[i]
        s = np.maximum(s, np.ceil(w * bw / bw_all[i]).astype(np.int64))
        return np.where((s > w) & self.inst.ps_at_most_workers, -1, s)

    def internal_max(self, i: int, t: int, cap_w: int) -> np.ndarray:
        """[H, N] whether w = 1..cap_w workers with their PSs fit machine h alone."""
        jobs = self.inst.jobs
        ws = np.arange(1, cap_w + 1)
        ss = self.servers(i, ws, True)
        use = ws[:, None] * jobs.worker_demand[i] + np.maximum(ss, 0)[:, None] * jobs.ps_demand[i]
        out: np.ndarray = (use[None] <= self.res[t][:, None, :]).all(axis=2) & (ss >= 0)[None, :]
        return out

    def spread(self, i: int, t: int, W: int) -> tuple[np.ndarray, np.ndarray] | None:
        """W workers and their PSs over two or more machines (PSs first, each on the machines with most room)."""
        jobs = self.inst.jobs
        S = int(self.servers(i, np.array([W]), False)[0])
        if S < 0:
            return None
        rr = self.res[t].copy()
        out = []
        for count, d in ((S, jobs.ps_demand[i]), (W, jobs.worker_demand[i])):
            need = d > 0
            room = np.floor(np.min(np.where(need, rr / np.where(need, d, 1.0), np.inf), axis=1))
            room = np.minimum(room, count).astype(np.int64)
            room = np.where((room[:, None] * d > rr).any(axis=1), room - 1, room).clip(0)
            order = np.argsort(-room, kind="stable")
            n = np.zeros(len(room), dtype=np.int64)
            left = count
            for h in order:
                if left == 0:
                    break
                n[h] = min(left, room[h])
                left -= n[h]
            if left:
                return None
            rr -= n[:, None] * d
            out.append(n)
        s, w = out
        if ((w + s) > 0).sum() < 2:
            return None
        return w, s

    def put(self, i: int, t: int, w: np.ndarray, s: np.ndarray) -> None:
        jobs = self.inst.jobs
        self.w[t, i], self.s[t, i] = w, s
        self.res[t] -= w[:, None] * jobs.worker_demand[i] + s[:, None] * jobs.ps_demand[i]

    def take(self, i: int, t: int) -> None:
        jobs = self.inst.jobs
        w, s = self.w[t, i].astype(np.int64), self.s[t, i].astype(np.int64)
        self.res[t] += w[:, None] * jobs.worker_demand[i] + s[:, None] * jobs.ps_demand[i]
        self.w[t, i] = 0
        self.s[t, i] = 0

    def internal_at(self, i: int, t: int, W: int, fits: np.ndarray, klass: int) -> bool:
        """W workers internally on the tightest machine (of ``klass`` if one holds them) that holds them."""
        ok = fits[:, W - 1]
        if klass >= 0 and (ok & (self.of_machine == klass)).any():
            ok = ok & (self.of_machine == klass)
        if not ok.any():
            return False
        jobs = self.inst.jobs
        S = int(self.servers(i, np.array([W]), True)[0])
        use = W * jobs.worker_demand[i] + S * jobs.ps_demand[i]
        slack = ((self.res[t] - use) / self.scale).sum(axis=1)
        h = int(np.argmin(np.where(ok, slack, np.inf)))
        w, s = np.zeros(len(ok), dtype=np.int64), np.zeros(len(ok), dtype=np.int64)
        w[h], s[h] = W, S
        self.put(i, t, w, s)
        return True

    def slot(self, i: int, t: int, need: float, want: int, klass: int) -> None:
        """Allocate job i in slot t: ``want`` workers (internal on ``klass``, or external if -1), no more than
        ``need`` samples require; where that does not fit, the most samples that fit, up to the planned ones (0: the
        slot stays idle)."""
        jobs = self.inst.jobs
        cap_w = int(jobs.batch[i])
        if want > 0:  # a plan's slot takes no more than its planned samples: the rest goes to idle slots
            need = min(need, want / self.per_sample[klass >= 0][i])
        n_int = max(1, int(np.ceil(need * self.per_sample[True][i])))
        n_ext = max(1, int(np.ceil(need * self.per_sample[False][i])))
        fits = self.internal_max(i, t, cap_w)
        if want > 0:
            if klass >= 0 and self.internal_at(i, t, min(want, n_int, cap_w), fits, klass):
                return
            if klass < 0 and (wd := min(want, n_ext, cap_w)) and (got := self.spread(i, t, wd)) is not None:
                self.put(i, t, *got)
                return
        if n_int <= cap_w and self.internal_at(i, t, n_int, fits, -1):
            return
        if n_ext <= cap_w and (got := self.spread(i, t, n_ext)) is not None:
            self.put(i, t, *got)
            return
        best_int = int(np.where(fits, np.arange(1, cap_w + 1), 0).max(initial=0))
        lo, hi = 0, min(cap_w, n_ext)  # the most external workers that spread: bisection on W
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.spread(i, t, mid) is not None:
                lo = mid
            else:
                hi = mid - 1
        if best_int == 0 and lo == 0:
            return
        if best_int / self.per_sample[True][i] >= lo / self.per_sample[False][i]:
            self.internal_at(i, t, best_int, fits, -1)
        else:
            got = self.spread(i, t, lo)
            assert got is not None
            self.put(i, t, *got)

    def samples(self, i: int) -> np.ndarray:
        """[T] job i's samples per slot, as the validator computes them (restarts free)."""
        w, s = self.w[:, i], self.s[:, i]
        wsum = w.sum(axis=1)
        internal = ((w > 0) | (s > 0)).sum(axis=1) == 1
        per = np.where(internal, self.per_sample[True][i], self.per_sample[False][i])
        out: np.ndarray = 1.0 * wsum / per
        return np.where(wsum > 0, out, 0.0)

    def job(self, i: int, plan: _Column | None) -> bool:
        """Place job i (its ``plan``, then idle slots from its arrival on); False (and nothing placed) if it cannot
        complete."""
        jobs, T = self.inst.jobs, self.inst.slots
        target = float(jobs.workload[i] * (1.0 - 1e-12))
        done = 0.0
        first = [] if plan is None else [t for t in range(T) if plan.workers[t] > 0]
        rest = [t for t in range(int(jobs.arrival[i]), T) if t not in set(first)]
        for t in first + rest:
            if done >= target:
                break
            want = 0 if plan is None else int(plan.workers[t])
            klass = -1 if plan is None else int(plan.klass[t])
            self.slot(i, t, float(jobs.workload[i]) - done, want, klass)
            done = float(self.samples(i).sum())
        if np.cumsum(self.samples(i))[-1] >= target:
            return True
        for t in range(T):
            if self.w[t, i].any() or self.s[t, i].any():
                self.take(i, t)
        return False


def primal(
    instance: Instance,
    bound: DualBound,
    policies: dict[str, tuple[Schedule, Validation]] | None = None,
) -> Primal:
    """The feasible schedule above, from ``bound``'s root prices and the given policies' validated schedules
    (name -> (schedule, validation); a schedule with violations is left out)."""
    start = time.perf_counter()
    valid = {n: sv for n, sv in (policies or {}).items() if sv[1].ok}
    best_name = max(valid, key=lambda n: (valid[n][1].total_utility, n), default=None)
    best_u = valid[best_name][1].total_utility if best_name is not None else 0.0

    def fallback(status: str, master: float = 0.0, columns: int = 0, placed: int = 0) -> Primal:
        sched = valid[best_name][0] if best_name is not None else None
        src = f"policy {best_name}" if best_name is not None else "none"
        return Primal(
            schedule=sched,
            utility=best_u,
            source=src,
            master=master,
            master_status=status,
            columns=columns,
            placed=placed,
            violations=0,
            wall_s=time.perf_counter() - start,
        )

    T, J, H = instance.slots, instance.num_jobs, instance.num_machines
    if best_u >= bound.bound:
        return fallback("skipped: a policy reaches the bound")
    if T * J * H > MAX_CELLS:
        return fallback(f"skipped: T I H over {MAX_CELLS:,} cells")
    priced = _price_columns(instance, bound.prices)
    of_machine = machine_classes(instance).of_machine
    extra = [c for sched, v in valid.values() for c in _policy_columns(instance, sched, v, of_machine)]
    # the master with and without the policies' columns: either may place better (the master's pooled value is
    # not what packs), so both are built and the better kept
    tries = [_build(instance, priced + extra)] + ([_build(instance, priced)] if extra else [])
    schedule, v, master, status, columns, placed = max(tries, key=lambda x: x[1].total_utility if x[1].ok else -1.0)
    out = fallback(status, master, columns, placed)
    if not v.ok or v.total_utility <= best_u:
        return replace(out, violations=sum(len(x[1].violations) for x in tries))
    return replace(out, schedule=schedule, utility=v.total_utility, source="rmp")


def _build(instance: Instance, cols: list[_Column]) -> tuple[Schedule, Validation, float, str, int, int]:
    """The master over ``cols``, its jobs placed (largest utility first), then the other jobs (largest theta1
    first): (schedule, its validation, master value, master status, columns, jobs placed)."""
    T, J = instance.slots, instance.num_jobs
    placer = _Placer(instance)
    opt = options(instance)
    chosen, master, status = _master(cols, J, np.broadcast_to(opt.capacity, (T, *opt.capacity.shape)))
    picked = sorted((c for c, x in zip(cols, chosen, strict=True) if x), key=lambda c: (-c.utility, c.job))
    placed = 0
    for c in picked:
        placed += placer.job(c.job, c)
    rest = sorted(set(range(J)) - {c.job for c in picked}, key=lambda i: (-float(instance.jobs.theta1[i]), i))
    for i in rest:
        placed += placer.job(i, None)
    schedule = _schedule(instance, placer)
    return schedule, validate(instance, schedule), master, status, len(cols), placed


def _schedule(instance: Instance, placer: _Placer) -> Schedule:
    """The placed counts with the claims the validator recomputes (locality, completion; restarts are free)."""
    sched = Schedule.empty(instance)
    sched.workers[:], sched.servers[:] = placer.w, placer.s
    sched.admitted[:] = placer.w.sum(axis=(0, 2)) > 0
    v = validate(instance, sched)
    sched.claimed_internal[:] = v.internal
    sched.claimed_completion[:] = v.completion
    sched.claimed_restart[:] = v.restarts
    return sched
