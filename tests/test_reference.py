"""PD-ORS's fast path against the literal reference implementation of Algorithms 2-4
(pdors/policies/pdors_reference.py): the same decisions on random instances, and each optimisation checked
where it acts (rounding that cannot succeed, vectorised disaggregation, the DP stopping early)."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tiny import tiny_instance

from pdors.policies import pdors_reference as ref
from pdors.policies.pdors import PDORS, Config, RoundingConfig
from pdors.primal_dual.dynamic_program import plan_levels
from pdors.primal_dual.external_lp import disaggregate
from pdors.primal_dual.job import JobShape
from pdors.primal_dual.machine_classes import ClassMembers
from pdors.primal_dual.rounding import _count_bounds_allow, _roundable, round_external
from pdors.primal_dual.slot_cost import slot_costs
from pdors.simulator import simulate
from pdors.validator import validate
from pdors.workload import WorkloadConfig, generate


def _shape(rng, machines_r=4):
    return JobShape(
        per_sample_internal=float(rng.uniform(0.05, 0.5)),
        per_sample_external=float(rng.uniform(0.1, 1)),
        batch=int(rng.integers(4, 40)),
        gamma=int(rng.integers(1, 6)),
        worker_demand=rng.integers(0, 3, machines_r).astype(float) + np.eye(machines_r)[1],
        ps_demand=rng.integers(0, 3, machines_r).astype(float) * (rng.random(machines_r) < 0.7),
    )


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_roundable_matches_exhaustive_enumeration(seed):
    """The exact check against every combination of per-machine outcomes; the count bounds never rule
    out a combination that exists."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 6))
    possible = rng.random((m, 4)) < rng.uniform(0.3, 1.0)
    shape = JobShape(
        per_sample_internal=1.0,
        per_sample_external=1.0,
        batch=int(rng.integers(1, 12)),
        gamma=int(rng.integers(1, 4)),
        worker_demand=np.ones(1),
        ps_demand=np.ones(1),
    )
    base_w, base_s = float(rng.integers(0, 6)), float(rng.integers(0, 3))
    demand = float(rng.uniform(0, 10))
    exists = False
    for combo in itertools.product(*[np.flatnonzero(row) for row in possible]):
        w = base_w + sum(o & 1 for o in combo)
        s = base_s + sum(o >> 1 for o in combo)
        exists |= demand <= w <= shape.batch and shape.gamma * s >= w and s > 0
    assert _roundable(shape, demand, base_w, base_s, possible) == exists
    if exists:
        assert _count_bounds_allow(shape, demand, base_w, base_s, possible)


def _compare_rounding(shape, demand, machines, w, s, price, free, rounding, seed):
    fast = round_external(shape, demand, machines, w, s, price, free, rounding, np.random.default_rng(seed))
    slow = ref.round_solution(shape, demand, machines, w, s, price, free, rounding, np.random.default_rng(seed))
    assert fast[:2] == slow[:2]
    if slow[2] is None:
        assert fast[2] is None
    else:
        assert fast[2].cost == slow[2].cost
        for name in ("machines", "workers", "servers"):
            assert getattr(fast[2], name).tolist() == getattr(slow[2], name).tolist()
    return slow


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([0.8, 1.0, 1.2]), st.sampled_from([0.6, 1.0, 2.0]))
def test_rounding_matches_the_attempt_by_attempt_reference(seed, gain, tightness):
    """Batches, the outcome lookup and the infeasibility checks change no attempt: same count, same winner."""
    rng = np.random.default_rng(seed)
    shape = _shape(rng)
    m = int(rng.integers(1, 7))
    w, s = rng.uniform(0, 6, m) * gain, rng.uniform(0, 2, m) * gain
    whole = rng.random(m) < 0.2  # integral entries never round up
    w[whole] = np.floor(w[whole])
    load = np.ceil(w)[:, None] * shape.worker_demand + np.ceil(s)[:, None] * shape.ps_demand
    free = load * rng.uniform(0.7, 1.0, (m, 4)) * tightness  # round-ups often do not fit
    price = rng.uniform(0.1, 5, (m, 4))
    demand = float(w.sum() / gain * rng.uniform(0.8, 1.0))
    _compare_rounding(
        shape,
        demand,
        np.arange(m),
        w,
        s,
        price,
        free,
        RoundingConfig(gain=gain, delta=1.0, feasible_solutions=3, max_attempts=200),
        seed,
    )


