"""A feasible offline schedule, a lower bound on OPT, from the dual bound's prices (docs/OFFLINE_OPT.md, "Primal").

1. **Columns.** At the bound's root prices, each job's cheapest integer schedule completing by k (whole hull
   vertices of the water-filling oracle of :mod:`.dual_bound`, taken in slope order until V') for the
   ``K_PER_JOB`` completion slots of largest ``u - cost``; plus every completed job of each given policy schedule.
2. **Integer restricted master.** HiGHS picks at most one column per job under the pooled capacity rows
   (machines of one class pooled), limited by ``MIP_NODES`` branch-and-bound nodes: work, never seconds; above
   ``MIP_COLUMNS`` columns over the columns its LP relaxation uses, the rest added greedily. With policy schedules
   given it is solved with and without their columns, and the better placement is kept.
3. **Machine assignment and repair.** The master's plans are packed slot by slot, all jobs of a slot at once
   (:mod:`.slot_packing`: internal allocations whole on the tightest machine, external ones worker by worker and PS
   by PS); each chosen job is then completed from what it holds (largest utility first): a shortfall goes to its
   planned slots with more workers, then to idle slots, later ones too (a later completion); a job that cannot
   complete is taken out. Then the other jobs, one at a time where they fit. Only what fits the residual capacity
   is placed, so the schedule is feasible by construction; :func:`pdors.validator.validate` judges it.

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
from .placement import Placer, Plan
from .ruin_recreate import ruin_recreate
from .slot_packing import Item, pack_slot

K_PER_JOB = 4  # completion slots per job and price scale offered to the master
PRICE_SCALES = (0.5, 1.0, 2.0)  # the bound's prices scaled: cheap ones give fast columns, dear ones lean columns
MIP_NODES = 50  # branch-and-bound nodes of the integer master
MIP_COLUMNS = 500  # the master is integer up to this many columns (2x the tests' instances, I <= 14), else rounded
SEARCH_ROUNDS = 20  # ruin-and-recreate rounds: at Fig. 9 rounds 21-100 gained <= 0.1 % for 4-6 s CPU
SEARCH_SEED = 34  # the search's random draws: fixed, so the schedule is one function of the instance
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
    search_kept: int = 0  # ruin-and-recreate rounds that kept a better schedule
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
    """The restricted master: which columns (at most one per job) under the pooled capacity rows. Integer up to
    ``MIP_COLUMNS`` columns; above, its LP relaxation, then the integer master over the columns that LP uses (a basic
    solution uses few: at I = 100, T = 80 about 120 of 1900) if they are at most ``MIP_COLUMNS``, then every other
    column greedily (:func:`_rounded`). HiGHS's integer root over every column (cuts, heuristics, which no node limit
    bounds) takes seconds there."""
    cap = capacity.ravel()
    utility = np.array([c.utility for c in columns])
    if len(columns) <= MIP_COLUMNS:
        x, status = _solve_master(columns, jobs, cap, integer=True)
        return x > 0.5, float(utility[x > 0.5].sum()), status
    x, status = _solve_master(columns, jobs, cap, integer=False)
    status = f"LP {status}"
    used = np.flatnonzero(x > 1e-9)
    if 0 < len(used) <= MIP_COLUMNS:
        xi, sub = _solve_master([columns[j] for j in used], jobs, cap, integer=True)
        x = np.zeros(len(columns))
        x[used] = xi
        status += f", integer over its {len(used)} columns {sub}"
    chosen = _rounded(columns, x, cap)
    return chosen, float(utility[chosen].sum()), f"{status}, rounded"


def _solve_master(columns: list[_Column], jobs: int, cap: np.ndarray, integer: bool) -> tuple[np.ndarray, str]:
    """The master over ``columns`` (binary, at most ``MIP_NODES`` nodes, if ``integer``): each column's value (all 0
    if HiGHS returned none) and HiGHS's model status."""
    n = len(columns)
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
    lp = highs_lp(
        -np.array([c.utility for c in columns]),
        len(upper),
        (start, row.astype(np.int32), val),
        np.full(len(upper), -np.inf),
        upper,
        np.ones(n),
        integer=integer,
    )
    highs.passModel(lp)
    highs.run()
    status = highs.modelStatusToString(highs.getModelStatus())
    x = np.asarray(highs.getSolution().col_value)
    return (x if len(x) == n else np.zeros(n)), status


def _rounded(columns: list[_Column], x: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Every column in order of its value ``x`` (LP or integer), then utility, taken where its job is free and the
    pooled rows hold it."""
    left = cap.astype(float).copy()
    taken: set[int] = set()
    chosen = np.zeros(len(columns), dtype=bool)
    order = sorted(range(len(columns)), key=lambda j: (-x[j], -columns[j].utility, j))
    for j in order:
        c = columns[j]
        if c.job in taken or (np.bincount(c.rows, c.use, len(left)) > left + 1e-9).any():
            continue
        np.subtract.at(left, c.rows, c.use)
        taken.add(c.job)
        chosen[j] = True
    return chosen


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
    b = max(tries, key=lambda x: x.validation.total_utility if x.validation.ok else -1.0)
    at_bound = b.validation.ok and b.validation.total_utility >= bound.bound * (1.0 - 1e-9)
    kept = 0 if at_bound else ruin_recreate(b.placer, b.plans, SEARCH_ROUNDS, SEARCH_SEED)
    schedule = b.placer.schedule()
    v = validate(instance, schedule)
    out = replace(fallback(b.status, b.master, b.columns, b.placed), search_kept=kept)
    if not v.ok or v.total_utility <= best_u:
        return replace(out, violations=len(v.violations) + sum(len(x.validation.violations) for x in tries))
    return replace(out, schedule=schedule, utility=v.total_utility, source="rmp")


@dataclass(frozen=True, kw_only=True)
class _Built:
    placer: Placer
    plans: dict[int, Plan]  # each placed job's master column
    validation: Validation
    master: float
    status: str
    columns: int
    placed: int


def _build(instance: Instance, cols: list[_Column]) -> _Built:
    """The master over ``cols``, its plans packed slot by slot (:func:`.slot_packing.pack_slot`), each of its
    jobs completed where a slot fell short (largest utility first) or taken out, then the other jobs placed (largest
    theta1 first)."""
    T, J = instance.slots, instance.num_jobs
    placer = Placer(instance)
    opt = options(instance)
    chosen, master, status = _master(cols, J, np.broadcast_to(opt.capacity, (T, *opt.capacity.shape)))
    picked = sorted((c for c, x in zip(cols, chosen, strict=True) if x), key=lambda c: (-c.utility, c.job))
    for t in range(T):
        items = [Item(c.job, int(c.workers[t]), int(c.klass[t]), c.utility) for c in picked if c.workers[t] > 0]
        if items:
            pack_slot(placer, t, items)
    placed = 0
    for c in picked:
        placed += placer.complete(c.job, c)
    rest = sorted(set(range(J)) - {c.job for c in picked}, key=lambda i: (-float(instance.jobs.theta1[i]), i))
    for i in rest:
        placed += placer.job(i, None)
    return _Built(
        placer=placer,
        plans={c.job: c for c in picked},
        validation=validate(instance, placer.schedule()),
        master=master,
        status=status,
        columns=len(cols),
        placed=placed,
    )
