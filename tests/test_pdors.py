"""PD-ORS's parts against values computed by hand, and whole runs against the validator."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiny import tiny_instance

from pdors.policies.pdors import PDORS, Config, RoundingConfig
from pdors.primal_dual.gain import competitive_bound, gain_eq29, gain_eq30
from pdors.primal_dual.job import JobShape
from pdors.primal_dual.prices import PriceBounds, price_bounds, prices
from pdors.primal_dual.rounding import round_external
from pdors.primal_dual.slot_cost import slot_costs
from pdors.simulator import simulate
from pdors.validator import validate
from pdors.workload import WorkloadConfig, generate


def test_price_function_matches_eq12_by_hand():
    bounds = PriceBounds(upper=np.array([8.0, 100.0]), lower=0.5)
    capacity = np.array([[4.0, 10.0]])
    used = np.array([[[0.0, 0.0]], [[2.0, 5.0]], [[4.0, 10.0]]])  # empty, half, full
    p = prices(bounds, used, capacity)
    assert p[0, 0] == pytest.approx([0.5, 0.5])  # p = L at rho = 0
    assert p[1, 0] == pytest.approx([0.5 * 16**0.5, 0.5 * 200**0.5])  # L (U/L)^(1/2) = 2, 7.07
    assert p[2, 0] == pytest.approx([8.0, 100.0])  # p = U^r at rho = C


def test_price_bounds_follow_eqs_13_and_14_on_a_one_job_instance():
    inst = tiny_instance([{"theta2": 0.0}], machines=1, slots=5)  # u = theta1 / 2 = 5 always
    b = price_bounds(inst.jobs, inst.cluster.capacity, inst.slots, utility_floor=1e-6)
    # eq. (13): d_min = ceil(4 * 0.5 / 2) = 1, u = 5, cpu demand alpha + beta = 2 -> U^cpu = 2.5
    assert b.upper[1] == pytest.approx(2.5)
    # eq. (14): ceil(V (tau + 0)) = 2, sum_r (alpha + beta) = 2, 1/mu = 2*2 / (5 * 25) = 0.032
    assert b.lower == pytest.approx(0.032 * 5 / (2 * 2 * 2))
    assert b.upper[0] == b.lower  # gpu: unused, flat price
    assert b.lower_source == "eq14"  # u = 5 is far above the floor
    floored = price_bounds(inst.jobs, inst.cluster.capacity, inst.slots, utility_floor=50.0)
    assert (floored.lower, floored.lower_source) == (pytest.approx(b.lower * 10), "floor")


def test_price_bounds_of_machines_without_capacity_are_inf_without_a_warning():
    """OASiS's PS half of a one-machine cluster has no machine: nothing fits, U^r = L = inf, a flat price (log
    ratio 0), computed without a divide-by-zero (numpy's RuntimeWarning, once printed by every such run)."""
    inst = tiny_instance([{"theta2": 0.0}], machines=1, slots=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = price_bounds(inst.jobs, inst.cluster.capacity[:0], inst.slots, utility_floor=1e-6)
        assert b.lower == math.inf and np.all(b.upper == math.inf) and np.all(b.log_ratio() == 0.0)
        assert np.all(prices(b, np.zeros((2, 0, 4)), inst.cluster.capacity[:0]).shape == (2, 0, 4))


def test_gain_eq29_and_eq30_by_hand():
    # eq. (29), R = 4, H = 100, delta = 0.1, W2 = 15: x = 3 ln(3*401/0.1) / 30
    x = 3 * math.log(3 * 401 / 0.1) / 30
    assert gain_eq29(0.1, 15, 4, 100) == pytest.approx(1 + x - math.sqrt(x * x + 2 * x))
    assert 0 < gain_eq29(0.1, 15, 4, 100) < 1
    assert gain_eq29(0.5, 1e9, 4, 100) == pytest.approx(1.0, abs=1e-3)  # huge W2: G -> 1
    # eq. (30), delta = 0.3, W1 = 20: y = ln(10) / 20
    y = math.log(10) / 20
    assert gain_eq30(0.3, 20) == pytest.approx(1 + y + math.sqrt(y * y + 2 * y))
    assert competitive_bound(1.0, 0.5, [0.2, 3.0]) == pytest.approx(6 * 2 * 3.0)
    with pytest.raises(ValueError):
        gain_eq30(0.0, 20)


def _shape(**kw):
    base = dict(
        per_sample_internal=0.5,
        per_sample_external=0.5,
        batch=4,
        gamma=1,
        worker_demand=np.array([0.0, 1.0]),
        ps_demand=np.array([0.0, 1.0]),
    )
    return JobShape(**{**base, **kw})


def test_internal_case_picks_the_cheapest_feasible_machine():
    # Machine 0 cheapest but too full for w = 1, s = 1 (2 cpu); machine 2 cheaper than 1. The external
    # rate is so slow that 2 samples would need 10 > F workers, so only the internal case is feasible.
    price = np.array([[0.0, 0.1], [0.0, 3.0], [0.0, 2.0]])
    free = np.array([[0.0, 1.0], [0.0, 4.0], [0.0, 4.0]])
    costs = slot_costs(
        _shape(per_sample_external=5.0),
        np.array([0.0, 2.0]),
        price,
        free,
        RoundingConfig(gain=1.0, delta=1.0),
        (0,),
    )
    opt = costs.options[1]
    assert opt.internal and list(opt.machines) == [2] and costs.cost[1] == pytest.approx(2 * 2.0)


def test_external_split_wins_when_it_is_cheaper():
    price = np.array([[0.0, 0.1], [0.0, 3.0], [0.0, 2.0]])
    free = np.array([[0.0, 1.0], [0.0, 4.0], [0.0, 4.0]])
    costs = slot_costs(_shape(), np.array([0.0, 2.0]), price, free, RoundingConfig(gain=1.0, delta=1.0), (0,))
    opt = costs.options[1]  # worker on machine 0, PS on machine 2: 2.1 < 4
    assert not opt.internal and costs.cost[1] == pytest.approx(2.1)
    assert dict(zip(opt.machines.tolist(), opt.workers.tolist(), strict=False)) == {0: 1, 2: 0}


def test_external_case_used_when_no_single_machine_fits():
    price = np.array([[0.0, 1.0], [0.0, 1.0]])
    free = np.array([[0.0, 4.0], [0.0, 4.0]])
    shape = _shape(gamma=4, batch=4)  # 8 samples -> 4 workers + 1 PS = 5 cpu > 4
    costs = slot_costs(shape, np.array([0.0, 8.0]), price, free, RoundingConfig(gain=1.0, delta=1.0), (3,))
    opt = costs.options[1]
    assert not opt.internal and opt.workers.sum() == 4 and opt.servers.sum() == 1
    assert costs.cost[1] == pytest.approx(5.0)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.2, 1.5), st.integers(2, 6))