def test_rounding_that_cannot_succeed_reports_the_full_attempt_count():
    """One machine, 2.5 workers and 0.5 PS at gamma = 3, cover 3: every feasible rounding needs both counts
    up, which its capacity (3 cpu) forbids. The count bounds allow it; the exact check does not; the result
    is the reference's after all its attempts."""
    shape = JobShape(
        per_sample_internal=1.0,
        per_sample_external=1.0,
        batch=10,
        gamma=3,
        worker_demand=np.array([0.0, 1.0]),
        ps_demand=np.array([0.0, 1.0]),
    )
    possible_args = dict(job=shape, demand=3.0, base_w=2.0, base_s=0.0)
    possible = np.array([[True, True, True, False]])  # (0,0), (1,0), (0,1) fit; (1,1) does not
    assert _count_bounds_allow(**possible_args, possible=possible)
    assert not _roundable(**possible_args, possible=possible)
    slow = _compare_rounding(
        shape,
        3.0,
        np.array([0]),
        np.array([2.5]),
        np.array([0.5]),
        np.ones((1, 2)),
        np.array([[0.0, 3.0]]),
        RoundingConfig(gain=1.0, delta=1.0, feasible_solutions=2, max_attempts=700),
        4,
    )
    assert slow[:2] == (700, 0) and slow[2] is None


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_vectorised_disaggregation_matches_the_machine_by_machine_loop(seed):
    rng = np.random.default_rng(seed)
    shape = _shape(rng)
    classes = int(rng.integers(1, 5))
    member_class = rng.integers(0, classes, int(rng.integers(classes, 12)))
    member_class[:classes] = np.arange(classes)  # every class has a member
    counts = np.bincount(member_class, minlength=classes)
    cls_free = rng.uniform(0, 30, (classes, 4))
    free = cls_free[member_class]
    lp_sol = (
        rng.uniform(0, 20, classes) * (rng.random(classes) < 0.7),
        rng.uniform(0, 5, classes) * (rng.random(classes) < 0.7),
    )
    fast = disaggregate(shape, lp_sol, ClassMembers(member_class, classes), free)
    slow = ref.disaggregate(shape, lp_sol, member_class, counts, free)
    for a, b in zip(fast, slow, strict=False):
        assert a.tolist() == b.tolist()


