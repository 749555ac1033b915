"""Definition 1 (the allocation-cost relationship) replayed on a run, and the theorem check built on it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tiny import tiny_instance

from offline_opt.certified import certify
from offline_opt.theorem import violations
from pdors.premise import Premise, measure, theorem_violation
from pdors.primal_dual.prices import PriceBounds
from pdors.schedule import Schedule
from pdors.workload import WorkloadConfig, generate

CPU = 1  # resource index of cpu (pdors.model.RESOURCES)


def two_jobs() -> tuple:
    """One machine with 100 cpu, two slots. Job 0 (arrives 0): 1 worker + 1 PS of 1 cpu each in slot 0, so
    Delta rho = 2, x = 0.02 of capacity. Job 1 (arrives 0, decided after job 0): 1 worker of 48 cpu + 1 PS of
    2 cpu in slot 0, Delta rho = 50 on top of job 0's 2, x = 0.5."""
    instance = tiny_instance(
        [{}, {"worker_demand": (0, 48, 0, 0), "ps_demand": (0, 2, 0, 0)}],
        machines=1,
        slots=2,
        capacity=(1.0, 100.0, 10.0, 10.0),
    )
    sched = Schedule.empty(instance)
    sched.admitted[:] = True
    sched.workers[0, :, 0] = 1
    sched.servers[0, :, 0] = 1
    return instance, sched


def bounds(log_ratio_cpu: float) -> PriceBounds:
    """L = 1; U^cpu = e^l, the other resources flat (U = L)."""
    return PriceBounds(upper=np.array([1.0, math.exp(log_ratio_cpu), 1.0, 1.0]), lower=1.0)


def by_hand(lr: float, before: float, step: float, k: float = 1.0 / 3.0, capacity: float = 100.0) -> float:
    """Left side over right side of Definition 1 in one cell, from eq. (12) with L = 1: epsilon = max(1, lr)."""
    p_before, p_after = math.exp(lr * before / capacity), math.exp(lr * (before + step) / capacity)
    return (p_before * step) / (k * capacity / max(1.0, lr) * (p_after - p_before))


def test_premise_holds_on_small_jobs_and_modest_price_range():
    # l = ln(U/L) = 3: job 0 margin 2.911, job 1 (rho 2 -> 52) 4.5 / (e^1.5 - 1) = 1.292: both >= 1
    instance, sched = two_jobs()
    p = measure(instance, sched, bounds(3.0), gain=1.0, delta=1.0)
    assert by_hand(3.0, 0.0, 2.0) == pytest.approx(0.18 / math.expm1(0.06))
    assert by_hand(3.0, 2.0, 50.0) == pytest.approx(4.5 / math.expm1(1.5))
    assert p.admissions == 2 and p.premise_share == 1.0 and p.holds
    assert p.worst_margin == pytest.approx(by_hand(3.0, 2.0, 50.0), rel=1e-12)
    assert p.cell_share_max == pytest.approx(0.5) and p.cell_share_median == pytest.approx(0.26)
    assert p.epsilon == 3.0 and p.competitive_bound == pytest.approx(18.0) and p.theorem == 5


def test_premise_fails_on_the_large_job_when_prices_span_e10():
    # l = 10: job 0 margin 0.6 / (e^0.2 - 1) = 2.710 holds; job 1 15 / (e^5 - 1) = 0.1018 fails
    instance, sched = two_jobs()
    p = measure(instance, sched, bounds(10.0), gain=1.5, delta=0.5)
    k = 0.5 / (3 * 1.5)
    assert by_hand(10.0, 0.0, 2.0, k) > 1.0 > by_hand(10.0, 2.0, 50.0, k)
    assert p.premise_share == 0.5 and not p.holds
    assert p.worst_margin == pytest.approx(by_hand(10.0, 2.0, 50.0, k), rel=1e-12)
    assert p.competitive_bound == pytest.approx(6 * 1.5 / 0.5 * 10.0) and p.theorem == 6


def test_theorem_check_needs_the_premise_and_an_upper_ratio_above_the_bound():
    holds = Premise(admissions=3, premise_share=1.0, competitive_bound=6.0, theorem=5, gain=1.0, delta=1.0, epsilon=1.0)
    fails = Premise(admissions=3, premise_share=0.5, competitive_bound=6.0, theorem=5, gain=1.0, delta=1.0, epsilon=1.0)
    assert theorem_violation(holds, 6.5) is not None
    assert theorem_violation(holds, math.inf) is not None  # ALG = 0 < bound
    assert theorem_violation(holds, 5.9) is None
    assert theorem_violation(fails, 100.0) is None
    assert theorem_violation(Premise(), 100.0) is None  # not PD-ORS


def test_planted_violation_a_flat_price_fails_the_theorem_check(monkeypatch):
    """PD-ORS forced to a wrong (flat) price: U^r = L makes every price increment 0, so Definition 1 holds
    trivially and the bound is 6 G / delta = 6; admitting greedily on H = 3, I = 10, T = 80 (default workload,
    seed 4) leaves the certified upper ratio above 6. The same instance under the real price fails the premise,
    so it is no violation there."""
    import pdors.policies.pdors as pdors_policy
    from pdors.run import run

    instance = generate(WorkloadConfig(), 3, 10, 80, 4)
    spec = {"policy": "pdors", "machines": 3, "jobs": 10, "slots": 80, "seed": 4}
    real = run(spec, instance)
    real_bound = certify(instance, {"pdors": real.validation.total_utility})
    assert not real.summary.premise.holds
    assert violations({"pdors": real}, real_bound) == []

    eq13_14 = pdors_policy.instance_price_bounds

    def flat(inst, floor):
        b = eq13_14(inst, floor)
        return PriceBounds(upper=np.full_like(b.upper, b.lower), lower=b.lower)

    monkeypatch.setattr(pdors_policy, "instance_price_bounds", flat)
    planted = run(spec, instance)
    assert planted.validation.ok and planted.summary.premise.holds
    assert planted.summary.premise.competitive_bound == pytest.approx(6.0)
    c = certify(instance, {"pdors": planted.validation.total_utility})
    found = violations({"pdors": planted}, c)
    assert len(found) == 1 and "Theorem 5 violated" in found[0]