def test_rounding_never_returns_an_infeasible_integer_solution(seed, gain, machines):
    rng = np.random.default_rng(seed)
    shape = _shape(
        gamma=int(rng.integers(1, 5)),
        batch=int(rng.integers(4, 30)),
        worker_demand=rng.integers(0, 3, 2).astype(float) + np.array([0.0, 1.0]),
        ps_demand=rng.integers(0, 3, 2).astype(float) + np.array([0.0, 1.0]),
    )
    free = rng.uniform(0, 12, (machines, 2))
    price = rng.uniform(0.1, 5, (machines, 2))
    w_bar, s_bar = rng.uniform(0, 5, machines), rng.uniform(0, 3, machines)
    demand = float(rng.uniform(1, 10))
    attempts, _feasible, best = round_external(
        shape,
        demand,
        np.arange(machines),
        w_bar * gain,
        s_bar * gain,
        price,
        free,
        RoundingConfig(gain=gain, delta=1.0, feasible_solutions=3, max_attempts=300),
        np.random.default_rng(seed),
    )
    assert attempts <= 300
    if best is None:
        return
    w = np.zeros(machines, int)
    s = np.zeros(machines, int)
    w[best.machines], s[best.machines] = best.workers, best.servers
    load = w[:, None] * shape.worker_demand + s[:, None] * shape.ps_demand
    assert np.all(load <= free + 1e-9)
    assert demand <= w.sum() <= shape.batch and shape.gamma * s.sum() >= w.sum() and s.sum() > 0
    assert best.cost == pytest.approx(w @ (price @ shape.worker_demand) + s @ (price @ shape.ps_demand))


def _pdors(levels=8):
    return PDORS(Config(workload_levels=levels))


def test_tiny_instance_decisions_derived_by_hand():
    """2 machines (4 cpu each), 2 jobs arriving in slot 0, 3 slots; prices start at L.

    Job 0 (V = 4, F = 2, gamma = 1): 2 workers + 2 PSs finish it in slot 0, internally, on the cheapest
    feasible machine (a tie, so machine 0). Job 1 (V = 8, F = 4, gamma = 4): no single machine holds 4
    workers + 1 PS, and machine 0 is full in slot 0. Finishing in slot 0 would need 8 samples from machine 1
    alone: impossible. Finishing in slot 1 costs 5L as one external allocation of 4 workers + 1 PS in slot 1,
    against 6L for any split over slots 0 and 1, so PD-ORS runs nothing in slot 0 and everything in slot 1.
    """
    inst = tiny_instance([{}, {"gamma": 4, "batch": 4, "samples": 8}])
    result = simulate(inst, _pdors(), seed=5)
    sched = result.schedule
    assert sched.admitted.tolist() == [True, True]
    assert sched.workers[0, 0].tolist() == [2, 0] and sched.servers[0, 0].tolist() == [2, 0]
    assert sched.workers[0, 1].sum() == 0 and sched.servers[0, 1].sum() == 0
    assert sched.workers[1, 1].sum() == 4 and sched.servers[1, 1].sum() == 1
    assert sched.workers[2].sum() == 0
    check = validate(inst, sched)
    assert check.violations == [] and check.completion.tolist() == [0, 1]
    assert check.total_utility == pytest.approx(10 / 2 + 10 / (1 + math.e))


