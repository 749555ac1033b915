"""``solve()``: the offline DMLRS optimum of one instance, judged by the validator.

The MILP (``milp.py``) is solved by the chosen solver; its schedule is turned into a
:class:`pdors.schedule.Schedule` and checked by :func:`pdors.validator.validate`. The reported objective is
the validator's total utility; the MILP's own objective travels alongside. The validated utility must equal
it within ``AGREE_TOL`` or exceed it (up to the bound): an incumbent may be worth more under the validator
than the MILP believed (it claimed a later completion slot than its samples allow), never less. A result is
``proven_optimal`` only when the solver proved its gap target, the relative gap of the validated objective
to the solver's bound is <= ``mip_gap`` (+ float noise), the validator finds no violation, and the objectives
are consistent. Anything else is reported with its status and gap, never as OPT.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from pdors.model import Instance
from pdors.schedule import Schedule
from pdors.validator import Validation, validate

from .milp import Strengthening, build, schedule_of, warm_start
from .solvers import SolverRun, solve_model

AGREE_TOL = 1e-6      # relative: |validated - MILP objective| <= AGREE_TOL * max(1, |objective|)
DEFAULT_GAP = 1e-6


@dataclass
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
    violations: list[dict] = field(default_factory=list)
    formulation: dict = field(default_factory=dict)
    num_variables: int = 0
    num_constraints: int = 0

    @property
    def admitted(self) -> int | None:
        return int(self.schedule.admitted.sum()) if self.schedule is not None else None

    def to_dict(self) -> dict:
        """JSON-friendly form (the schedule as sparse cells)."""
        out = {k: v for k, v in asdict(self).items() if k not in ("schedule", "validation")}
        out["admitted"] = self.admitted
        out["schedule"] = self.schedule.to_sparse() if self.schedule is not None else None
        if self.validation is not None:
            out["completion"] = self.validation.completion.tolist()
            out["job_utility"] = self.validation.utility.tolist()
        return out


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None:
        return None
    if abs(bound) < 1e-10 and abs(objective) < 1e-10:
        return 0.0
    return max(0.0, bound - objective) / max(abs(bound), 1e-10)


def solve(instance: Instance, solver: str = "highs", time_limit: float = 300.0, mip_gap: float = DEFAULT_GAP,
          strengthening: Strengthening = Strengthening(), incumbent: tuple[Schedule, np.ndarray] | None = None
          ) -> OptResult:
    """Solve offline DMLRS on ``instance``.

    ``incumbent``: a validated feasible schedule and its completion slots (e.g. the best online policy's),
    handed to CBC as a MIP start (Pyomo passes no start to glpsol or HiGHS). Measured: an objective cutoff
    at the incumbent's utility instead slowed HiGHS down (docs/OFFLINE_OPT.md), so there is none.
    """
    built = build(instance, strengthening)
    warm = incumbent is not None and solver == "cbc" and warm_start(built, instance, *incumbent)
    if not any(built.completion.values()):
        # No job can reach V_i by T-1 even at its fastest rate: OPT = 0 without a solver call.
        run = SolverRun(solver, "optimal", True, 0.0, 0.0, 0.0, "no job can complete")
    else:
        run = solve_model(built.model, solver, time_limit, mip_gap, warm)
    result = OptResult(None, run.objective, run.bound, None, run.status, False, solver, run.wall_s, time_limit,
                       mip_gap, formulation=asdict(strengthening) | {"warm_start": warm},
                       num_variables=built.model.nvariables(), num_constraints=built.model.nconstraints())
    if run.status == "infeasible":
        result.status = "error"   # DMLRS always has the empty schedule: infeasible means a model bug
    if not run.has_solution:
        return result
    schedule = schedule_of(built, instance)
    check = validate(instance, schedule)
    result.schedule, result.validation = schedule, check
    result.objective = check.total_utility
    result.violations = [v.as_dict() for v in check.violations]
    result.gap = relative_gap(result.objective, run.bound)
    tol = AGREE_TOL * max(1.0, abs(run.objective))
    # An incumbent may claim completion later than its samples allow (a non-optimal choice of c); then the
    # validated utility is higher, which is fine up to the bound. Lower than the MILP believed is a bug.
    consistent = run.objective - tol <= result.objective <= (run.bound if run.bound is not None else np.inf) + tol
    if check.violations or not consistent:
        result.status = "invalid"
    result.proven_optimal = (result.status == "optimal" and result.gap is not None
                             and result.gap <= mip_gap + 1e-9)
    return result
