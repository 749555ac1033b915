"""The offline optimum (paper Section V, Fig. 10): MILP == exhaustive enumeration, OPT >= every policy, and a result
that is not proven optimal is never reported as OPT. All solver tests use the real solvers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from offline_opt import Strengthening, compare, solve
from offline_opt.compare import _ratio
from offline_opt.enumerate import enumerate_opt
from offline_opt.profile import small_profile, tiny_profile
from offline_opt.solvers import SOLVERS, available
from pdors.model import Cluster, Instance, Jobs
from pdors.workload import generate

pytestmark = pytest.mark.slow

TINY_SEEDS = range(1, 33)


def tiny(seed: int) -> Instance:
    """Sizes cycle through H in {1, 2}, I in {2, 3}, T in {2, 3}."""
    return generate(tiny_profile(), 1 + seed % 2, 2 + seed % 2, 2 + (seed // 2) % 2, seed)


@pytest.fixture(scope="module")
def enumerated():
    return {seed: enumerate_opt(tiny(seed)) for seed in TINY_SEEDS}


def close(a: float, b: float, rtol: float = 1e-6) -> bool:
    return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))


def test_tiny_instances_are_not_trivial(enumerated):
    """The cross-check means something only if OPT must choose: some jobs complete, not always all."""
    fractions = [np.mean(np.array(e.completion) >= 0) for e in enumerated.values()]
    assert sum(f > 0 for f in fractions) >= 25
    assert sum(0 < f < 1 for f in fractions) >= 10
    assert any(max(e.slot_options) > 3 for e in enumerated.values())  # slots with real trade-offs


@pytest.mark.parametrize("solver", SOLVERS)
def test_milp_equals_enumerator(solver, enumerated):
    if not available(solver):
        pytest.fail(f"{solver} is not installed (make solvers)")
    for seed, e in enumerated.items():
        r = solve(tiny(seed), solver, time_limit=60, mip_gap=1e-9)
        assert r.proven_optimal, (seed, r.status, r.gap)
        assert r.violations == [], (seed, r.violations)
        assert close(r.objective, e.value), (seed, solver, r.objective, e.value)
        assert close(r.objective, r.mip_objective), (seed, r.objective, r.mip_objective)


def test_naive_formulation_is_also_exact(enumerated):
    """The ablation's baseline is a correct (just weaker) model of the same problem."""
    for seed, e in enumerated.items():
        r = solve(tiny(seed), "highs", time_limit=60, mip_gap=1e-9, strengthening=Strengthening.naive())
        assert r.proven_optimal and close(r.objective, e.value), (seed, r.status, r.objective, e.value)


def _instance(**over) -> Instance:
    """One job, two machines with 2 cpu each; a worker and a PS take 1 cpu; gamma = F = 4."""
    jobs = dict(
        arrival=[0],
        epochs=[1],
        samples=[250],
        grad_mb=[0.0],
        tau=[0.01],
        gamma=[4],
        batch=[4],
        bw_internal=[1.0],
        bw_external=[1.0],
        worker_demand=[[0, 1, 0, 0]],
        ps_demand=[[0, 1, 0, 0]],
        theta1=[10.0],
        theta2=[0.5],
        theta3=[2.0],
        sensitivity=[1],
    )
    jobs.update(over)
    return Instance(
        jobs=Jobs(**{k: np.array(v) for k, v in jobs.items()}), cluster=Cluster(np.array([[1, 2, 1, 1]] * 2)), slots=2
    )


def test_external_placement_when_one_machine_is_too_small():
    """V = 2.5 slots of a worker: internally 1 worker + 1 PS fit (2 slots), externally 3 workers + 1 PS
    finish in slot 0. Both methods must find u(0) via the external placement."""
    inst = _instance()
    u0 = float(inst.jobs.utility_of(0, 0))
    assert close(enumerate_opt(inst).value, u0)
    r = solve(inst, "highs", 30, 1e-9)
    assert r.proven_optimal and close(r.objective, u0)
    assert r.schedule.workers[0, 0].sum() == 3 and not r.validation.internal[0, 0]


