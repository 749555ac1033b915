"""The paper's Section V baselines (FIFO, DRF, Dorm, OASiS): real simulations on small instances judged by the
validator, plus hand-checkable examples of each policy's defining property."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pdors.config import ConfigError, parse_seeds
from pdors.model import Cluster, Instance, Jobs
from pdors.policies import make_policy, policy_config
from pdors.policies.base import PlanningPolicy, SlotView
from pdors.policies.oasis import half_bounds, halves
from pdors.policies.placement import dominant_share, round_robin
from pdors.primal_dual.prices import prices
from pdors.run import run
from pdors.simulator import simulate
from pdors.validator import validate
from pdors.workload import WorkloadConfig, generate
from pdors_cli import main as cli

BASELINES = ("fifo", "drf", "dorm", "oasis")


def small(seed=3, machines=6, jobs=20, slots=10, scale=0.02) -> Instance:
    """Paper distributions with workloads scaled down so that jobs can complete within a short horizon."""
    return generate(WorkloadConfig(workload_scale=scale), machines, jobs, slots, seed)


def simulated(policy: str, instance: Instance, params=None, seed=3):
    sim = simulate(instance, make_policy(policy, params, None), seed)
    check = validate(instance, sim.schedule)
    assert check.violations == []
    return sim, check


def hand_instance(capacity, worker_demand, ps_demand=None, batch=None, gamma=None, slots=3) -> Instance:
    """Jobs all arriving at slot 0 with a workload no slot can finish; everything else neutral."""
    n = len(worker_demand)
    ones = np.ones(n)
    return Instance(
        jobs=Jobs(
            arrival=np.zeros(n),
            epochs=ones,
            samples=ones * 1e9,
            grad_mb=ones,
            tau=ones * 1e-4,
            gamma=ones * 10 if gamma is None else gamma,
            batch=ones * 100 if batch is None else batch,
            bw_internal=ones * 1e6,
            bw_external=ones * 1e5,
            worker_demand=worker_demand,
            ps_demand=np.zeros((n, 4)) if ps_demand is None else ps_demand,
            theta1=ones * 50,
            theta2=ones * 0.5,
            theta3=ones * 5,
            sensitivity=ones,
        ),
        cluster=Cluster(np.atleast_2d(capacity)),
        slots=slots,
    )


def first_view(instance: Instance) -> SlotView:
    T, H, R = instance.slots, instance.num_machines, len(instance.cluster.resources)
    return SlotView(
        t=0,
        instance=instance,
        reserved=np.zeros((T, H, R)),
        remaining=instance.jobs.workload.copy(),
        admitted=np.zeros(instance.num_jobs, bool),
        completed=np.full(instance.num_jobs, -1),
    )


def pending(instance: Instance, completion: np.ndarray, t: int) -> np.ndarray:
    """Arrived and not complete before slot t (the policies' ``view.pending``)."""
    return (instance.jobs.arrival <= t) & ((completion < 0) | (completion >= t))


# --- all baselines -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", BASELINES)
def test_baseline_runs_clean_and_completes_jobs(policy):
    inst = small()
    result = run({"policy": policy, "machines": 6, "jobs": 20, "slots": 10, "seed": 3}, inst)
    assert result.summary.violations == []
    assert result.summary.completed >= 1 and result.summary.total_utility > 0


@pytest.mark.parametrize(
    "policy, params, field",
    [
        ("fifo", {"workers": [0, 30]}, "workers"),
        ("fifo", {"workers": [9, 3]}, "workers"),
        ("dorm", {"fairness_factor": 0.5}, "fairness_factor"),
        ("dorm", {"max_adjustments": -1}, "max_adjustments"),
        ("dorm", {"node_limit": 0}, "node_limit"),
        ("oasis", {"workload_levels": 0}, "workload_levels"),
        ("drf", {"bogus": 1}, "bogus"),
    ],
)
def test_configs_reject_bad_values_naming_the_field(policy, params, field):
    with pytest.raises(ConfigError) as err:
        policy_config(policy, params)
    assert err.value.path == f"params.{field}"


def test_round_robin_matches_the_task_by_task_scan():
    # Machines hold [2, 0, 3, 1] tasks; 4 tasks from cursor 1 go to 2, 3, 0, then 2 again.
    free = np.array([[2.0], [0.0], [3.0], [1.0]])
    placed, cursor = round_robin(free, np.array([1.0]), 4, 1)
    assert placed.tolist() == [1, 0, 2, 1] and cursor == 3
    assert round_robin(free, np.array([1.0]), 7, 0) is None
    rng = np.random.default_rng(0)
    for _ in range(200):
        free = rng.integers(0, 4, size=(rng.integers(1, 7), 1)).astype(float)
        count, cursor = int(rng.integers(0, 12)), int(rng.integers(0, len(free)))
        left, want, c = free[:, 0].copy(), np.zeros(len(free), int), cursor
        for _ in range(count):  # the literal scan: next machine with room from the cursor
            hosts = [h for h in np.roll(np.arange(len(free)), -c) if left[h] >= 1]
            if not hosts:
                want = None
                break
            left[hosts[0]] -= 1
            want[hosts[0]] += 1
            c = (hosts[0] + 1) % len(free)
        got = round_robin(free, np.array([1.0]), count, cursor)
        if want is None:
            assert got is None
        else:
            assert got[0].tolist() == want.tolist() and (count == 0 or got[1] == c)


# --- FIFO ----------------------------------------------------------------------------------------------------


def test_fifo_serves_in_arrival_order_and_never_preempts():
    inst = small(machines=4, jobs=15)
    sim, check = simulated("fifo", inst)
    w, s = sim.schedule.workers, sim.schedule.servers
    running = w.sum(axis=2) > 0  # [T, I]
    started = running.any(axis=0)
    start = np.where(started, running.argmax(axis=0), inst.slots)
    queue = np.argsort(inst.jobs.arrival, kind="stable")
    assert np.all(np.diff(start[queue]) >= 0), "a job started before an earlier arrival"
    assert np.all(start[started] >= inst.jobs.arrival[started])
    assert np.any(start[started] > inst.jobs.arrival[started]), "no job had to wait: the test is vacuous"
    for i in np.flatnonzero(started):
        end = check.completion[i] if check.completion[i] >= 0 else inst.slots - 1
        span = slice(start[i], end + 1)
        assert (w[span, i] == w[start[i], i]).all() and (s[span, i] == s[start[i], i]).all(), f"job {i} resized"
        assert not running[end + 1 :, i].any()
        workers = int(w[start[i], i].sum())
        assert 1 <= workers <= min(30, inst.jobs.batch[i])
        assert s[start[i], i].sum() == -(-workers // inst.jobs.gamma[i])


# --- DRF -----------------------------------------------------------------------------------------------------


def test_drf_equalises_dominant_shares_on_the_ghodsi_example():
    # DRF paper (Ghodsi et al. 2011): 9 CPUs and 18 GB; A's tasks <1 CPU, 4 GB>, B's <3 CPU, 1 GB>.
    # Max-min on dominant shares gives A 3 tasks (12/18 GB) and B 2 tasks (6/9 CPU): both 2/3.
    inst = hand_instance([0, 9, 18, 0], np.array([[0, 1, 4, 0], [0, 3, 1, 0]]))
    alloc = make_policy("drf", {}, None)
    alloc.reset(inst, 0)
    out = alloc.allocate(first_view(inst))
    assert out.workers.sum(axis=1).tolist() == [3, 2]
    assert out.servers.sum(axis=1).tolist() == [1, 1]
    usage = out.workers.sum(axis=1)[:, None] * inst.jobs.worker_demand
    assert np.allclose(dominant_share(usage, inst.cluster.capacity.sum(axis=0)), [2 / 3, 2 / 3])


def test_drf_gives_a_capped_job_its_cap_and_splits_the_rest_evenly_with_pss_counted():
    # 10 CPUs over two machines; job 0 capped at F = 2; jobs 1-2 need a 1-CPU PS per worker (gamma 1).
    inst = hand_instance(
        np.array([[0, 5, 100, 100]] * 2),
        np.array([[0, 1, 1, 0], [0, 1, 1, 0], [0, 1, 1, 0]]),
        ps_demand=np.array([[0, 0, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0]]),
        batch=np.array([2, 100, 100]),
        gamma=np.array([10, 1, 1]),
    )
    policy = make_policy("drf", {}, None)
    policy.reset(inst, 0)
    out = policy.allocate(first_view(inst))
    assert out.workers.sum(axis=1).tolist() == [2, 2, 2]  # 2 + 2*(1+1) + 2*(1+1) = 10 CPUs
    assert out.servers.sum(axis=1).tolist() == [1, 2, 2]
    assert out.workers[1].tolist() != [2, 0], "round-robin should spread a job's tasks over both machines"


# --- Dorm ----------------------------------------------------------------------------------------------------


def dorm_changes(inst, sim, check):
    """Per slot: jobs that ran in t-1, are still pending at t and got a different placement (adjustments),
    and jobs whose nonzero placement at t was set in t (started or changed)."""
    w, s = sim.schedule.workers, sim.schedule.servers
    out = []
    for t in range(inst.slots):
        live = pending(inst, check.completion, t)
        same = (
            np.zeros(inst.num_jobs, bool)
            if t == 0
            else ((w[t] == w[t - 1]).all(axis=1) & (s[t] == s[t - 1]).all(axis=1))
        )
        ran = np.zeros(inst.num_jobs, bool) if t == 0 else w[t - 1].sum(axis=1) > 0
        out.append((live, ran & live & ~same, (w[t].sum(axis=1) > 0) & ~(ran & same)))
    return out


def test_dorm_respects_its_adjustment_limit_and_fairness_bound():
    inst = small(machines=4, jobs=25, slots=10)
    factor, limit = 1.5, 1
    sim, check = simulated("dorm", inst, {"fairness_factor": factor, "max_adjustments": limit})
    total = inst.cluster.capacity.sum(axis=0)
    jobs = inst.jobs
    usage = np.einsum("tih,ir->tir", sim.schedule.workers, jobs.worker_demand) + np.einsum(
        "tih,ir->tir", sim.schedule.servers, jobs.ps_demand
    )
    for t, (live, adjusted, set_now) in enumerate(dorm_changes(inst, sim, check)):
        assert adjusted.sum() <= limit, f"slot {t}: {adjusted.sum()} adjustments"
        shares = dominant_share(usage[t, set_now], total)
        assert np.all(shares <= factor / live.sum() + 1e-9), f"slot {t}: unfair allocation set"
    assert sim.stats["adjustments_max"] <= limit


def test_dorm_constraints_bind_when_loosened():
    # The same instance with loose limits adjusts more than one job per slot and sets shares above 1.5 / n,
    # so the test above checks constraints that actually bind.
    inst = small(machines=4, jobs=25, slots=10)
    sim, check = simulated("dorm", inst, {"fairness_factor": 1000.0, "max_adjustments": 100})
    total = inst.cluster.capacity.sum(axis=0)
    jobs = inst.jobs
    usage = np.einsum("tih,ir->tir", sim.schedule.workers, jobs.worker_demand) + np.einsum(
        "tih,ir->tir", sim.schedule.servers, jobs.ps_demand
    )
    changes = dorm_changes(inst, sim, check)
    assert max(adjusted.sum() for _, adjusted, _ in changes) > 1
    assert any(
        np.any(dominant_share(usage[t, set_now], total) > 1.5 / live.sum() + 1e-9)
        for t, (live, _, set_now) in enumerate(changes)
    )


def test_dorm_records_node_limit_hits_and_stays_feasible():
    inst = small(seed=5, machines=20, jobs=40, slots=6)
    sim, _ = simulated("dorm", inst, {"node_limit": 1, "mip_rel_gap": 0.0})
    assert sim.stats["node_limit_hits"] >= 1
    assert sim.stats["solves"] >= sim.stats["node_limit_hits"]


# --- OASiS ---------------------------------------------------------------------------------------------------


class Recorder(PlanningPolicy):
    """Wraps a planning policy and records each decision with the prices it was made at."""

    def __init__(self, inner):
        self.inner, self.decisions = inner, []

    def reset(self, instance, seed):
        self.inner.reset(instance, seed)

    def plan(self, job, view):
        reserved = view.reserved.copy()
        plan = self.inner.plan(job, view)
        self.decisions.append((job, reserved, plan))
        return plan

    def summary(self):
        return self.inner.summary()


def test_oasis_separates_workers_from_pss_and_admits_only_with_positive_payoff():
    inst = small(machines=6, jobs=20, slots=10)
    recorder = Recorder(make_policy("oasis", {}, None))
    sim = simulate(inst, recorder, 3)
    check = validate(inst, sim.schedule)
    assert check.violations == []
    w, s = sim.schedule.workers, sim.schedule.servers
    worker_half, ps_half = halves(inst.num_machines)
    assert not ((w > 0) & (s > 0)).any(), "a worker and a PS of one job share a machine"
    assert w[:, :, ps_half].sum() == 0 and s[:, :, worker_half].sum() == 0
    assert not check.internal.any()
    admitted = [d for d in recorder.decisions if d[2] is not None]
    assert 1 <= len(admitted) < len(recorder.decisions)
    jobs, cap = inst.jobs, inst.cluster.capacity
    bounds_w = half_bounds(inst, worker_half, jobs.worker_demand, 1e-6)
    bounds_s = half_bounds(inst, ps_half, jobs.ps_demand, 1e-6)
    for job, reserved, plan in admitted:
        # Recompute the payoff from the plan itself: u(t~ - a) minus the plan's resources at decision prices.
        cost = np.einsum(
            "th,thr,r->",
            plan.workers[:, worker_half],
            prices(bounds_w, reserved[:, worker_half], cap[worker_half]),
            jobs.worker_demand[job],
        ) + np.einsum(
            "th,thr,r->",
            plan.servers[:, ps_half],
            prices(bounds_s, reserved[:, ps_half], cap[ps_half]),
            jobs.ps_demand[job],
        )
        payoff = float(jobs.utility_of(job, plan.completion - jobs.arrival[job])) - cost
        assert payoff > 0 and payoff == pytest.approx(plan.payoff, rel=1e-9, abs=1e-12)


def test_oasis_rejects_a_job_without_utility_and_admits_its_valuable_twin():
    inst = small(machines=6, jobs=2, slots=10, scale=0.002)
    jobs = inst.jobs
    fields = {f: getattr(jobs, f) for f in jobs.__dataclass_fields__}
    fields = {f: np.stack([v[0], v[0]]) for f, v in fields.items()}
    fields["theta1"] = np.array([0.0, 50.0])
    twin = Instance(jobs=Jobs(**fields), cluster=inst.cluster, slots=inst.slots)
    sim, _ = simulated("oasis", twin)
    assert sim.schedule.admitted.tolist() == [False, True]


# --- compare -------------------------------------------------------------------------------------------------


def test_parse_seeds():
    assert parse_seeds("1-3,7") == [1, 2, 3, 7]
    with pytest.raises(ConfigError):
        parse_seeds("5-1")


def test_compare_prints_a_table_and_writes_json(tmp_path, capsys):
    out = tmp_path / "cmp.json"
    code = cli.main(
        [
            "compare",
            "--policies",
            "fifo,oasis",
            "--machines",
            "4",
            "--jobs",
            "6",
            "--slots",
            "4",
            "--seeds",
            "1-2",
            "--json",
            str(out),
            "--retime",
        ]
    )
    assert code == 0
    table = capsys.readouterr().out
    assert "| fifo | 2 |" in table and "| oasis | 2 |" in table
    data = json.loads(out.read_text())
    assert [(r["policy"], r["seed"]) for r in data["runs"]] == [("fifo", 1), ("oasis", 1), ("fifo", 2), ("oasis", 2)]
    # --retime: every schedule re-timed with the actual worker:PS ratio; as run, it is the validator's utility
    assert all(r["retime"]["utility_nominal"] == r["total_utility"] for r in data["runs"])
    retimed = table.split("Re-timed with the actual worker:PS ratio")[1]
    fifo = data["runs"][0]["retime"]["running"] + data["runs"][2]["retime"]["running"]
    assert f"| fifo | {fifo} |" in retimed and "| oasis |" in retimed
