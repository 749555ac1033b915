"""Run a Pyomo MILP with GLPK (glpsol), CBC or HiGHS and report what the solver proved, uniformly.

Traps handled here (measured with the installed Pyomo, HiGHS, CBC and GLPK): the legacy ``appsi_highs`` wrapper drops
time limits, so HiGHS runs
through ``pyomo.contrib.solver``'s ``Highs`` with ``time_limit``/``rel_gap``; CBC's bound for a
maximisation comes back with its sign flipped, and Pyomo reads no bound from GLPK, so it is parsed from
glpsol's log. DMLRS
utilities are non-negative, so a bound is read as ``abs``; a missing bound is ``None`` (never invented).
"""

from __future__ import annotations

import logging
import math
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pdors.errors import InputError

if TYPE_CHECKING:
    import pyomo.environ as pyo

SOLVERS: tuple[str, ...] = ("highs", "cbc", "glpk")


@dataclass(kw_only=True)
class SolverRun:
    """``status``: optimal (solver proved its gap target) | time_limit | infeasible | error."""

    solver: str
    status: str
    has_solution: bool
    objective: float | None
    bound: float | None
    wall_s: float
    message: str = ""


def available(name: str) -> bool:
    if name == "highs":
        try:
            import highspy  # noqa: F401
        except ImportError:
            return False
        return True
    return shutil.which({"cbc": "cbc", "glpk": "glpsol"}[name]) is not None


def solve_model(
    model: pyo.ConcreteModel, solver: str, time_limit: float, mip_gap: float, warm_start: bool = False
) -> SolverRun:
    if solver not in SOLVERS:
        raise InputError(f"solver: unknown {solver!r} (known: {', '.join(SOLVERS)})")
    if not available(solver):
        raise InputError(f"solver: {solver} is not installed (run `make solvers`)")
    start = time.perf_counter()
    run = (
        _highs(model, time_limit, mip_gap)
        if solver == "highs"
        else _glpk_or_cbc(model, solver, time_limit, mip_gap, warm_start)
    )
    run.wall_s = time.perf_counter() - start
    return run


def _highs(model: pyo.ConcreteModel, time_limit: float, mip_gap: float) -> SolverRun:
    import highspy
    from pyomo.contrib.solver.common.results import SolutionStatus
    from pyomo.contrib.solver.common.results import TerminationCondition as TC
    from pyomo.contrib.solver.solvers.highs import Highs

    # HiGHS's thread scheduler is process-wide: a MILP stopped early or a solve with another thread count earlier
    # in this process (highspy 1.16) made the next solve end unsolved. A fresh scheduler makes OPT independent of
    # what ran before it (tests/test_offline_opt.py).
    highspy.Highs.resetGlobalScheduler(True)
    res = Highs().solve(
        model,
        time_limit=time_limit,
        rel_gap=mip_gap,
        threads=1,
        load_solutions=False,
        raise_exception_on_nonoptimal_result=False,
    )
    has = res.solution_status in (SolutionStatus.feasible, SolutionStatus.optimal)
    if has:
        res.solution_loader.load_vars()
    tc = res.termination_condition
    status = {
        TC.convergenceCriteriaSatisfied: "optimal",
        TC.maxTimeLimit: "time_limit",
        TC.provenInfeasible: "infeasible",
        TC.locallyInfeasible: "infeasible",
    }.get(tc, "error")
    bound = res.objective_bound
    return SolverRun(
        solver="highs",
        status=status,
        has_solution=has,
        objective=res.incumbent_objective if has else None,
        bound=abs(bound) if bound is not None and math.isfinite(bound) else None,
        wall_s=0.0,
        message=str(tc),
    )


def _glpk_or_cbc(
    model: pyo.ConcreteModel, solver: str, time_limit: float, mip_gap: float, warm_start: bool
) -> SolverRun:
    import pyomo.environ as pyo  # here: the CLI reads SOLVERS without importing Pyomo
    from pyomo.opt import TerminationCondition as LegacyTC

    opt = pyo.SolverFactory(solver)
    if solver == "cbc":
        opt.options.update({"seconds": time_limit, "ratioGap": mip_gap, "threads": 1})
        kwargs = {"warmstart": warm_start}
    else:
        opt.options.update({"tmlim": max(1, math.ceil(time_limit)), "mipgap": mip_gap})
        kwargs = {}
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "solver.log"
        res = opt.solve(model, load_solutions=False, logfile=str(log), **kwargs)
        glpk_bound = _glpk_bound(log.read_text()) if solver == "glpk" else None
    tc = res.solver.termination_condition
    has = len(res.solution) > 0 and tc not in (LegacyTC.infeasible, LegacyTC.error)
    if has:
        quiet = logging.getLogger("pyomo.core")
        level = quiet.level
        quiet.setLevel(logging.ERROR)  # "loading an 'aborted' result": expected after a time limit
        try:
            model.solutions.load_from(res)
        finally:
            quiet.setLevel(level)
    # glpsol stopped by its time limit with an incumbent reads as "feasible"
    status = {
        LegacyTC.optimal: "optimal",
        LegacyTC.maxTimeLimit: "time_limit",
        LegacyTC.feasible: "time_limit",
        LegacyTC.infeasible: "infeasible",
    }.get(tc, "error")
    objective = pyo.value(model.obj) if has else None
    bound = glpk_bound
    for b in (
        (res.problem.upper_bound, res.problem.lower_bound) if solver == "cbc" else ()
    ):  # maximisation: the larger magnitude
        if b is not None and math.isfinite(b) and (bound is None or abs(b) > bound):
            bound = abs(b)
    if status == "optimal" and objective is not None:
        bound = objective if bound is None else max(bound, objective)
    return SolverRun(
        solver=solver, status=status, has_solution=has, objective=objective, bound=bound, wall_s=0.0, message=str(tc)
    )


def _glpk_bound(log: str) -> float | None:
    """The best bound of glpsol's last progress line, ``mip = <incumbent|not found yet> <= <bound>``
    (``+inf`` or ``tree is empty`` give None; an optimal status sets the bound to the objective)."""
    found = re.findall(r"mip =\s*(?:not found yet|\S+)\s*<=\s*(\S+)", log)
    try:
        b = float(found[-1])
    except (IndexError, ValueError):
        return None
    return abs(b) if math.isfinite(b) else None