def _slot_state(
    rng: np.random.Generator, kinds: tuple[int, int], machines: tuple[int, int]
) -> tuple[JobShape, np.ndarray, np.ndarray]:
    """A random job shape and slot state: machines in classes of identical rows (counts drawn from the ranges),
    their prices and free capacities (often tight)."""
    shape = _shape(rng)
    k = int(rng.integers(*kinds))
    rows = rng.integers(0, k, int(rng.integers(*machines)))
    price = rng.uniform(1e-3, 2, (k, 4))[rows]
    free = rng.uniform(0, 25, (k, 4))[rows] * (rng.random((k, 4)) < 0.9)[rows]
    return shape, price, free


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.sampled_from([0.8, 1.0, 1.2]))
@example(seed=707193, gain=0.8)  # a degenerate LP at level 5: a cold solve gets an optimum with no feasible rounding
def test_theta_matches_the_reference_on_random_slot_states(seed, gain):
    """slot_costs (one warm LP per state, vectorised internal case, skipped solves) against theta computed
    level by level from scratch (a new LP per level, solved along the same sequence of covers); machines come in
    classes of identical rows, capacities are often tight."""
    rng = np.random.default_rng(seed)
    shape, price, free = _slot_state(rng, (1, 4), (1, 9))
    q = 8
    levels = np.arange(q + 1) * float(rng.uniform(5, 80)) / q
    rounding = RoundingConfig(gain=gain, delta=1.0, feasible_solutions=3, max_attempts=150)
    fast = slot_costs(shape, levels, price, free, rounding, (seed, 7))
    for k in range(1, q + 1):
        opt = ref.theta(shape, levels, k, price, free, rounding, (seed, 7))
        assert fast.cost[k] == (opt.cost if opt else math.inf)
        if opt is not None:
            got = fast.options[k]
            assert (got.internal, got.machines.tolist(), got.workers.tolist(), got.servers.tolist()) == (
                opt.internal,
                opt.machines.tolist(),
                opt.workers.tolist(),
                opt.servers.tolist(),
            )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_skipped_lp_solves_give_every_level_what_solving_in_order_gives(seed, reject):
    """Refining levels in a random order (as the DP's passes ask for them), with the LPs of skipped levels solved only
    when rounded, against the same state solving every LP in increasing order: the same theta, allocation and
    rounding statistics per level, with fewer solves."""
    rng = np.random.default_rng(seed)
    shape, price, free = _slot_state(rng, (2, 7), (2, 30))
    q = 24
    levels = np.arange(q + 1) * float(rng.uniform(5, 80)) / q
    rounding = RoundingConfig(gain=1.0, delta=1.0, feasible_solutions=3, max_attempts=150)
    args = (shape, levels, price, free, rounding, (seed, 7))
    skipping = slot_costs(*args, lazy=True, reject_on_failure=reject)
    in_order = slot_costs(*args, lazy=True, reject_on_failure=reject)
    in_order._in_order = True
    for k in rng.permutation(np.arange(1, q + 1))[: int(rng.integers(1, q + 1))].tolist():
        assert skipping.refine(k) == in_order.refine(k)
        assert skipping.cost[k] == in_order.cost[k] and skipping.failed[k] == in_order.failed[k]
        a, b = skipping.options[k], in_order.options[k]
        assert (a is None) == (b is None)
        if a is not None:
            assert (a.cost, a.machines.tolist(), a.workers.tolist(), a.servers.tolist()) == (
                b.cost,
                b.machines.tolist(),
                b.workers.tolist(),
                b.servers.tolist(),
            )
    assert skipping.external_solves == in_order.external_solves
    assert skipping.lp_solves <= in_order.lp_solves or skipping._in_order  # a replay re-solves in order


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_lp_bounds_never_exceed_theta(seed, reject):
    """Every bound the DP may see before a level is rounded (separable, LP optimum, its tangent at ceil(D),
    interpolated on one basis) is <= that level's theta: the DP's refinement argument rests on it."""
    rng = np.random.default_rng(seed)
    shape, price, free = _slot_state(rng, (2, 7), (2, 30))
    q = 24
    levels = np.arange(q + 1) * float(rng.uniform(5, 80)) / q
    rounding = RoundingConfig(gain=float(rng.choice([0.8, 1.0])), delta=1.0, feasible_solutions=3, max_attempts=150)
    args = (shape, levels, price, free, rounding, (seed, 7))
    exact = slot_costs(*args, reject_on_failure=reject).cost
    lazy = slot_costs(*args, lazy=True, reject_on_failure=reject)
    for k in sorted(rng.choice(np.arange(1, q + 1), int(rng.integers(1, 4)), replace=False).tolist()):
        lazy._solve_lps_through(k)  # bounds on every level up to k, as a DP pass may see them
        assert (lazy.cost <= exact).all()


def _full_dp(theta, utility):
    """Algorithms 2-3 by brute force over every split of the levels: (completion, payoff) or None."""
    slots, width = theta.shape
    best = None
    for done in range(slots):
        total = min(
            (sum(theta[j, k] for j, k in enumerate(split)), split)
            for split in itertools.product(range(width), repeat=done + 1)
            if sum(split) == width - 1
        )[0]
        payoff = utility[done] - total
        if payoff > (best[1] if best else 0.0):
            best = (done, payoff)
    return best


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_dp_stops_early_without_changing_the_decision(seed):
    rng = np.random.default_rng(seed)
    slots, width = int(rng.integers(1, 6)), int(rng.integers(2, 5))
    theta = rng.uniform(0, 3, (slots, width)) * np.arange(width)
    theta[rng.random(theta.shape) < 0.2] = np.inf
    theta[:, 0] = 0.0
    utility = np.sort(rng.uniform(0, 8, slots))[::-1] * (rng.random() < 0.9)
    asked = []
    result = plan_levels(lambda j: asked.append(j) or theta[j], utility)
    assert asked == list(range(result.reached))
    expected = _full_dp(theta, utility)
    if expected is None:
        assert result.completion < 0 or not result.payoff > 0
    else:
        assert (result.completion, result.payoff) == pytest.approx(expected)
        assert result.levels.sum() == width - 1


def test_dp_skips_slots_no_completion_can_use():
    """u drops to 0 after the first slot: once slot 0 gives a positive payoff nothing later can beat it."""
    theta = np.array([[0.0, 1.0], [0.0, 0.5], [0.0, 0.1]])
    result = plan_levels(theta, np.array([5.0, 0.0, 0.0]))
    assert (result.completion, result.reached) == (0, 1) and result.payoff == 4.0


