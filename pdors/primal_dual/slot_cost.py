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

Under the thesis's model (:mod:`pdors.thesis`) gamma is the ratio its PS bandwidth rule (3.4) allows at each
rate, a real (``gamma`` external, ``gamma_internal`` internal, which also binds a rounding that puts every
task on one machine), and (3.5) s <= w holds in both cases.

Machines with identical prices and residual capacities form a class; the LP is solved over classes (an
exact reformulation, since a sum of copies of one polytope is its scaled copy) and its solution is
disaggregated onto machines by filling the lowest-indexed members first, which yields a vertex-like
solution of the machine-level LP.

What makes it fast without changing a value (docs/PERFORMANCE.md; tests/test_reference.py checks each
against the literal reference.py): the internal case for every level and class at once; the external case
worked out only as far as the DP needs it (:class:`SlotCosts`), behind two lower bounds on any external
cost (:func:`_separable_bound`, then the LP optimum at ceil(D)) that decide most levels without a rounding; one
warm HiGHS model per state, solved only at the levels whose basis or point is needed; roundings checked by
lookup per machine in batches, and not drawn at all where no outcome can be feasible (:func:`_count_bounds_allow`,
:func:`_roundable`).
"""

from __future__ import annotations

import functools
import hashlib
import math
import operator
from dataclasses import dataclass
from typing import NamedTuple

import highspy
import numpy as np

from ..highs_lp import highs_lp, new_highs, pass_lp
from ..portable_math import dot
from ..solo import COVER_RTOL, workers_for
from .config import GainEquation, RoundingConfig
from .gain import gain_eq29, gain_eq30

FIT_ATOL = 1e-9
UP_W, UP_S = np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1])  # rounding outcome o = dw + 2 ds
KEEP_W, KEEP_S = UP_W == 0, UP_S == 0  # the outcomes that round the worker (PS) count down
ROUNDING_BATCH = 64  # first batch of rounding attempts; batches double up to ROUNDING_BATCH_MAX
ROUNDING_BATCH_MAX = 1024
LP_BOUND_RTOL = 1e-6  # margin on the LP optimum used as a lower bound (solver tolerances are ~1e-7)
ROW_HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # odd: the row hash of :func:`machine_classes` mixes every word
COST_RANGE = 1e12  # LP costs are rescaled to [1, COST_RANGE]: prices start near L ~ 1e-15,
# below HiGHS's tolerances, which would make every feasible point "optimal"


@dataclass(frozen=True, kw_only=True)
class JobShape:
    """The per-job constants Algorithm 4 needs. ``gamma``: workers per PS; ``gamma_internal``: the thesis's
    workers per PS at the internal rate where it differs (then a rounded external solution that lands on one
    machine must meet it too); ``servers_at_most_workers``: the thesis's (3.5)."""

    per_sample_internal: float
    per_sample_external: float
    batch: int
    gamma: float
    worker_demand: np.ndarray
    ps_demand: np.ndarray
    gamma_internal: float | None = None
    servers_at_most_workers: bool = False

    @property
    def integer_covers(self) -> bool:
        """The thesis's Algorithm 4 step 8: the LP's right-hand sides are the integers m_w = ceil(D) workers and
        m_p = ceil(m_w / gamma) PSs (= ceil(m_w b^(e) / B_i) by (3.4)) instead of D and the ratio row."""
        return self.gamma_internal is not None

    def ps_cover(self, workers: float) -> float:
        """m_p for a cover of ``workers`` (integer covers only)."""
        return float(math.ceil(workers / self.gamma - 1e-12))

    def servers_allowed(self, workers: np.ndarray, servers: np.ndarray) -> np.ndarray | bool:
        """(3.5) where it applies: no more PSs than workers."""
        return servers <= workers if self.servers_at_most_workers else True


@dataclass(kw_only=True)
class Option:
    """One slot's allocation for one level: machine indices with their worker and PS counts."""

    cost: float
    machines: np.ndarray
    workers: np.ndarray
    servers: np.ndarray
    internal: bool