def test_internal_rate_is_what_makes_a_job_finish():
    """External is 40x slower: only 1 worker fits internally, so the job needs both slots (u(1))."""
    inst = _instance(bw_internal=[40.0], grad_mb=[0.05], samples=[150])
    e = enumerate_opt(inst)
    r = solve(inst, "cbc", 30, 1e-9)
    assert e.completion == [1] and close(r.objective, e.value)
    assert r.validation.internal[:, 0].all()


def test_opt_dominates_every_policy():
    """On random small instances OPT (proven) >= the validated utility of every registered policy."""
    for seed in range(1, 7):
        inst = generate(small_profile(), 2 + seed % 2, 5, 5, seed)
        c = compare(inst, "highs", time_limit=120, seed=seed)
        assert c.opt.proven_optimal, (seed, c.opt.status, c.opt.gap)
        assert c.opt.violations == []
        for p in c.policies:
            assert p.violations == 0, (seed, p.policy)
            assert c.opt.objective >= p.utility - 1e-6 * max(1.0, p.utility), (seed, p.policy)
            if p.utility > 0:
                assert p.ratio_kind == "opt" and p.ratio >= 1.0 - 1e-9


def test_unproven_result_is_not_reported_as_opt():
    inst = generate(small_profile(), 4, 10, 10, 7)  # HiGHS needs minutes here
    r = solve(inst, "highs", time_limit=2, mip_gap=1e-6)
    assert r.status == "time_limit" and not r.proven_optimal
    assert r.bound is not None and r.gap is not None and r.gap > 1e-6
    ratio, kind, note = _ratio(r, 100.0)
    assert kind == "upper" and ratio == pytest.approx(r.bound / 100.0) and "not proven" in note
    g = solve(inst, "glpk", time_limit=2, mip_gap=1e-6)
    assert not g.proven_optimal and g.status in ("time_limit", "error")
    d = json.loads(json.dumps(g.to_dict()))
    assert d["proven_optimal"] is False and d["status"] == g.status


def test_validator_disagreement_is_invalid(monkeypatch):
    """If the schedule read back from the MILP is not what the MILP believed, it is not OPT."""
    import offline_opt.milp as module  # solve() reads the schedule back through it when it solves

    real = module.schedule_of

    def drop_first_job(built, instance):
        sched = real(built, instance)
        sched.workers[:, 0, :] = 0
        sched.servers[:, 0, :] = 0
        return sched

    monkeypatch.setattr(module, "schedule_of", drop_first_job)
    inst = tiny(5)
    r = solve(inst, "highs", 30, 1e-9)
    assert r.status == "invalid" and not r.proven_optimal and r.violations


def test_ratio_with_zero_utility_does_not_crash():
    r = solve(tiny(3), "highs", 30, 1e-9)
    ratio, kind, note = _ratio(r, 0.0)
    assert ratio is None and kind == "none" and "ALG 0" in note


def test_cli_opt_writes_json(tmp_path):
    from pdors_cli.main import main

    out = tmp_path / "opt.json"
    rc = main(
        [
            "opt",
            "--profile",
            "tiny",
            "--machines",
            "2",
            "--jobs",
            "3",
            "--slots",
            "3",
            "--seed",
            "3",
            "--solver",
            "glpk",
            "--json",
            str(out),
        ]
    )
    data = json.loads(out.read_text())
    assert rc == 0 and data["opt"]["proven_optimal"] and data["opt"]["solver"] == "glpk"
    names = [p["policy"] for p in data["policies"]]
    assert "pdors" in names
    pd = data["policies"][names.index("pdors")]
    assert pd["competitive_bound"] is not None and pd["competitive_bound"] >= 6.0


def test_opt_is_proven_after_a_policy_milp_stopped_early_in_the_same_process():
    """A HiGHS MILP stopped by a limit (once Dorm's wall-clock limit) made every later OPT solve in the process
    end "unknown"; Dorm now stops at a node limit, and OPT still has to be proven after it."""
    from pdors.run import run

    dorm = run(
        {
            "policy": "dorm",
            "machines": 4,
            "jobs": 10,
            "slots": 6,
            "seed": 1,
            "workload": {"workload_scale": 0.02},
            "params": {"node_limit": 1},
        }
    )
    assert dorm.summary.policy_stats["node_limit_hits"] >= 1
    assert solve(tiny(1), "highs", time_limit=60, mip_gap=1e-9).proven_optimal