def test_a_job_with_non_positive_payoff_is_rejected():
    inst = tiny_instance([{"theta1": 0.0}, {}])  # job 0 earns nothing: payoff = -cost < 0
    result = simulate(inst, _pdors(), seed=1)
    assert result.schedule.admitted.tolist() == [False, True]
    assert result.schedule.workers[:, 0].sum() == 0


def test_a_job_that_cannot_finish_in_the_horizon_is_rejected():
    inst = tiny_instance([{"samples": 100}])  # 100 samples need 25 slots at F = 2
    assert not simulate(inst, _pdors(), seed=1).schedule.admitted[0]


class _Recorder(PDORS):
    def plan(self, job, view):
        plan = super().plan(job, view)
        self.plans[job] = plan
        return plan

    def reset(self, instance, seed):
        super().reset(instance, seed)
        self.plans = {}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    machines=st.integers(1, 4),
    jobs=st.integers(1, 6),
    slots=st.integers(1, 6),
    seed=st.integers(0, 10_000),
    scale=st.sampled_from([0.001, 0.01, 0.05]),
    gain=st.sampled_from([0.8, 1.0, 1.2]),
)
def test_pdors_schedules_always_validate_and_plans_cover_the_workload(machines, jobs, slots, seed, scale, gain):
    inst = generate(WorkloadConfig(workload_scale=scale), machines, jobs, slots, seed)
    policy = _Recorder(Config(workload_levels=20, rounding=RoundingConfig(gain=gain)))
    result = simulate(inst, policy, seed)
    check = validate(inst, result.schedule)
    assert check.violations == []
    per_sample = {True: inst.jobs.time_per_sample(True), False: inst.jobs.time_per_sample(False)}
    for i, plan in policy.plans.items():
        if plan is None:
            continue
        hosts = ((plan.workers > 0) | (plan.servers > 0)).sum(axis=1)
        rate = np.where(hosts == 1, per_sample[True][i], per_sample[False][i])
        assert (plan.workers.sum(axis=1) / rate).sum() >= inst.jobs.workload[i] * (1 - 1e-12)
        assert check.completion[i] >= 0, "an admitted job completes"


def test_history_price_bounds_come_from_an_independent_draw():
    from pdors.run import run

    spec = dict(machines=6, jobs=12, slots=8, seed=3, workload={"workload_scale": 0.01}, params={"workload_levels": 20})
    oracle = run(spec).summary
    history = run({**spec, "params": {"workload_levels": 20, "price_bounds": "history"}}).summary
    assert history.violations == []
    assert history.policy_stats["price_lower"] != oracle.policy_stats["price_lower"]


@pytest.mark.parametrize("theorem, below_one", [(29, True), (30, False)])
def test_gain_derived_from_delta_per_solve(theorem, below_one):
    from pdors.run import run

    params = {"workload_levels": 20, "rounding": {"gain": None, "delta": 0.5, "theorem": theorem}}
    s = run(dict(machines=4, jobs=10, slots=6, seed=2, workload={"workload_scale": 0.01}, params=params)).summary
    stats = s.policy_stats
    assert s.violations == [] and stats["external_solves"] > 0
    if below_one:
        assert 0 <= stats["gain_min"] <= stats["gain_max"] <= 1
    else:
        assert 1 < stats["gain_min"] <= stats["gain_max"]
    assert stats["competitive_bound"] >= 6 * stats["gain_max"] / 0.5 - 1e-9


def test_integer_optimum_of_the_external_case_by_hand() -> None:
    from pdors.primal_dual.external_lp import integer_optimum

    # cpu only, 1 per worker and per PS, gamma 1: 2 workers need 2 PSs; machine 0 (price 1) holds 3 tasks, so the
    # fourth goes to machine 1 (price 2): 3 * 1 + 2 = 5. Three workers need 6 tasks, only 6 fit: 3 + 6 = 9.
    price = np.array([[0.0, 1.0], [0.0, 2.0]])
    free = np.array([[0.0, 3.0], [0.0, 3.0]])
    assert integer_optimum(_shape(), 2.0, price, free) == pytest.approx(5.0)
    assert integer_optimum(_shape(), 3.0, price, free) == pytest.approx(9.0)
    assert integer_optimum(_shape(), 3.5, price, free) == math.inf  # 4 workers + 4 PSs do not fit
