"""``solve()``: the offline DMLRS optimum of one instance, judged by the validator.

The MILP (``milp.py``) is solved by the chosen solver; its schedule is turned into a
:class:`pdors.schedule.Schedule` and checked by :func:`pdors.validator.validate`. The reported objective is
the validator's total utility; the MILP's own objective travels alongside. The validated utility must equal
it within ``AGREE_TOL`` or exceed it (up to the bound): an incumbent may be worth more under the validator
than the MILP believed (it claimed a later completion slot than its samples allow), never less. A result is
``proven_optimal`` only when the solver proved its gap target, the relative gap of the validated objective
to the solver's bound is <= ``mip_gap`` (+ float noise), the validator finds no violation, and the objectives
are consistent. Anything else is reported with its status and gap, never as OPT.

The solver runs in a child process (:mod:`.deadline`) killed at ``wall_limit`` (default ``time_limit`` plus
``GRACE`` plus twice the time this process took to build the model, which the child builds again and hands
to the solver: at H = 100, I = 50, T = 20, `workload_scale` 0.1, building takes 28 s of CPU and minutes of wall
time on a loaded machine, and a fixed slack killed every such solve before it could report its bound): HiGHS does not
always honour its own time limit, and a fresh process also keeps HiGHS's
process-wide thread scheduler, which a policy's LPs may already have started with other settings, out of the
solve (highspy 1.16 refuses ``threads=1`` then). A killed solve is ``time_limit`` with no result.

Tolerance contract: a proven OPT ``o`` with gap target ``g`` says only that the true optimum lies in
``[o, o / (1 - g)]`` (the solver stopped at ``(bound - o) / bound <= g``). :meth:`OptResult.ceiling` is the
most any feasible schedule can earn by this result; a policy between ``o`` and the ceiling equals OPT within
the gap, above it is an error (``offline_opt.compare``).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np

from pdors.config import JSON
from pdors.errors import InputError
from pdors.model import Instance
from pdors.schedule import Schedule
from pdors.validator import Validation, validate

from .deadline import TIMED_OUT, call_with_deadline
from .solvers import SolverRun
from .strengthening import Strengthening

AGREE_TOL = 1e-6  # relative: |validated - MILP objective| <= AGREE_TOL * max(1, |objective|)
DEFAULT_GAP = 1e-6
GRACE = (30.0, 0.1)  # the wall-clock guard's slack over the solver's time limit: 30 s + 10%
# The guard waits GRACE[0] + (1 + GRACE[1]) x time_limit (+ the model's build time) in one poll(2), whose timeout is
# a C int of milliseconds: 2^31 - 1 ms, 24.8 days (beyond it, OverflowError). 1e6 s (11.6 days) leaves room for
# the grace and the build.
MAX_TIME_LIMIT = 1e6


def limit_problems(time_limit: float, mip_gap: float) -> list[str]:
    """``"field: reason"`` for a time limit or gap target no solve can honour (empty: both fine)."""
    out = []
    if not 0 < time_limit <= MAX_TIME_LIMIT:
        out.append(
            f"time_limit: must lie in (0, {MAX_TIME_LIMIT:,.0f}] seconds (the guard's wait limit), got {time_limit}"
        )
    if not 0 <= mip_gap < 1:
        out.append(f"mip_gap: must lie in [0, 1), got {mip_gap}")
    return out


def default_wall_limit(time_limit: float, build_s: float = 0.0) -> float:
    """The guard's limit: the solver's time limit with ``GRACE``, plus the child's model work (``build_s`` is
    this process's build time; the child builds the same model and writes it for the solver: twice that)."""
    return GRACE[0] + (1.0 + GRACE[1]) * time_limit + 2.0 * build_s


@dataclass(kw_only=True)
class OptResult:
    """One offline-optimum solve. ``objective``: validated utility of the schedule found (None if none);
    ``bound``: the solver's proven upper bound on OPT (None if it gave none); ``gap``: (bound - objective) /
    max(|bound|, 1e-10), 0 when both are 0; ``status``: the solver's (optimal | time_limit | infeasible |
    error) or ``invalid`` when the validator disagrees with the MILP."""

    objective: float | None
    mip_objective: float | None
    bound: float | None
    gap: float | None
    status: str
    proven_optimal: bool
    solver: str
    wall_s: float
    time_limit: float
    mip_gap: float
    schedule: Schedule | None = field(repr=False, default=None)
    validation: Validation | None = field(repr=False, default=None)
    violations: list[JSON] = field(default_factory=list)
    formulation: JSON = field(default_factory=dict)
    num_variables: int = 0
    num_constraints: int = 0
    message: str = ""  # the solver's termination condition, or why the guard stopped it

    def ceiling(self) -> float | None:
        """The most utility a feasible schedule can have, as far as this result proves (None: unknown): a
        proven OPT up to its gap target, else the solver's bound; plus float noise (``AGREE_TOL``)."""
        return ceiling(self.objective, self.bound, self.proven_optimal, self.mip_gap)

    @property
    def admitted(self) -> int | None:
        return int(self.schedule.admitted.sum()) if self.schedule is not None else None

    def to_dict(self) -> JSON:
        """JSON-friendly form (the schedule as sparse cells)."""
        out = {k: v for k, v in asdict(self).items() if k not in ("schedule", "validation")}
        out["admitted"] = self.admitted
        out["schedule"] = self.schedule.to_sparse() if self.schedule is not None else None
        if self.validation is not None:
            out["completion"] = self.validation.completion.tolist()
            out["job_utility"] = self.validation.utility.tolist()
        return out


