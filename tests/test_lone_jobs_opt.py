"""Lone jobs on an empty cluster against the proven offline optimum (docs/MODEL.md, "Three readings" (a)).

One job per instance, H = 10, T = 30, the generator's default workload, seeds 1-40: the MILP proves OPT, which
for a lone job is its utility at its fastest schedule alone (``pdors.solo``'s ceiling; checked here). PD-ORS
with the default ``found_solutions`` must never earn 0 where OPT > 0, and every job it finishes later than
that schedule gets a named cause, printed:

* ``cost``: PD-ORS's own payoff u - Theta at OPT's completion is below the payoff it chose (a later, cheaper
  plan; the utility lost, if any, is shown);
* ``rounding``: no plan of found solutions reaches the workload by OPT's completion and roundings failed;
* ``grid``: no plan reaches it and no rounding failed: the workload grid lost a slot (must not happen).
"""

import functools
from typing import Literal

import numpy as np
import pytest

import pdors.policies.pdors as pdors_policy
from offline_opt.solve import solve
from pdors.policies.pdors import PDORS, Config
from pdors.primal_dual.dynamic_program import DPResult
from pdors.simulator import simulate
from pdors.solo import fastest_completion, utility_ceiling
from pdors.validator import validate
from pdors.workload import WorkloadConfig, generate

SEEDS = range(1, 41)


@functools.cache
def _opt(seed: int) -> float:
    """The proven OPT of the lone-job instance of ``seed`` (solved once for both readings)."""
    inst = generate(WorkloadConfig(), 10, 1, 30, seed)
    result = solve(inst, time_limit=60)
    assert result.proven_optimal and result.objective is not None, seed
    assert result.objective == pytest.approx(utility_ceiling(inst), rel=1e-6), seed
    return result.objective


def _cause(result: DPResult, utility: np.ndarray, fastest: int, failed_roundings: int) -> str:
    """Why the DP's plan completes after ``fastest`` (a duration index), by the DP's own totals."""
    if np.isfinite(result.totals[fastest]):
        assert utility[fastest] - result.totals[fastest] <= result.payoff
        return "cost"
    return "rounding" if failed_roundings else "grid"


@pytest.mark.parametrize("reading", ["found_solutions", "reject"])
def test_lone_jobs_reach_opt_or_have_a_named_cause(
    reading: Literal["found_solutions", "reject"], monkeypatch: pytest.MonkeyPatch
) -> None:
    results: list[DPResult] = []
    original = pdors_policy.plan_levels

    def recording(*args: object, **kwargs: object) -> DPResult:
        results.append(original(*args, **kwargs))  # type: ignore[arg-type]
        return results[-1]

    monkeypatch.setattr(pdors_policy, "plan_levels", recording)
    zero, below, lines = [], [], []
    for seed in SEEDS:
        inst = generate(WorkloadConfig(), 10, 1, 30, seed)
        opt = _opt(seed)
        if opt <= 0:
            continue
        results.clear()
        run = simulate(inst, PDORS(Config(on_rounding_failure=reading)), seed)
        check = validate(inst, run.schedule)
        utility, done = check.total_utility, int(check.completion[0])
        fastest = int(fastest_completion(inst)[0])
        if utility == 0:
            zero.append(seed)
            lines.append(f"seed {seed}: 0 of OPT {opt:.3f} (rounding rejects {run.stats['rounding_rejects']})")
            continue
        if utility < opt * (1 - 1e-9):
            below.append(seed)
        if done > fastest:
            a = int(inst.jobs.arrival[0])
            cause = _cause(
                results[-1], inst.jobs.utility_of(0, np.arange(30 - a)), fastest - a, run.stats["infeasible_solves"]
            )
            lines.append(f"seed {seed}: done {done} > OPT's {fastest}, utility {utility:.3f} of {opt:.3f}: {cause}")
            assert cause != "grid", seed
    print(f"\n{reading}: {len(zero)} at 0, {len(below)} below OPT\n" + "\n".join(lines))
    if reading == "found_solutions":
        assert zero == []
