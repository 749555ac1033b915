"""Offered load and the fluid completion bound (pdors/load.py, docs/MODEL.md "Load"): a hand-worked instance,
and the bound against every policy and the proven offline optimum on random small instances."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiny import tiny_instance

from offline_opt import solve
from offline_opt.profile import tiny_profile
from pdors.load import alone_completable, fluid_completable, offered_load
from pdors.model import INSENSITIVE
from pdors.policies import POLICIES
from pdors.run import run
from pdors.workload import generate

# Every job: g = 1 MB, gamma = 1, F = 2, b^(i) = 4, b^(e) = 1, one cpu per worker and per PS. Slots per sample
# (eqs. 1-2): compute tau = 0.5; internal 0.5 + 2*1*1/(4*2) = 0.75; external 0.5 + 2*1*1/(1*2) = 1.5.
# A worker-slot with its PS share needs alpha + beta / gamma = 2 cpu. Two machines, T = 3, per machine
# (gpu 1, cpu 4, mem 10, storage 10): cpu 8 per slot, 24 across the horizon; mem 20 per slot, 60 across it.
# Job 0 also needs 8 GB of memory per worker (its PS none). Utilities are flat (theta2 = 0): OPT maximises the
# number of completed jobs.
COMMON = dict(
    epochs=1,
    grad_mb=1.0,
    tau=0.5,
    gamma=1,
    batch=2,
    bw_internal=4.0,
    bw_external=1.0,
    theta2=0.0,
    sensitivity=INSENSITIVE,
)
HAND = [
    dict(arrival=0, samples=4, worker_demand=(0, 1, 8, 0)),
    dict(arrival=2, samples=2),
    dict(arrival=2, samples=3),
    dict(arrival=1, samples=5),
    dict(arrival=0, samples=8),
]


def hand_instance():
    return tiny_instance([{**COMMON, **job} for job in HAND], machines=2, slots=3)


def test_offered_load_by_hand():
    # Worker-slots V p; cpu share 2 V p / 24, job 0's mem share 8 V p / 60 (its dominant resource):
    # compute (p = 0.5): job 0 max(4/24, 16/60) = 4/15; jobs 1-4 cpu V / 24 = (2+3+5+8)/24 = 3/4 -> 61/60.
    # internal (p = 0.75): job 0 max(6/24, 24/60) = 2/5; jobs 1-4 V / 16 = 18/16 -> 1.525.
    # external (p = 1.5): job 0 max(12/24, 48/60) = 4/5; jobs 1-4 V / 8 = 18/8 -> 3.05.
    load = offered_load(hand_instance())
    assert load == pytest.approx({"compute": 61 / 60, "internal": 1.525, "external": 3.05}, rel=1e-12)


def test_fluid_completable_by_hand():
    # Most samples per slot: internal, one machine holds min(cpu 4/2, mem 10/8) workers: 1 for job 0, 2 for
    # the others (F = 2): 1/0.75 = 4/3 and 2/0.75 = 8/3. External: the cluster holds min(8/2, 20/8) = 2 of job
    # 0's workers, 4 of the others' (F caps them at 2): 2/1.5 = 4/3 for all. So 4/3 (job 0), 8/3 (others).
    # Alone within T - a_i slots: job 0 4/3*3 = 4 >= 4; job 1 8/3 >= 2; job 2 8/3 < 3 (out); job 3 16/3 >= 5;
    # job 4 8/3*3 = 8 >= 8.
    inst = hand_instance()
    assert alone_completable(inst).tolist() == [True, True, False, True, True]
    # Cheapest rate 0.75: cpu-slots 1.5 V over 8 per slot: job 0 0.75, job 1 0.375, job 3 0.9375, job 4 1.5
    # slots of the whole cluster, due by T - a_i = 3, 1, 2, 3 slots before the end. Moore-Hodgson in that
    # order: 0.375 <= 1, +0.9375 <= 2, +0.75 <= 3, +1.5 = 3.5625 > 3 drops the largest (job 4): 3 jobs.
    # Memory (job 0 alone, 24/20 = 1.2 <= 3) and gpu/storage (unused) allow all 4: the bound is 3.
    assert fluid_completable(inst) == 3
    # Integer counts complete only 2: in slot 2 each of jobs 1, 3 and 4 needs a whole machine (2 workers and
    # 2 PSs internally; externally they are too slow) and job 0 half of one for all 3 slots.
    opt = solve(inst, "highs", time_limit=60)
    assert opt.proven_optimal and opt.violations == []
    assert int(((opt.validation.completion >= 0) & opt.schedule.admitted).sum()) == 2


# Utility theta1/2 for every job whatever its training time (all insensitive, theta1 = 10): OPT maximises the
# number of completed jobs, so it is the sharpest test of the bound.
COUNTING = dataclasses.replace(tiny_profile(), mix=(1.0, 0.0, 0.0), theta1=(10.0, 10.0))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    machines=st.integers(1, 2),
    jobs=st.integers(2, 5),
    slots=st.integers(2, 4),
    scale=st.sampled_from([1.0, 3.0, 6.0]),
)
def test_nothing_completes_more_than_the_fluid_bound(seed, machines, jobs, slots, scale):
    workload = dataclasses.replace(COUNTING, workload_scale=COUNTING.scale() * scale)
    inst = generate(workload, machines, jobs, slots, seed)
    bound = fluid_completable(inst)
    for policy in POLICIES:
        s = run(dict(policy=policy, machines=machines, jobs=jobs, slots=slots, seed=seed), inst).summary.to_dict()
        assert s["violations"] == []
        assert s["completed"] <= bound, (policy, s["completed"], bound)
    opt = solve(inst, "highs", time_limit=60)
    assert opt.proven_optimal and opt.violations == []
    assert int(((opt.validation.completion >= 0) & opt.schedule.admitted).sum()) <= bound
