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
cost (:func:`~.external_lp.separable_bound`, then the LP optimum at ceil(D)) that decide most levels without a
rounding; one warm HiGHS model per state, solved only at the levels whose basis or point is needed; roundings
checked by lookup per machine in batches, and not drawn at all where no outcome can be feasible
(:mod:`~.rounding`).

The parts live beside it: a job's constants and levels (:mod:`~.job`), machine classes
(:mod:`~.machine_classes`), the external LP and its bounds (:mod:`~.external_lp`), the gain and the rounding
(:mod:`~.rounding`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..portable_math import dot
from .config import RoundingConfig
from .external_lp import (
    LinearProgram,
    disaggregate,
    integer_optimum,
    load_external_lp,
    separable_bound,
    solve_external_lp,
    unit_price,
)
from .job import FIT_ATOL, JobShape, LevelGrid, Option, level_grid
from .machine_classes import ClassMembers, MachineClasses, machine_classes
from .rounding import round_external, rounding_gain


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
    internal cost and a lower bound on any external cost (:func:`separable_bound`); ``exact[k]`` tells which
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
        machines, w_bar, s_bar = disaggregate(st.job, lp_sol, st.members, st.free)
        g = rounding_gain(st.rounding, st.job, d, st.free)
        rng = np.random.Generator(np.random.PCG64([*st.seed_key, k]))
        class_of = st.member_class[machines]  # a machine's p^w, p^s are its class's (equal prices, same sums)
        attempts, feasible, best = round_external(
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
        load_external_lp(st.job, st.p_w, st.p_s, st.cls_free, st.counts, lp)
        return lp

    def _run(self, level: int) -> tuple[tuple[tuple[np.ndarray, np.ndarray], float] | None, int, float]:
        """Solve ``level``'s LP on the current model: its (class solution, bound) or None, the simplex iterations it
        took and the cover row's dual (a subgradient of the optimum in D; 0 if infeasible)."""
        assert self._lp is not None
        st = self._state
        solved = solve_external_lp(st.demand[level], st.job, len(st.counts), self._lp)
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
    both = separable_bound(job, grid.covers, p_w, p_s, cls_free, counts, grid.cover_servers)
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
