"""The external case's linear program (Algorithm 4, step 8): the LP relaxation of eqs. (23)-(26) plus the ratio row
over machine classes on one warm HiGHS model (:class:`LinearProgram`), a cheaper bound that drops the capacity
workers and PSs share (:func:`separable_bound`), the LP optimum spread back onto machines (:func:`disaggregate`),
the integer program it relaxes (:func:`integer_optimum`), and the costs every case is priced by."""

from __future__ import annotations

import math

import highspy
import numpy as np

from ..highs_lp import highs_lp, new_highs, pass_lp
from ..portable_math import dot
from .job import JobShape
from .machine_classes import ClassMembers

LP_BOUND_RTOL = 1e-6  # margin on the LP optimum used as a lower bound (solver tolerances are ~1e-7)
COST_RANGE = 1e12  # LP costs are rescaled to [1, COST_RANGE]: prices start near L ~ 1e-15,
# below HiGHS's tolerances, which would make every feasible point "optimal"


def unit_price(price: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """sum_r p^r demand^r over the last axis (p^w, p^s of eq. 23, or a whole task's cost), both broadcast.

    Multiplied elementwise and summed in numpy's fixed order, never by BLAS (docs/MODEL.md, "Bit-identical
    decisions"): every caller (and the reference implementation) gets the same bits on every machine, and
    exact ties stay exact."""
    out: np.ndarray = (price * demand).sum(axis=-1)
    return out


def rounded_cost(workers: np.ndarray, servers: np.ndarray, p_w: np.ndarray, p_s: np.ndarray) -> float:
    """Cost of one integer solution (by :func:`~pdors.portable_math.dot`, as :func:`unit_price`); ``dot`` over
    a batch of solutions [k, m] gives each row these same bits (each row is summed alone, in the same order)."""
    return float(dot(workers, p_w) + dot(servers, p_s))


def rescaled_costs(cost: np.ndarray) -> tuple[np.ndarray, float]:
    """LP costs divided by the smallest positive one and capped at ``COST_RANGE`` (see there), and the divisor."""
    positive = cost[cost > 0]
    scale = positive.min() if positive.size else 1.0
    return np.minimum(cost / scale, COST_RANGE), scale


class LinearProgram:
    """A reusable HiGHS instance: load one slot state's LP, then re-solve it warm for each cover bound.

    It owns its rows: :meth:`load` is told which row is the cover (26), whose bounds each solve sets."""

    def __init__(self) -> None:
        self.highs = new_highs()

    def load(
        self,
        cost: np.ndarray,
        csc: tuple[np.ndarray, np.ndarray, np.ndarray],
        row_lower: np.ndarray,
        row_upper: np.ndarray,
        cover_row: int,
    ) -> None:
        """``csc``: the constraint matrix as (column starts, row indices, values), nonzeros only."""
        self.cover_row = cover_row
        scaled, self.scale = rescaled_costs(cost)
        self.highs.clearModel()
        pass_lp(self.highs, scaled, len(row_lower), csc, row_lower, row_upper)

    def solve_with_cover(
        self, lower: float, upper: float, servers: float | None = None
    ) -> tuple[np.ndarray, float] | None:
        """With ``lower <= cover row <= upper`` (and ``servers <=`` the row after it, if given): the optimal point
        and a lower bound on the optimum in the original costs (the rescaled, capped costs are <= the original
        ones), or None if infeasible."""
        self.highs.changeRowBounds(self.cover_row, lower, upper)
        if servers is not None:
            self.highs.changeRowBounds(self.cover_row + 1, servers, np.inf)
        self.highs.run()
        if self.highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        bound = self.highs.getObjectiveValue() * self.scale * (1.0 - LP_BOUND_RTOL)
        self.solution = self.highs.getSolution()  # one copy of HiGHS's solution per solve
        return np.array(self.solution.col_value, dtype=np.float64), bound  # the dtype given: no inference pass

    def cover_dual(self) -> float:
        """The last optimal solve's cover row dual in the original costs (>= 0: a larger cover never costs less), less
        ``LP_BOUND_RTOL``: the slope of a line below the optimum as a function of the cover bound."""
        dual = float(self.solution.row_dual[self.cover_row])
        return max(dual, 0.0) * self.scale * (1.0 - LP_BOUND_RTOL)

    def iterations(self) -> int:
        """Simplex iterations of the last solve."""
        return int(self.highs.getInfoValue("simplex_iteration_count")[1])


def separable_bound(
    job: JobShape,
    demand: np.ndarray,
    p_w: np.ndarray,
    p_s: np.ndarray,
    cls_free: np.ndarray,
    counts: np.ndarray,
    servers: np.ndarray | None = None,
) -> np.ndarray:
    """A lower bound on the LP of (23)-(26) + ratio for every cover ``demand``, and so on any external cost.

    Dropping the capacity (24) that workers and PSs share leaves two fractional knapsacks: D workers at the
    cheapest worker prices, each class holding at most |c| min_r (C^r - rho^r) / alpha^r, and D / gamma PSs
    likewise; each is filled cheapest class first. inf where D > F (eq. 25) or where the room runs out (the
    LP is then infeasible too). Less ``LP_BOUND_RTOL`` for rounding. ``servers``: the PSs needed, D / gamma unless
    given.
    """
    total = np.zeros(len(demand))
    servers = demand / job.gamma if servers is None else servers
    for price, per_task, need in ((p_w, job.worker_demand, demand), (p_s, job.ps_demand, servers)):
        # tasks per machine: the least over the resources the task needs (a min is exact)
        uses = per_task > 0
        room = (cls_free[:, uses] / per_task[uses]).min(axis=1, initial=np.inf)
        room = np.minimum(np.maximum(room, 0.0) * counts, job.batch)  # no class needs more than F tasks
        order = price.argsort(kind="stable")
        held, sorted_price = room[order], price[order]
        filled, spent = np.zeros(len(order) + 1), np.zeros(len(order) + 1)
        held.cumsum(out=filled[1:])  # tasks held by the j cheapest classes
        (held * sorted_price).cumsum(out=spent[1:])
        j = np.minimum(filled[1:].searchsorted(need, side="left"), len(order) - 1)
        cost = spent[j] + (need - filled[j]) * sorted_price[j]  # j classes full, the next one partly
        total += np.where(need <= filled[-1], cost, np.inf)
    return np.where(demand <= job.batch, total * (1.0 - LP_BOUND_RTOL), np.inf)


def load_external_lp(
    job: JobShape, p_w: np.ndarray, p_s: np.ndarray, cls_free: np.ndarray, counts: np.ndarray, lp: LinearProgram
) -> None:
    """LP relaxation of (23)-(26) + ratio over machine classes; the cover bound is set per level."""
    n = len(counts)
    used = (job.worker_demand > 0) | (job.ps_demand > 0)
    alpha, beta = job.worker_demand[used], job.ps_demand[used]
    cap = np.maximum(cls_free[:, used] * counts[:, None], 0)  # [C, R']; what clip(min=0) computes, without its wrapper
    r = alpha.size
    lower = np.concatenate([np.full(n * r, -np.inf), [0.0, 0.0]])
    upper = np.concatenate([cap.ravel(), [job.batch, np.inf]])
    matrix = _external_lp_matrix(alpha, beta, float(job.gamma), n, ratio=not job.integer_covers)
    lp.load(np.concatenate([p_w, p_s]), matrix, lower, upper, cover_row=n * r)


def _external_lp_matrix(
    alpha: np.ndarray, beta: np.ndarray, gamma: float, n: int, ratio: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The LP's constraint matrix in CSC form (column starts, row indices, values; rows ascending per column),
    built directly instead of from a dense [n R' + 2, 2n] array. Rows i R'..(i + 1) R' - 1: eq. (24) of class i
    (alpha on its W_i, beta on its S_i); row n R': D <= sum W <= F, (25)-(26); row n R' + 1: gamma sum S - sum W
    >= 0 with ``ratio``, else sum S (>= m_p, the thesis's (3.25)). Columns: W_0..W_{n-1}, S_0..S_{n-1}."""
    r = alpha.size
    ja, jb = np.flatnonzero(alpha != 0), np.flatnonzero(beta != 0)
    w_tail = [n * r, n * r + 1] if ratio else [n * r]
    wn, sn = ja.size + len(w_tail), jb.size + 1  # nonzeros per W column, per S column
    index, value = np.empty(n * (wn + sn), dtype=np.int32), np.empty(n * (wn + sn))
    first_row = np.arange(n, dtype=np.int32)[:, None] * r
    w_index, s_index = index[: n * wn].reshape(n, wn), index[n * wn :].reshape(n, sn)
    w_index[:, : ja.size], w_index[:, ja.size :] = first_row + ja, w_tail
    s_index[:, : jb.size], s_index[:, jb.size] = first_row + jb, n * r + 1
    value[: n * wn].reshape(n, wn)[:] = np.concatenate([alpha[ja], [1.0, -1.0][: len(w_tail)]])
    value[n * wn :].reshape(n, sn)[:] = np.concatenate([beta[jb], [gamma if ratio else 1.0]])
    start = np.concatenate([np.arange(n + 1) * wn, n * wn + np.arange(1, n + 1) * sn]).astype(np.int32)
    return start, index, value


INTEGER_TIME_LIMIT = 10.0  # seconds per integer optimum; NaN if not proven by then


def integer_optimum(job: JobShape, demand: float, prices: np.ndarray, free: np.ndarray) -> float:
    """The cheapest integer solution of the external case's program over the machines themselves: the LP of
    :func:`load_external_lp` with one class per machine and every variable integral (a small MILP), inf if it
    has none, NaN if HiGHS does not prove it within ``INTEGER_TIME_LIMIT``. Thesis Fig. 3.14's second yardstick
    (docs/MODEL.md, "The thesis profile"); like the LP it leaves out (3.5) and the one-machine rule, which the
    roundings are checked against, so it is a lower bound on the cheapest external solution they may find."""
    used = (job.worker_demand > 0) | (job.ps_demand > 0)
    alpha, beta = job.worker_demand[used], job.ps_demand[used]
    h, r = len(free), int(used.sum())
    p_w, p_s = unit_price(prices, job.worker_demand), unit_price(prices, job.ps_demand)
    servers = job.ps_cover(demand) if job.integer_covers else 0.0
    lower = np.concatenate([np.full(h * r, -np.inf), [demand, servers]])
    upper = np.concatenate([free[:, used].clip(min=0).ravel(), [job.batch, np.inf]])
    cost, _ = rescaled_costs(np.concatenate([p_w, p_s]))
    matrix = _external_lp_matrix(alpha, beta, float(job.gamma), h, ratio=not job.integer_covers)
    highs = new_highs()
    highs.setOptionValue("time_limit", INTEGER_TIME_LIMIT)
    highs.passModel(highs_lp(cost, len(lower), matrix, lower, upper, integer=True))
    highs.run()
    status = highs.getModelStatus()
    if status == highspy.HighsModelStatus.kInfeasible:
        return math.inf
    if status != highspy.HighsModelStatus.kOptimal:
        return math.nan
    x = np.round(np.asarray(highs.getSolution().col_value))
    return rounded_cost(x[:h], x[h:], p_w, p_s)


def solve_external_lp(
    demand: float, job: JobShape, n: int, lp: LinearProgram
) -> tuple[tuple[np.ndarray, np.ndarray], float] | None:
    """Per-class (W, S) of the LP optimum with cover bound ``demand`` and a lower bound on the optimum,
    or None if infeasible."""
    solved = lp.solve_with_cover(demand, job.batch, job.ps_cover(demand) if job.integer_covers else None)
    if solved is None:
        return None
    sol, bound = solved
    return (np.maximum(sol[:n], 0), np.maximum(sol[n:], 0)), bound  # clip(min=0) is this ufunc call


def disaggregate(
    job: JobShape, lp_sol: tuple[np.ndarray, np.ndarray], members: ClassMembers, free: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Spread each class's (W, S) over its machines (``members[c]``, ascending), lowest-indexed ones first.

    Each machine gets a multiple of the class's mean point, as large as leaves room to round every
    entry up: rounding then cannot break capacity (24), only the cover (26) and the ratio, whose
    sums are met about half the time each at G = 1. A class with too few machines for that falls
    back to the even split (rounding up may then not fit).
    """
    cls_w, cls_s = lp_sol
    used = ((cls_w > 1e-12) | (cls_s > 1e-12)).nonzero()[0]
    count = members.sizes[used]
    per_w, per_s = cls_w[used] / count, cls_s[used] / count
    load = per_w[:, None] * job.worker_demand + per_s[:, None] * job.ps_demand  # [P, R]
    round_up = (per_w > 0)[:, None] * job.worker_demand + (per_s > 0)[:, None] * job.ps_demand
    room = free[members.order[members.starts[used]]] - round_up  # a class's members share their free capacity
    stretch = np.divide(room, load, out=np.full(load.shape, np.inf), where=load > 0).min(axis=1, initial=np.inf)
    stretch = np.maximum(1.0, np.minimum(stretch, count.astype(float)))
    if job.gamma_internal is not None and used.size == 1:
        # Thesis: on one machine the tasks would run internally (Fact 1) under (3.4)'s internal rule, so an
        # external point of one class goes to two of its (identical) machines at the same LP cost.
        stretch = np.minimum(stretch, np.maximum(count / 2.0, 1.0))
    full = np.floor(count / stretch + 1e-12).astype(np.int64)
    rest = count - full * stretch
    partial = rest > 1e-9
    taken = full + partial  # machines used per class
    share = np.repeat(stretch, taken)
    share[taken.cumsum()[partial] - 1] = rest[partial]  # the last machine of a class takes the rest
    machines = (
        members[used[0]][: taken[0]]
        if used.size == 1
        else np.concatenate([members[c][:n] for c, n in zip(used, taken, strict=False)] or [np.zeros(0, np.int64)])
    )
    return machines.astype(np.int64), np.repeat(per_w, taken) * share, np.repeat(per_s, taken) * share