class Options:
    """Each level's allocation (``options[k]``, None if none): the internal case's, made when read (most levels are
    never read), or the external one set by :meth:`SlotCosts._settle`."""

    def __init__(self, internal: np.ndarray, host: np.ndarray, workers: np.ndarray, servers: np.ndarray):
        """``internal[k]``: the internal cost (inf where it does not fit) on machine ``host[k]`` with ``workers[k]``
        workers and ``servers[k]`` PSs."""
        self.internal, self.host, self.workers, self.servers = internal, host, workers, servers
        self.external: dict[int, Option] = {}

    def __getitem__(self, k: int) -> Option | None:
        if k in self.external:
            return self.external[k]
        if not np.isfinite(self.internal[k]):
            return None
        return Option(
            cost=float(self.internal[k]),
            machines=self.host[k : k + 1],
            workers=self.workers[k : k + 1],
            servers=self.servers[k : k + 1],
            internal=True,
        )

    def __setitem__(self, k: int, option: Option) -> None:
        self.external[k] = option

    def cost(self, k: int) -> float:
        """The cost of ``options[k]`` (inf if none)."""
        option = self.external.get(k)
        return option.cost if option is not None else float(self.internal[k])


class ExternalSolve(NamedTuple):
    """One rounded external case (Steps 8-11): rounding attempts drawn, feasible roundings among them, the
    LP relaxation's cost, the cheapest feasible rounding's cost (inf if none), the gain G_delta used and, if asked
    for, the optimum of the integer program the LP relaxes (:func:`integer_optimum`)."""

    attempts: int
    feasible: int
    lp_cost: float
    best_cost: float
    gain: float
    integer_cost: float = math.nan  # the integer program's optimum (inf if infeasible), with ``integer_optimum``


@dataclass(frozen=True, kw_only=True)
class SlotState:
    """What the external case of one slot state needs: the job, prices p and residual capacities [H, R],
    the machine classes (class of each machine, counts, their residual capacities and p^w, p^s), each
    level's cover D, the rounding settings with its seed key, and the shared HiGHS model."""

    job: JobShape
    prices: np.ndarray
    free: np.ndarray
    member_class: np.ndarray
    counts: np.ndarray
    cls_free: np.ndarray
    p_w: np.ndarray
    p_s: np.ndarray
    demand: np.ndarray
    rounding: RoundingConfig
    seed_key: tuple[int, ...]
    reject_on_failure: bool = False  # a level whose rounding fails keeps its LP cost and is marked failed

    @functools.cached_property
    def members(self) -> ClassMembers:
        """Machine indices of each class, ascending: only a rounding needs them, so they are made on demand."""
        return ClassMembers(self.member_class, len(self.counts))