def ceiling(objective: float | None, bound: float | None, proven: bool, mip_gap: float) -> float | None:
    """:meth:`OptResult.ceiling` from plain values (a sweep's recorded OPT row has these)."""
    top = objective / (1.0 - mip_gap) if proven and objective is not None else bound
    return None if top is None else top + AGREE_TOL * max(1.0, abs(top))


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None:
        return None
    if abs(bound) < 1e-10 and abs(objective) < 1e-10:
        return 0.0
    return max(0.0, bound - objective) / max(abs(bound), 1e-10)


def _solve_built(
    instance: Instance,
    strengthening: Strengthening,
    solver: str,
    time_limit: float,
    mip_gap: float,
    incumbent: tuple[Schedule, np.ndarray] | None,
) -> tuple[SolverRun, bool, dict[str, float] | None]:
    """The child process's part: build, warm-start (CBC), solve; the run, whether the start was used, and
    every variable's value (None without a solution) for the caller's copy of the same model."""
    import pyomo.environ as pyo

    from .milp import build, warm_start
    from .solvers import solve_model

    built = build(instance, strengthening)
    warm = incumbent is not None and solver == "cbc" and warm_start(built, instance, *incumbent)
    run = solve_model(built.model, solver, time_limit, mip_gap, warm)
    values = {v.name: v.value for v in built.model.component_data_objects(pyo.Var)} if run.has_solution else None
    return run, warm, values


def solve(
    instance: Instance,
    solver: str = "highs",
    time_limit: float = 300.0,
    mip_gap: float = DEFAULT_GAP,
    strengthening: Strengthening = Strengthening(),
    incumbent: tuple[Schedule, np.ndarray] | None = None,
    wall_limit: float | None = None,
) -> OptResult:
    """Solve offline DMLRS on ``instance``.

    ``incumbent``: a validated feasible schedule and its completion slots (e.g. the best online policy's),
    handed to CBC as a MIP start (Pyomo passes no start to glpsol or HiGHS). Measured: an objective cutoff
    at the incumbent's utility instead slowed HiGHS down (docs/OFFLINE_OPT.md), so there is none.
    ``wall_limit``: seconds after which the solver process is killed (default ``default_wall_limit``).
    """
    problems = limit_problems(time_limit, mip_gap)
    if problems:
        raise InputError(problems[0])
    import pyomo.environ as pyo  # here, not at the top: `compare` and the CLI import this module for its types

    from .milp import build, schedule_of

    started = time.perf_counter()
    built = build(instance, strengthening)
    build_s = time.perf_counter() - started
    warm = False
    if not any(built.completion.values()):
        # No job can reach V_i by T-1 even at its fastest rate: OPT = 0 without a solver call.
        run = SolverRun(
            solver=solver,
            status="optimal",
            has_solution=True,
            objective=0.0,
            bound=0.0,
            wall_s=0.0,
            message="no job can complete",
        )
    else:
        wall = default_wall_limit(time_limit, build_s) if wall_limit is None else wall_limit
        start = time.perf_counter()
        answer = call_with_deadline(
            _solve_built, (instance, strengthening, solver, time_limit, mip_gap, incumbent), wall
        )
        if answer is TIMED_OUT:
            run = SolverRun(
                solver=solver,
                status="time_limit",
                has_solution=False,
                objective=None,
                bound=None,
                wall_s=time.perf_counter() - start,
                message=f"killed by the wall-clock guard after {wall:g} s: time limit, no result",
            )
        else:
            run, warm, values = answer
            for v in built.model.component_data_objects(pyo.Var) if values is not None else ():
                v.set_value(values[v.name], skip_validation=True)
    result = OptResult(
        objective=None,
        mip_objective=run.objective,
        bound=run.bound,
        gap=None,
        status=run.status,
        proven_optimal=False,
        solver=solver,
        wall_s=run.wall_s,
        time_limit=time_limit,
        mip_gap=mip_gap,
        formulation=asdict(strengthening) | {"warm_start": warm},
        num_variables=built.model.nvariables(),
        num_constraints=built.model.nconstraints(),
        message=run.message,
    )
    if run.status == "infeasible":
        result.status = "error"  # DMLRS always has the empty schedule: infeasible means a model bug
    if not run.has_solution:
        return result
    schedule = schedule_of(built, instance)
    check = validate(instance, schedule)
    result.schedule, result.validation = schedule, check
    result.objective = check.total_utility
    result.violations = [v.as_dict() for v in check.violations]
    result.gap = relative_gap(result.objective, run.bound)
    believed = run.objective if run.objective is not None else np.nan  # a solution has an objective
    tol = AGREE_TOL * max(1.0, abs(believed))
    # An incumbent may claim completion later than its samples allow (a non-optimal choice of c); then the
    # validated utility is higher, which is fine up to the bound. Lower than the MILP believed is a bug.
    consistent = believed - tol <= result.objective <= (run.bound if run.bound is not None else np.inf) + tol
    if check.violations or not consistent:
        result.status = "invalid"
    result.proven_optimal = result.status == "optimal" and result.gap is not None and result.gap <= mip_gap + 1e-9
    return result