def test_sweep_record_check_flags_only_runs_whose_premise_holds(tmp_path):
    """pipeline.results.theorem_check on a record: bound on OPT 100 (certified dual bound of the OPT row)."""
    import json

    import pandas as pd

    from pdors.instance_io import load
    from pipeline.results import theorem_check

    spec = json.dumps({"policy": "pdors", "machines": 2, "jobs": 3, "slots": 4, "seed": 1})
    opt = {"kind": "opt", "run_id": "o", "policy": None, "seed": 1, "total_utility": None, "spec": spec}
    opt["opt.result"] = json.dumps({"status": "bound", "bound": 100.0, "proven_optimal": False, "mip_gap": 0.0})
    sim = {"kind": "sim", "policy": "pdors", "seed": 1, "spec": spec, "opt.result": None}
    rows = [
        opt,
        {**sim, "run_id": "bad", "total_utility": 10.0, "premise.premise_share": 1.0},  # 100 / 10 > 6
        {**sim, "run_id": "premise-fails", "total_utility": 10.0, "premise.premise_share": 0.5},
        {**sim, "run_id": "within", "total_utility": 50.0, "premise.premise_share": 1.0},  # 100 / 50 <= 6
    ]
    runs = pd.DataFrame(rows).assign(status="ok", instance_id="i", violations=0)
    runs["premise.competitive_bound"] = [None, 6.0, 6.0, 6.0]
    bad = theorem_check.violations(runs)
    assert bad["run_id"].tolist() == ["bad"]
    saved = theorem_check.save_instances(bad, tmp_path)
    assert load(saved[0]).num_jobs == 3
    assert "exceeds Theorems 5-6's bound 6" in theorem_check.messages(bad, saved)[0]


@pytest.mark.slow
def test_nightly_paper_part_fails_on_a_planted_violation_and_saves_the_instance(monkeypatch, tmp_path):
    """The nightly's paper-scale check on the planted instance (drawn in place of a paper-scale one)."""
    import pdors.policies.pdors as pdors_policy
    from pipeline.nightly import paper as nightly_paper

    eq13_14 = pdors_policy.instance_price_bounds

    def flat(inst, floor):
        b = eq13_14(inst, floor)
        return PriceBounds(upper=np.full_like(b.upper, b.lower), lower=b.lower)

    monkeypatch.setattr(pdors_policy, "instance_price_bounds", flat)
    monkeypatch.setattr(nightly_paper, "draw", lambda seed, setting: generate(WorkloadConfig(), 3, 10, 80, 4))
    r = nightly_paper.check_one(4, "paper", tmp_path / "offenders")
    assert r.premise is not None and r.premise.holds
    assert len(r.theorem) == 1 and any("Theorem 5 violated" in o for o in r.offences)
    assert r.saved == tmp_path / "offenders" / "paper-seed-4.json" and r.saved.exists()
    assert "FAIL: " in nightly_paper.markdown([r])[-1] and "100% of" in nightly_paper.markdown([r])[-1]


def test_premise_study_pools_admissions_per_grid_point():
    """studies.premise_size's summary: admissions where Definition 1 holds pooled over seeds (not a median of
    shares), the certified interval's medians, the theorem's bound range and the count of violations; and its grid
    keeps the offered load: capacity and jobs grow together."""
    import pandas as pd

    from studies import premise_size

    key = {"part": "scaling", "workload_scale": 0.1, "step": 1, "machines": 2, "jobs": 35, "slots": 80}
    points = pd.DataFrame(
        [
            {**key, "capacity_factor": 90.0, "seed": 1, "admitted": 4, "premise_held": 0, "cell_share_max": 1.0},
            {**key, "capacity_factor": 90.0, "seed": 2, "admitted": 3, "premise_held": 3, "cell_share_max": 0.5},
        ]
    ).assign(
        premise_share=[0.0, 1.0],
        offered_load=[0.8, 0.9],
        ratio_low=[1.0, 1.2],
        upper_ratio=[1.1, 1.5],
        competitive_bound=[200.0, 240.0],
        theorem_violated=[False, True],
    )
    s = premise_size.summary(points)
    assert len(s) == 1 and s.loc[0, "share"] == pytest.approx(3 / 7) and s.loc[0, "ratio_high"] == pytest.approx(1.3)
    assert s.loc[0, "theorem_violations"] == 1 and s.loc[0, "runs"] == 2 and s.loc[0, "runs_holding"] == 1
    row = "fixed load | 0.1 | 5x | 2 / 35 / 80 | 2 | 0.85 | 3 / 7 | 0.429 | 1 | 0.750 | [1.100, 1.300] | 1.500 | 200-24"
    assert row in premise_size.markdown(points)
    grid = [g for g in premise_size.grid(1) if g["part"] == "scaling" and g["workload_scale"] == 0.1]
    assert {g["jobs"] / g["capacity_factor"] for g in grid} == {7 / 18} and len(grid) == premise_size.STEPS