class SlotCosts:
    """theta(t, v_k) for k = 0..Q (cost[0] = 0) of one slot state and the allocation behind each finite entry.

    The external case is worked out only as far as the DP needs it. ``cost[k]`` starts as the cheaper of the
    internal cost and a lower bound on any external cost (:func:`_separable_bound`); ``exact[k]`` tells which
    entries are final. :meth:`refine` makes one exact: it works out this state's LP for every candidate level up to
    k not done yet (as if solved in increasing order on the state's own warm HiGHS model, the order that fixes which
    optimal vertex each level gets, continued where the last call stopped; :meth:`_solve_lps_through`), which
    tightens those bounds to the LP optimum less ``LP_BOUND_RTOL`` (no integer solution beats it), raised along the
    optimum's tangent to ceil(D) workers (no rounding has fewer), then level k is rounded (Steps 9-11). The rounding of
    level k is seeded by (``seed_key``, k), so when it happens changes nothing. A level with no feasible rounding
    gets the internal cost; with ``reject_on_failure`` it keeps its LP cost instead (if below the internal
    one) and is marked in ``failed``: a schedule that uses it discards the job (paper Section V).
    """

    def __init__(self, cost: np.ndarray, options: Options, exact: np.ndarray, candidates: list[int], state: SlotState):
        self.cost, self.options, self.exact = cost, options, exact
        self.failed = np.zeros(len(cost), dtype=bool)  # rounding failed (with ``reject_on_failure``)
        self.external_solves: list[ExternalSolve] = []  # one per rounding
        self.lp_solves = 0
        self._candidates = candidates  # levels whose external case may beat the internal one
        # level -> (class LP solution, LP cost), once solved and until rounded
        self._solutions: dict[int, tuple[tuple[np.ndarray, np.ndarray], float]] = {}
        self._solved = 0  # candidates[:_solved] have had their LP solved
        self._lp: LinearProgram | None = None  # this state's HiGHS model, from its first LP on
        self._state = state
        # levels whose LP was skipped on the current basis (solved when rounded); the last optimum (D, bound) solved
        # in increasing order; whether every level is solved in order (integer covers, or after a replay)
        self._deferred: set[int] = set()
        self._anchor: tuple[float, float] | None = None
        self._in_order = state.job.integer_covers

    def refine(self, k: int) -> bool:
        """Make ``cost[k]`` exact; True if it was a bound (the row may have changed elsewhere too)."""
        if self.exact[k]:
            return False
        if k not in self._solutions:
            self._solve_lps_through(k)
            if k in self._deferred:
                self._solve_deferred(k)
            if self.exact[k]:
                return True
        st, (lp_sol, lp_cost) = self._state, self._solutions.pop(k)
        d = st.demand[k]
        machines, w_bar, s_bar = _disaggregate(st.job, lp_sol, st.members, st.free)
        g = rounding_gain(st.rounding, st.job, d, st.free)
        rng = np.random.Generator(np.random.PCG64([*st.seed_key, k]))
        class_of = st.member_class[machines]  # a machine's p^w, p^s are its class's (equal prices, same sums)
        attempts, feasible, best = _round(
            st.job,
            d,
            machines,
            w_bar * g,
            s_bar * g,
            st.prices,
            st.free,
            st.rounding,
            rng,
            unit_prices=(st.p_w[class_of], st.p_s[class_of]),
        )
        exact = integer_optimum(st.job, d, st.prices, st.free) if st.rounding.integer_optimum else math.nan
        self.external_solves.append(ExternalSolve(attempts, feasible, lp_cost, best.cost if best else np.inf, g, exact))
        if best is None and st.reject_on_failure and lp_cost < self._internal(k):
            self.cost[k], self.exact[k], self.failed[k] = lp_cost, True, True  # the job is discarded if used
            return True
        self._settle(k, best)
        return True

    def _solve_lps_through(self, k: int) -> None:
        """The class LPs of the candidate levels up to ``k`` not solved yet, as if solved in increasing order on
        this state's own warm HiGHS model (the order that fixes which optimal vertex each level gets), paused where
        the DP needs no more. A level whose LP bound reaches its internal cost is settled; the others' bounds rise
        to the LP optimum.

        Only the cover row's lower bound D changes from level to level, so a basis optimal at two covers is optimal
        at every cover between them (primal feasibility is a set of affine inequalities in D, dual feasibility does
        not depend on D), and in order the levels between would each be re-solved in 0 simplex iterations on that
        basis, leaving it as it is. So the highest pending level is solved first, warm from the last one solved: in
        0 iterations, the levels below it are skipped (their LP optima, affine in D on one basis, interpolated as
        bounds) and solved only if the DP asks to round one (:meth:`_solve_deferred`, again in 0 iterations on the
        same basis: HiGHS computes the point from the basis alone, so it gets the same bits as in order). Otherwise
        the model is rebuilt and every level solved so far re-solved in order (:meth:`_replay`). The thesis's
        integer covers change a second row (m_p), so they are always solved in order."""
        pending = []
        while self._solved < len(self._candidates) and self._candidates[self._solved] <= k:
            pending.append(self._candidates[self._solved])
            self._solved += 1
        if pending and self._lp is None:
            self._lp = self._new_lp()
            level = pending.pop(0)
            solved, _, dual = self._run(level)
            self._apply(level, solved, dual)
        if not pending:
            return
        if self._in_order:
            for level in pending:
                solved, _, dual = self._run(level)
                self._apply(level, solved, dual)
            return
        top, below = pending[-1], pending[:-1]
        anchor = self._anchor
        solved, iterations, dual = self._run(top)
        if solved is None or iterations or anchor is None:
            if below or self._deferred:  # the levels skipped were not all on one basis: solve them in order
                self._replay()
            else:  # the next level in order: this is the in-order solve itself
                self._apply(top, solved, dual)
            return
        demand = self._state.demand
        low_d, low_bound = anchor
        slope = (solved[1] - low_bound) / (demand[top] - low_d)
        for level in below:
            bound = low_bound + slope * (self._integral(level) - low_d)  # on the line through the segment
            if bound >= self._internal(level):  # no rounding could beat internal
                self._settle(level, None)
            else:
                self.cost[level] = max(self.cost[level], bound)
                self._deferred.add(level)
        self._apply(top, solved, dual)

    def _solve_deferred(self, k: int) -> None:
        """The LP of a level skipped by :meth:`_solve_lps_through`, now that the DP asks to round it."""
        self._deferred.discard(k)
        solved, iterations, dual = self._run(k)
        if solved is None or iterations:  # not on the basis its neighbours were solved on (numerically)
            self._replay()
        else:
            self._apply(k, solved, dual, anchor=False)

    def _replay(self) -> None:
        """Rebuild the model and solve every level solved so far in increasing order, as from the start (the cold
        solve is deterministic); levels already exact are re-solved only for the basis they leave."""
        self._in_order = True
        self._deferred.clear()
        self._lp = self._new_lp()
        for level in self._candidates[: self._solved]:
            solved, _, dual = self._run(level)
            if not self.exact[level]:
                self._apply(level, solved, dual)

    def _new_lp(self) -> LinearProgram:
        st = self._state
        lp = LinearProgram()
        _load_external_lp(st.job, st.p_w, st.p_s, st.cls_free, st.counts, lp)
        return lp

    def _run(self, level: int) -> tuple[tuple[tuple[np.ndarray, np.ndarray], float] | None, int, float]:
        """Solve ``level``'s LP on the current model: its (class solution, bound) or None, the simplex iterations it
        took and the cover row's dual (a subgradient of the optimum in D; 0 if infeasible)."""
        assert self._lp is not None
        st = self._state
        solved = _solve_external_lp(st.demand[level], st.job, len(st.counts), self._lp)
        self.lp_solves += 1
        return solved, self._lp.iterations(), self._lp.cover_dual() if solved is not None else 0.0

    def _integral(self, level: int) -> float:
        """The cover a rounding of ``level`` must meet: ceil(D) workers, since a rounding's worker count is an
        integer >= D (not with ``reject_on_failure``, where a failed level costs its LP optimum at D itself)."""
        d = float(self._state.demand[level])
        return d if self._state.reject_on_failure else math.ceil(d)

    def _apply(
        self,
        level: int,
        solved: tuple[tuple[np.ndarray, np.ndarray], float] | None,
        dual: float,
        anchor: bool = True,
    ) -> None:
        """Settle ``level`` if its LP leaves no rounding a chance against internal, else keep its solution for the
        rounding and raise its bound. With ``anchor``, this solve is the last in increasing order: its optimum is the
        point the next skipped levels are interpolated from."""
        if anchor:  # an infeasible solve leaves a basis no optimum is known on
            self._anchor = (float(self._state.demand[level]), solved[1]) if solved is not None else None
        if solved is None or solved[1] + dual * (self._integral(level) - float(self._state.demand[level])) >= (
            self._internal(level)
        ):  # no rounding could beat internal
            self._settle(level, None)
            return
        st = self._state
        lp_sol, bound = solved
        self._solutions[level] = (lp_sol, float(dot(lp_sol[0], st.p_w) + dot(lp_sol[1], st.p_s)))
        # the optimum is convex in D: its tangent at D bounds it at ceil(D), which every rounding must cover
        self.cost[level] = max(self.cost[level], bound + dual * (self._integral(level) - float(st.demand[level])))

    def _internal(self, k: int) -> float:
        return self.options.cost(k)

    def _settle(self, k: int, external: Option | None) -> None:
        """theta = the cheaper of internal and ``external`` (ties to internal)."""
        if external is not None and external.cost < self._internal(k):
            self.options[k] = external
        self.cost[k] = self._internal(k)
        self.exact[k] = True


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