def test_reference_reproduces_the_hand_derived_tiny_schedule():
    """The instance of test_pdors.test_tiny_instance_decisions_derived_by_hand, through the reference."""
    inst = tiny_instance([{}, {"gamma": 4, "batch": 4, "samples": 8}])
    sched = simulate(inst, ref.ReferencePDORS(Config(workload_levels=8)), seed=5).schedule
    assert sched.admitted.tolist() == [True, True]
    assert sched.workers[0, 0].tolist() == [2, 0] and sched.servers[0, 0].tolist() == [2, 0]
    assert sched.workers[1, 1].sum() == 4 and sched.servers[1, 1].sum() == 1 and sched.workers[2].sum() == 0


class _Recorder:
    """Records every plan's payoff (admitted or not is what the schedule shows)."""

    def plan(self, job, view):
        plan = super().plan(job, view)
        self.payoffs[job] = None if plan is None else plan.payoff
        return plan

    def reset(self, instance, seed):
        super().reset(instance, seed)
        self.payoffs = {}


class FastRecorder(_Recorder, PDORS):
    pass


class ReferenceRecorder(_Recorder, ref.ReferencePDORS):
    pass


# (machines, jobs, slots, workload_scale, gain, levels, mix): small enough for the reference, varied enough
# to reach every branch (internal and external wins, roundings that cannot succeed, the DP stopping early).
CASES = [
    (2, 6, 5, 0.02, 1.0, 8, None),
    (4, 8, 6, 0.05, 1.0, 10, [0.1, 0.55, 0.35]),
    (6, 8, 5, 0.05, 0.8, 8, None),
    (6, 6, 6, 0.2, 1.2, 6, [0.1, 0.55, 0.35]),
    (12, 10, 4, 0.05, 1.0, 8, None),
    (3, 10, 6, 0.01, 1.0, 12, [0.0, 0.0, 1.0]),
    (8, 8, 6, 0.1, 1.0, 8, [0.1, 0.55, 0.35]),
]


@pytest.mark.parametrize("on_failure", ["reject", "found_solutions"])
def test_fast_path_decides_exactly_like_the_reference(on_failure):
    exercised = {
        "external": 0,
        "skipped_slots": 0,
        "unroundable": 0,
        "admitted": 0,
        "rejected": 0,
        "rounding_rejects": int(on_failure == "found_solutions"),
        "aligned_grid": 0,  # jobs whose Q_i differs from Q (docs/MODEL.md, "The workload grid")
    }
    for seed, (machines, jobs, slots, scale, gain, levels, mix) in enumerate(CASES, start=11):
        workload = WorkloadConfig(workload_scale=scale, mix=(mix[0], mix[1], mix[2]) if mix else WorkloadConfig().mix)
        inst = generate(workload, machines, jobs, slots, seed)
        config = Config(
            workload_levels=levels, rounding=RoundingConfig(gain=gain, max_attempts=400), on_rounding_failure=on_failure
        )
        fast_policy, ref_policy = FastRecorder(config), ReferenceRecorder(config)
        fast, slow = simulate(inst, fast_policy, seed), simulate(inst, ref_policy, seed)
        for name in ("admitted", "workers", "servers"):
            assert np.array_equal(getattr(fast.schedule, name), getattr(slow.schedule, name)), (seed, name)
        assert fast_policy.payoffs == ref_policy.payoffs
        assert validate(inst, fast.schedule).violations == []
        stats = fast.stats
        exercised["external"] += stats["external_solves"]
        exercised["skipped_slots"] += stats["slots_skipped"]
        exercised["unroundable"] += stats["infeasible_solves"]
        exercised["admitted"] += int(fast.schedule.admitted.sum())
        exercised["rejected"] += int((~fast.schedule.admitted).sum())
        exercised["rounding_rejects"] += stats["rounding_rejects"]
        exercised["aligned_grid"] += sum(q != levels for q in fast_policy.levels)
        assert stats["rounding_rejects"] == ref_policy.summary()["rounding_rejects"]
    assert all(exercised.values()), exercised


def test_rounding_every_level_changes_no_decision_only_the_statistics():
    """``round_all_levels`` (for statistics over every external solve) against the default lazy path."""
    inst = generate(WorkloadConfig(workload_scale=0.05), 6, 8, 6, 3)
    runs = {flag: simulate(inst, PDORS(Config(workload_levels=8, round_all_levels=flag)), 3) for flag in (False, True)}
    for name in ("admitted", "workers", "servers"):
        assert np.array_equal(getattr(runs[False].schedule, name), getattr(runs[True].schedule, name))
    assert runs[True].stats["external_solves"] > runs[False].stats["external_solves"] > 0
    assert runs[True].stats["slots_skipped"] == 0