def rescaled_costs(cost: np.ndarray) -> tuple[np.ndarray, float]:
    """LP costs divided by the smallest positive one and capped at ``COST_RANGE`` (see there), and the divisor."""
    positive = cost[cost > 0]
    scale = positive.min() if positive.size else 1.0
    return np.minimum(cost / scale, COST_RANGE), scale


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


def state_digest(prices: np.ndarray, free: np.ndarray) -> int:
    """A stable 64-bit fingerprint of a slot state (seeds the rounding and keys caches)."""
    h = hashlib.blake2b(digest_size=8)
    h.update(np.ascontiguousarray(prices, dtype=np.float64).data)  # the buffer itself: its bytes, not copied
    h.update(np.ascontiguousarray(free, dtype=np.float64).data)
    return int.from_bytes(h.digest(), "little")


class MachineClasses(NamedTuple):
    """Machines with identical prices and residual capacities: each class's lowest member, its size, and the
    class of every machine (classes ordered by lowest member, for deterministic ties)."""

    first: np.ndarray
    counts: np.ndarray
    member_class: np.ndarray


def row_keys(words: np.ndarray) -> np.ndarray:
    """The 64-bit hash of each row of ``words`` [H, n] (uint64): (..((w_0 m + w_1) m + w_2) m ..) + w_(n-1) modulo
    2^64 with m = ``ROW_HASH_MULTIPLIER``, i.e. sum_j w_j m^(n-1-j). Unsigned integer arithmetic wraps modulo 2^64
    whatever the order of the operations, so one matrix product gives the same keys as the column-by-column loop
    (tests/test_pdors_same_bits.py)."""
    width = words.shape[1]
    powers = np.array([pow(int(ROW_HASH_MULTIPLIER), width - 1 - j, 1 << 64) for j in range(width)], dtype=np.uint64)
    keys: np.ndarray = words @ powers
    return keys


def machine_classes(prices: np.ndarray, free: np.ndarray) -> MachineClasses:
    """The classes of a slot state (a function of the state alone, so callers may keep them per state).

    Rows are grouped by one stable sort of a 64-bit hash of their bits (-0.0 made 0.0, so that equal floats have
    equal bits), checked: if rows of one hash differ (a collision, or NaN), by one stable lexicographic sort of
    their values instead (``np.unique(axis=0)``'s grouping, float equality). Either way the groups are the same
    and the first row of each group in sorted order is its lowest member."""
    rows = np.concatenate([prices, free], axis=1) + 0.0
    key = row_keys(rows.view(np.uint64))
    order = key.argsort(kind="stable")
    ordered = rows[order]
    start = np.ones(len(order), dtype=bool)
    sorted_key = key[order]
    start[1:] = sorted_key[1:] != sorted_key[:-1]
    if not (ordered == ordered[start.nonzero()[0][start.cumsum() - 1]]).all():  # each row equals its group's first
        order = np.lexsort(rows.T[::-1])
        ordered = rows[order]
        start[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    starts = start.nonzero()[0]
    first = order[starts]
    counts = np.diff(np.append(starts, len(order)))
    by_first = first.argsort()
    rank = np.empty_like(by_first)
    rank[by_first] = np.arange(len(by_first))
    member_class = np.empty_like(order)
    member_class[order] = rank[start.cumsum() - 1]
    return MachineClasses(first[by_first], counts[by_first], member_class)


class LevelGrid(NamedTuple):
    """What :func:`slot_costs` needs of a job's workload levels alone, the same in every slot state (so computed
    once per job, :func:`level_grid`): the internal case's workers, PSs (int64) and resources [Q, R] per level,
    which levels it allows at all (w <= F and (3.5), level 0 not), the external cover D per level, and the covers
    and PS counts the separable bound is evaluated at (D, then ceil(D) and its PSs, unless ``reject_on_failure``)."""

    levels: np.ndarray
    workers: np.ndarray
    servers: np.ndarray
    need: np.ndarray
    allowed: np.ndarray
    demand: np.ndarray
    covers: np.ndarray
    cover_servers: np.ndarray
    reject_on_failure: bool


def level_grid(job: JobShape, levels: np.ndarray, reject_on_failure: bool = False) -> LevelGrid:
    """The :class:`LevelGrid` of ``job`` at workload ``levels`` (samples, levels[0] = 0)."""
    w_int = workers_for(levels, job.per_sample_internal)
    s_int = np.ceil(w_int / (job.gamma if job.gamma_internal is None else job.gamma_internal))
    need = w_int[:, None] * job.worker_demand + s_int[:, None] * job.ps_demand  # [Q, R]
    allowed = (w_int <= job.batch) & job.servers_allowed(w_int, s_int)
    allowed[0] = False
    demand = levels * job.per_sample_external * (1.0 - COVER_RTOL)  # the cover D of (26), as workers_for
    if job.integer_covers:
        demand = np.ceil(demand)  # m_w (thesis Algorithm 4 step 8); a rounding needs that many workers anyway
    if reject_on_failure:
        covers, servers = demand, demand / job.gamma
    else:  # a rounding has integral counts: ceil(D) workers and the PSs they need (one bound call for both covers)
        workers = np.ceil(demand)
        covers = np.concatenate([demand, workers])
        servers = np.concatenate([demand / job.gamma, np.ceil(workers / job.gamma - 1e-9)])
    return LevelGrid(
        levels=levels,
        workers=w_int.astype(np.int64),
        servers=s_int.astype(np.int64),
        need=need,
        allowed=allowed,
        demand=demand,
        covers=covers,
        cover_servers=servers,
        reject_on_failure=reject_on_failure,
    )


def slot_costs(
    job: JobShape,
    levels: np.ndarray,
    prices: np.ndarray,
    free: np.ndarray,
    rounding: RoundingConfig,
    seed_key: tuple[int, ...],
    lazy: bool = False,
    classes: MachineClasses | None = None,
    reject_on_failure: bool = False,
    grid: LevelGrid | None = None,
) -> SlotCosts:
    """theta for workload ``levels`` (samples, levels[0] = 0) in a slot with ``prices``/``free`` [H, R].

    ``seed_key`` (ints) seeds the randomised rounding together with the level, so the outcome is a
    deterministic function of the job, the slot state and the level. With ``lazy``, external cases are
    left as lower bounds until :meth:`SlotCosts.refine`. ``classes``: :func:`machine_classes` of this state,
    if the caller has them; ``grid``: :func:`level_grid` of ``job`` and ``levels``, if the caller has it.
    """
    if grid is None:
        grid = level_grid(job, levels, reject_on_failure)
    assert grid.reject_on_failure == reject_on_failure and grid.levels is levels
    q = len(levels)
    cost = np.full(q, np.inf)
    cost[0] = 0.0
    first, counts, member_class = classes if classes is not None else machine_classes(prices, free)
    cls_prices, cls_free = prices[first], free[first]

    # Case 1 (internal), all levels and classes at once.
    need = grid.need
    # need[:, r] never falls as the level rises (w and s do not, demands are >= 0, rounding is monotone): the levels
    # whose need[k, r] <= room + FIT_ATOL in every resource are a prefix, counted per class by binary search
    fit_count = np.full(len(first), q)
    for r in range(need.shape[1]):
        fit_count = np.minimum(fit_count, need[:, r].searchsorted(cls_free[:, r] + FIT_ATOL, side="right"))
    # Only the classes that hold some level >= 1 (a few): every other class costs inf at every level, so the first
    # cheapest class of a level is the first cheapest of these (in ascending class order), or, where none holds the
    # level, class 0 with inf (the first minimum of an all-inf column)
    holding = (fit_count > 1).nonzero()[0]
    fits = np.arange(q)[None, :] < fit_count[holding, None]  # [C', Q]
    fits &= grid.allowed[None, :]
    int_cost = np.full(fits.shape, np.inf)  # [C', Q]
    fit_row, fit_level = fits.nonzero()  # priced only where it fits: each cost is its own sum
    int_cost[fit_row, fit_level] = unit_price(cls_prices[holding[fit_row]], need[fit_level])
    best_cls, internal = np.zeros(q, dtype=np.intp), np.full(q, np.inf)
    if holding.size:
        best_row = int_cost.argmin(axis=0)
        internal = int_cost[best_row, np.arange(q)]
        best_cls = np.where(np.isfinite(internal), holding[best_row], 0)
    finite = np.isfinite(internal)
    cost[finite] = internal[finite]
    options = Options(internal, first[best_cls], grid.workers, grid.servers)  # shared by the job's states, read only

    # Case 2 (external): bounds now, the LP and the rounding when refined.
    p_w, p_s = unit_price(cls_prices, job.worker_demand), unit_price(cls_prices, job.ps_demand)
    both = _separable_bound(job, grid.covers, p_w, p_s, cls_free, counts, grid.cover_servers)
    bound, tight = (both, both) if reject_on_failure else (both[:q], np.maximum(both[:q], both[q:]))
    # the candidates are those of the bound at D, so that the LPs solved are the same
    candidates = np.flatnonzero(bound < cost)  # D > F or no room: bound = inf
    exact = np.ones(q, dtype=bool)
    exact[candidates] = False
    cost[candidates] = np.minimum(cost[candidates], tight[candidates])
    state = SlotState(
        job=job,
        prices=prices,
        free=free,
        member_class=member_class,
        counts=counts,
        cls_free=cls_free,
        p_w=p_w,
        p_s=p_s,
        demand=grid.demand,
        rounding=rounding,
        seed_key=seed_key,
        reject_on_failure=reject_on_failure,
    )
    out = SlotCosts(cost, options, exact, candidates.tolist(), state)
    if not lazy:
        for k in candidates.tolist():
            out.refine(k)
    return out


def _separable_bound(
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


def _load_external_lp(
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
    :func:`_load_external_lp` with one class per machine and every variable integral (a small MILP), inf if it
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


def _solve_external_lp(
    demand: float, job: JobShape, n: int, lp: LinearProgram
) -> tuple[tuple[np.ndarray, np.ndarray], float] | None:
    """Per-class (W, S) of the LP optimum with cover bound ``demand`` and a lower bound on the optimum,
    or None if infeasible."""
    solved = lp.solve_with_cover(demand, job.batch, job.ps_cover(demand) if job.integer_covers else None)
    if solved is None:
        return None
    sol, bound = solved
    return (np.maximum(sol[:n], 0), np.maximum(sol[n:], 0)), bound  # clip(min=0) is this ufunc call


def _disaggregate(
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


class ClassMembers:
    """Machine indices of each class, ascending: ``members[c]`` is a slice of one sorted index array (a list of
    per-class arrays would build up to H arrays per slot state, where a rounding reads a few)."""

    def __init__(self, member_class: np.ndarray, classes: int):
        self.order = np.argsort(member_class, kind="stable")
        self.sizes = np.bincount(member_class, minlength=classes)
        ends = np.cumsum(self.sizes)
        self.starts = ends - self.sizes  # members[c][0] is order[starts[c]]
        self.ends = ends.tolist()

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, c: int | np.integer) -> np.ndarray:
        return self.order[(self.ends[c - 1] if c > 0 else 0) : self.ends[c]]


def rounding_gain(rounding: RoundingConfig, job: JobShape, demand: float, free: np.ndarray) -> float:
    """G_delta of Step 9 for cover ``demand``: the configured gain, else eq. (30) or eq. (29) from delta."""
    if rounding.gain is not None:
        return rounding.gain
    if rounding.theorem == GainEquation.EQ30_W1:
        return gain_eq30(rounding.delta, demand)  # W_1 = V_i[t] (tau + ...)
    usable = free[np.all(free > 0, axis=1)]
    ratios = [float(job.batch)]
    for demand_vec in (job.worker_demand, job.ps_demand):
        pos = demand_vec > 0
        if usable.size and pos.any():
            ratios.append(float((usable[:, pos] / demand_vec[pos]).min()))
    return gain_eq29(rounding.delta, min(ratios), free.shape[1], free.shape[0])  # W_2


def _round(
    job: JobShape,
    demand: float,
    machines: np.ndarray,
    w_scaled: np.ndarray,
    s_scaled: np.ndarray,
    prices: np.ndarray,
    free: np.ndarray,
    rounding: RoundingConfig,
    rng: np.random.Generator,
    unit_prices: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[int, int, Option | None]:
    """Randomised rounding (27)-(28) until S feasible solutions or the attempt cap; the cheapest wins.

    Each machine's four outcomes (worker count down/up x PS count down/up) are checked against its capacity
    once; an attempt is then a lookup per machine instead of a load computation per resource. When no
    outcome of the draws can be feasible, the attempts are not drawn: the result, ``max_attempts``
    attempts and no solution, is what drawing them would give. That is checked by counting bounds
    (:func:`_count_bounds_allow`, cheap, rules out most) before drawing and, if the first batch finds
    nothing, exactly (:func:`_roundable`). ``unit_prices``: each machine's p^w and p^s, if the caller has them.
    """
    w_floor, s_floor = np.floor(w_scaled), np.floor(s_scaled)
    w_frac, s_frac = w_scaled - w_floor, s_scaled - s_floor
    load = (w_floor[:, None] + UP_W)[:, :, None] * job.worker_demand + (s_floor[:, None] + UP_S)[
        :, :, None
    ] * job.ps_demand  # [m, 4, R]
    fits = (load <= (free[machines] + FIT_ATOL)[:, None, :]).all(axis=2)  # [m, 4], index dw + 2 ds
    base_w, base_s = w_floor.sum(), s_floor.sum()
    possible = fits & (KEEP_W | (w_frac > 0)[:, None]) & (KEEP_S | (s_frac > 0)[:, None])
    if not _count_bounds_allow(job, demand, base_w, base_s, possible):
        return rounding.max_attempts, 0, None
    critical = (~fits.all(axis=1)).nonzero()[0]
    fits_critical, column = fits[critical], np.arange(critical.size)
    p_w, p_s = unit_prices or (
        unit_price(prices[machines], job.worker_demand),
        unit_price(prices[machines], job.ps_demand),
    )
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
        ok &= job.servers_allowed(wsum, ssum)
        if job.gamma_internal is not None:  # an outcome on one machine runs internally (Fact 1)
            hosts = ((w_floor + up_w > 0) | (s_floor + up_s > 0)).sum(axis=1)
            ok &= (hosts != 1) | (job.gamma_internal * ssum >= wsum)
        if critical.size:
            outcome = up_w[:, critical] + 2 * up_s[:, critical]
            ok &= fits_critical[column, outcome].all(axis=1)
        idx = ok.nonzero()[0]
        take = idx[: rounding.feasible_solutions - feasible]
        attempts += int(take[-1]) + 1 if take.size == rounding.feasible_solutions - feasible else batch
        feasible += take.size
        if take.size:
            w, s = w_floor + up_w[take], s_floor + up_s[take]
            costs = dot(w, p_w) + dot(s, p_s)  # per row: the same sums as rounded_cost's, row by row
            j = int(costs.argmin())
            if costs[j] < best_cost:
                best_cost, best = float(costs[j]), (w[j], s[j])
        elif attempts == batch < rounding.max_attempts and not _roundable(job, demand, base_w, base_s, possible):
            return rounding.max_attempts, 0, None  # the first batch found nothing, and none can
    if best is None:
        return attempts, 0, None
    w, s = best
    keep = (w > 0) | (s > 0)
    option = Option(
        cost=best_cost,
        machines=machines[keep],
        workers=w[keep].astype(np.int64),
        servers=s[keep].astype(np.int64),
        internal=False,
    )
    return attempts, feasible, option


def _count_bounds_allow(job: JobShape, demand: float, base_w: int, base_s: int, possible: np.ndarray) -> bool:
    """A necessary condition for :func:`_roundable`: every machine has an outcome, and the totals allowed by
    the per-machine bounds on the number rounded up (A workers, B PSs) meet cap (25), cover (26) and the
    ratio, ignoring which (A, B) pairs the machines can reach together."""
    if not possible.any(axis=1).all():
        return False
    up_min = int((~(possible[:, 0] | possible[:, 2])).sum())  # machines whose every outcome rounds w up
    up_max = int((possible[:, 1] | possible[:, 3]).sum())
    ssum_max = base_s + int((possible[:, 2] | possible[:, 3]).sum())
    up = max(up_min, math.ceil(demand - base_w) - 1)
    while base_w + up < demand:  # the fewest meeting the cover, as checked
        up += 1
    return bool(up <= up_max and base_w + up <= job.batch and job.gamma * ssum_max >= base_w + up and ssum_max > 0)


def _roundable(job: JobShape, demand: float, base_w: int, base_s: int, possible: np.ndarray) -> bool:
    """Whether some outcome of (27)-(28) with positive probability is a feasible integer solution.

    ``possible[i, dw + 2 ds]``: machine i can round its worker count up by dw and its PS count by ds (the
    fractional part is > 0 where it is rounded up) and still fit its capacity (24). The sums A (workers
    rounded up) and B (PSs rounded up) that some such choice reaches are collected exactly, as bitsets
    indexed A * stride + B: a reachability DP over the machines where some outcome does not fit, then a
    shift by every (a, b) of the rectangle the others reach freely (each of those chooses dw and ds
    independently). The answer is whether a reached (A, B) meets cap (25), cover (26) and the ratio, the
    checks every attempt makes. Capacity-tight LP optima often admit none (about 30% of the external solves
    at paper scale), and proving it saves the paper's 5000 attempts.
    """
    if not possible.any(axis=1).all():
        return False
    m = len(possible)
    stride = m + 2  # B <= m never carries into the next row
    reach = 1  # {(0, 0)}
    loose = (
        possible.all(axis=1)
        | (possible == [True, True, False, False]).all(axis=1)
        | (possible == [True, False, True, False]).all(axis=1)
        | (possible == [True, False, False, False]).all(axis=1)
    )
    for row in possible[~loose]:
        shifts = [(o & 1) * stride + (o >> 1) for o in np.flatnonzero(row).tolist()]  # o = dw + 2 ds
        reach = functools.reduce(operator.or_, (reach << shift for shift in shifts))
    reach = _dilate(reach, int(possible[loose, 1].sum()), stride)
    reach = _dilate(reach, int(possible[loose, 2].sum()), 1)
    a = np.arange(m + 1)[:, None]
    b = np.arange(stride)[None, :]
    wsum, ssum = base_w + a, base_s + b
    ok = (wsum <= job.batch) & (wsum >= demand) & (job.gamma * ssum >= wsum) & (ssum > 0) & (b <= m)
    ok &= job.servers_allowed(wsum, ssum)
    mask = int.from_bytes(np.packbits(ok.ravel(), bitorder="little").tobytes(), "little")
    return bool(reach & mask)


def _dilate(bits: int, n: int, step: int) -> int:
    """The set ``bits`` shifted by every multiple 0..n of ``step`` (Minkowski sum with an interval)."""
    width = 1
    while n > 0:
        k = min(width, n)
        bits |= bits << (k * step)
        n -= k
        width *= 2
    return bits
