"""The certified dual bound on OPT (offline_opt/dual_bound.py): never below OPT (enumerator, proven ratio-study
optima), never below a policy's validated utility at the paper's size, its oracle equal to an LP over every integer
allocation, its float64 value above an exact rational evaluation, and planted bugs caught."""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog

from offline_opt import certified
from offline_opt import dual_bound as db
from offline_opt.bounds import count_limits
from offline_opt.compare import run_policies
from offline_opt.enumerate import enumerate_opt
from offline_opt.profile import tiny_profile
from pdors.instance_io import from_dict
from pdors.model import Cluster, Instance
from pdors.workload import WorkloadConfig, generate
from pdors_cli.main import main
from pipeline.nightly import paper as nightly_paper
from pipeline.results.summary import above_opt, with_ratio
from pipeline.spec import opt_task as pipeline_opt
from pipeline.spec.schema import OptConfig

DATA = Path(__file__).parent / "data" / "ratio_study_proven.json"


def tiny(seed: int) -> Instance:
    """H in {1, 2}, I in {2, 3}, T in {2, 3}: what the enumerator solves."""
    return generate(tiny_profile(), 1 + seed % 2, 2 + (seed // 2) % 2, 2 + (seed // 4) % 2, seed)


def below_opt(seeds: range) -> tuple[list[tuple[int, float, float]], int, int]:
    """(instances with bound < OPT, instances with OPT > 0, instances where the bound is exact within 1e-6)."""
    low, positive, exact = [], 0, 0
    for seed in seeds:
        inst = tiny(seed)
        opt, bound = enumerate_opt(inst).value, db.dual_bound(inst).bound
        positive += opt > 0
        exact += bound <= opt * (1 + 1e-6) + 1e-9
        if bound < opt:
            low.append((seed, bound, opt))
    return low, positive, exact


def test_bound_is_at_least_the_enumerated_opt() -> None:
    low, positive, exact = below_opt(range(1, 121))
    assert low == []
    assert positive >= 90  # the check means something: most instances complete jobs (105 of 120)
    assert exact >= 80  # and the bound is not vacuous (exact within 1e-6 on 102)


def test_a_cost_overestimating_oracle_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: every option costs 10x its price (as if capacity were a tenth): some bound falls below OPT.
    (Smaller factors do not: on these tiny instances the bound mostly comes from the jobs' own limits.)"""
    real = db.costs

    def inflated(opt: db.Options, prices: np.ndarray) -> db.Costs:
        c = real(opt, prices)
        return db.Costs(c.kappa * 10.0, c.ext_worker_class, c.ext_server_class)

    monkeypatch.setattr(db, "costs", inflated)
    low, _, _ = below_opt(range(1, 61))
    assert low


def test_bound_is_at_least_the_proven_ratio_study_optima() -> None:
    data = json.loads(DATA.read_text())["instances"]
    assert len(data) >= 10
    for entry in data:
        b = db.dual_bound(from_dict(entry["instance"]))
        assert b.stopped == "converged", entry["source"]
        assert entry["opt"] <= b.bound <= 1.2 * entry["opt"], (entry["source"], b.bound)


@pytest.mark.slow
@pytest.mark.parametrize(("size", "scale"), [((100, 50, 20), 0.1), ((30, 60, 40), 0.1)])
def test_bound_is_at_least_every_policy_at_paper_scale(size: tuple[int, int, int], scale: float) -> None:
    machines, jobs, slots = size
    inst = generate(WorkloadConfig(workload_scale=scale), machines, jobs, slots, 1)
    b = db.dual_bound(inst)
    assert b.stopped == "converged"
    runs = run_policies(inst, seed=1, workload={"workload_scale": scale})
    utilities = {name: r.validation.total_utility for name, r in runs.items() if r.validation.ok}
    assert len(utilities) == len(runs)
    assert max(utilities.values()) > 0
    assert all(u <= b.bound for u in utilities.values()), (b.bound, utilities)


def two_class_instance(seed: int) -> Instance:
    """A heterogeneous cluster (two machine classes) so that class choices and external charging matter."""
    inst = generate(tiny_profile(), 3, 3, 4, seed)
    cap = inst.cluster.capacity.copy()
    cap[0] *= 1.7
    return Instance(jobs=inst.jobs, cluster=Cluster(cap), slots=inst.slots)


def lp_cost(inst: Instance, opt: db.Options, prices: np.ndarray, i: int, k: int) -> float:
    """Least cost for job i to reach V' by slot k over convex combinations of EVERY integer allocation per slot:
    internal W = 1..w_internal on each class, external W = 1..w_external with workers and PSs each on any class
    that can hold one."""
    lim = count_limits(inst)
    rate_int, rate_ext = 1.0 / inst.jobs.time_per_sample(True)[i], 1.0 / inst.jobs.time_per_sample(False)[i]
    C = opt.capacity.shape[0]
    g = int(inst.jobs.gamma[i])
    sig, cost, slot = [], [], []
    for t in range(int(opt.arrival[i]), k + 1):
        pa, pb = prices[t] @ opt.alpha[i], prices[t] @ opt.beta[i]
        for c in range(C):
            for w in range(1, int(lim.w_internal[i, c]) + 1):
                sig.append(w * rate_int)
                cost.append(w * pa[c] + -(-w // g) * pb[c])
                slot.append(t)
        for w in range(1, int(lim.w_external[i]) + 1):
            for cw in np.flatnonzero(opt.worker_ok[i]):
                for cs in np.flatnonzero(opt.server_ok[i]):
                    sig.append(w * rate_ext)
                    cost.append(w * pa[cw] + -(-w // g) * pb[cs])
                    slot.append(t)
    slots = sorted(set(slot))
    a_ub = np.zeros((len(slots) + 1, len(sig)))
    for j, t in enumerate(slot):
        a_ub[slots.index(t), j] = 1.0
    a_ub[-1] = -np.array(sig)
    b_ub = np.append(np.ones(len(slots)), -opt.target[i])
    res = linprog(np.array(cost), A_ub=a_ub, b_ub=b_ub, bounds=(0, None), method="highs")
    return float(res.fun) if res.status == 0 else np.inf


def oracle_mismatches(seeds: range) -> list[tuple]:
    bad = []
    rng = np.random.default_rng(7)
    for seed in seeds:
        inst = two_class_instance(seed)
        opt = db.options(inst)
        C, R = opt.capacity.shape
        prices = rng.exponential(1.0, (inst.slots, C, R)) * (rng.random((inst.slots, C, R)) < 0.7)
        cs = db.costs(opt, prices)
        pr = db.price(opt, db.hull(opt, cs.kappa))
        for i in range(inst.num_jobs):
            for k in range(inst.slots):
                if opt.utility[i, k] == -np.inf:
                    continue
                want, got = lp_cost(inst, opt, prices, i, k), pr.cost[i, k]
                if not abs(got - want) <= 1e-7 * max(1.0, abs(want)):
                    bad.append((seed, i, k, got, want))
    return bad


def test_oracle_equals_an_lp_over_all_integer_allocations() -> None:
    assert oracle_mismatches(range(1, 9)) == []


def test_a_cost_underestimating_oracle_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: the oracle sees every largest internal allocation 10% cheaper than it is; the LP notices."""
    real = db.costs

    def cheap(opt: db.Options, prices: np.ndarray) -> db.Costs:
        c = real(opt, prices)
        kappa = c.kappa.copy()
        kappa[:, :, 2] *= 0.9  # option 2: N = w_internal workers on class 0
        return db.Costs(kappa, c.ext_worker_class, c.ext_server_class)

    monkeypatch.setattr(db, "costs", cheap)
    assert oracle_mismatches(range(1, 9))


def exact_certificate(opt: db.Options, prices: np.ndarray, mu: np.ndarray) -> Fraction:
    """D at ``prices`` and water-filling slopes ``mu``, every float taken as the exact rational it is."""
    kappa = db.costs(opt, prices).kappa
    F = Fraction
    total = sum(
        (
            F(float(p)) * F(float(c))
            for p, c in zip(prices.ravel(), np.broadcast_to(opt.capacity, prices.shape).ravel(), strict=True)
        ),
        F(0),
    )
    for i in range(len(opt.target)):
        best = F(0)
        for k in range(opt.slots):
            if opt.utility[i, k] == -np.inf:
                continue
            m = F(float(mu[i, k]))
            low = m * F(float(opt.target[i]))
            for t in range(int(opt.arrival[i]), k + 1):
                low -= max(m * F(float(s)) - F(float(c)) for s, c in zip(opt.sigma[i], kappa[i, t], strict=True))
            best = max(best, F(float(opt.utility[i, k])) - low)
        total += best
    return total


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_float_bound_is_above_its_exact_rational_value(seed: int) -> None:
    inst = generate(WorkloadConfig(workload_scale=0.02), 4, 10, 10, seed)
    b = db.dual_bound(inst, branch_leaves=0)
    opt = db.options(inst)
    pr = db.price(opt, db.hull(opt, db.costs(opt, b.prices).kappa))
    exact = exact_certificate(opt, b.prices, pr.mu)
    assert Fraction(b.bound) >= exact and b.bound == b.root
    assert abs(float(exact) - b.lagrangian) <= 1e-9 * b.lagrangian


def test_a_sweep_reads_a_bound_only_opt_row_as_a_certified_interval() -> None:
    """opt: {method: bound}: no proven OPT, so no ``ratio``; ``ratio_bound`` = bound / ALG, ``ratio_low`` = the best
    valid schedule on the instance / ALG; a policy above the bound is flagged as a bug."""
    result = json.dumps(
        {"method": "bound", "status": "bound", "objective": None, "bound": 100.0, "dual_bound": {"bound": 100.0}}
    )
    runs = pd.DataFrame(
        {
            "kind": ["opt", "sim", "sim", "sim"],
            "status": "ok",
            "instance_id": "a",
            "run_id": ["o", "best", "half", "bug"],
            "policy": ["opt", "pdors", "fifo", "drf"],
            "total_utility": [None, 80.0, 40.0, 101.0],
            "violations": [None, 0, 0, 0],
            "opt.result": [result, None, None, None],
        }
    )
    rated = with_ratio(runs).set_index("run_id")
    assert rated["ratio"].isna().all()
    assert rated.loc["best", "ratio_bound"] == 1.25 and rated.loc["half", "ratio_bound"] == 2.5
    assert rated.loc["best", "ratio_low"] == 1.0 and rated.loc["half", "ratio_low"] == 2.0
    assert list(above_opt(runs)["run_id"]) == ["bug"]


def test_opt_block_names_a_wrong_method() -> None:
    assert OptConfig(method="lp").check() == ["method: must be milp or bound, got 'lp'"]
    assert OptConfig(method="bound").check() == []


def test_sweep_opt_task_reports_the_bound_beside_the_milp() -> None:
    spec = {
        "machines": 2,
        "jobs": 3,
        "slots": 3,
        "seed": 2,
        "workload": {"workload_scale": 0.0007, "capacity_factor": 4.0, "batch": [1, 8]},
    }
    milp = pipeline_opt.solve({**spec, "opt": {"solver": "highs", "time_limit": 60, "mip_gap": 1e-9, "method": "milp"}})
    bound = pipeline_opt.solve(
        {**spec, "opt": {"solver": "highs", "time_limit": 60, "mip_gap": 1e-9, "method": "bound"}}
    )
    assert milp["proven_optimal"] and milp["dual_bound"]["bound"] >= milp["objective"]
    assert bound["objective"] is None and bound["bound"] == bound["dual_bound"]["bound"] == milp["dual_bound"]["bound"]
    assert pipeline_opt.ceiling(bound) == bound["bound"]


@pytest.mark.slow
def test_nightly_paper_scale_passes_and_fails_when_a_policy_is_above_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    good = nightly_paper.check_one(7)
    assert good.offences == [] and len(good.certified.ratios) == 7
    assert all(r.high is not None and r.low is not None and 1.0 <= r.low <= r.high for r in good.certified.ratios)
    assert "| 7 |" in "\n".join(nightly_paper.markdown([good]))

    real = certified.dual_bound
    monkeypatch.setattr(certified, "dual_bound", lambda inst: dataclasses.replace(real(inst), bound=1.0))
    bad = nightly_paper.check_one(7)
    assert bad.offences and all("exceeds the certified bound" in o for o in bad.offences)


def test_nightly_refuses_a_negative_paper_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nightly", "--paper", "-1", "--out", str(tmp_path / "out")]) == 2
    assert "paper: must be >= 0" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_thesis_instances_get_a_valid_bound() -> None:
    """The thesis's rules (3.4)-(3.5) only remove schedules, so the paper-model bound stays above its policies."""
    inst = generate(WorkloadConfig(profile="thesis"), 20, 30, 30, 1)
    assert inst.ps_bandwidth is not None
    b = db.dual_bound(inst)
    runs = run_policies(inst, 1, {"profile": "thesis"}, policies=("pdors", "oasis"))
    assert all(r.validation.ok and r.validation.total_utility <= b.bound for r in runs.values())


def test_external_count_packs_whole_workers_and_servers_on_machines() -> None:
    """``w_external`` is the most workers W whose W workers and ceil(W / gamma) PSs each fit whole on one machine:
    equal to a brute force over every per-machine split on random small clusters (one or two machine classes)."""
    import itertools

    from offline_opt.bounds import MachineClasses, _packed_count

    rng = np.random.default_rng(45)
    for _ in range(40):
        caps = rng.integers(5, 30, (int(rng.integers(1, 3)), 2)).astype(float)
        count = rng.integers(1, 3, 1) if len(caps) == 1 else np.ones(2, dtype=np.int64)
        alpha, beta = rng.integers(0, 8, (3, 2)).astype(float), rng.integers(0, 8, (3, 2)).astype(float)
        alpha[:, 0] = np.maximum(alpha[:, 0], 1)
        gamma, limit = rng.integers(1, 4, 3), rng.integers(1, 12, 3)
        got = _packed_count(
            limit, gamma, alpha, beta, MachineClasses(caps, count, np.repeat(np.arange(len(caps)), count))
        )
        for i in range(3):
            splits = [
                [(w, s) for w in range(12) for s in range(12) if np.all(w * alpha[i] + s * beta[i] <= c + 1e-9)]
                for c in np.repeat(caps, count, axis=0)
            ]
            best = max(
                (
                    sum(w for w, _ in combo)
                    for combo in itertools.product(*splits)
                    if sum(w for w, _ in combo) <= limit[i]
                    and sum(s for _, s in combo) >= -(-sum(w for w, _ in combo) // gamma[i])
                ),
                default=0,
            )
            assert got[i] == best, (caps, count, alpha[i], beta[i], gamma[i], limit[i])


def test_bound_counts_external_allocations_machine_by_machine() -> None:
    """Small profile, H = 2, I = 4, T = 8, seed 14 (OPT 102.507, proven by HiGHS): pooling the two machines let job 0
    run 20 external workers + 7 PSs of 10 storage each (270 = 2 x 135), which only 19 + 7 fit whole (13 items per
    machine); the bound was 174.56 (1.70 x OPT) with the pooled count, 162.54 with the packed one."""
    from offline_opt.profile import small_profile

    inst = generate(small_profile(), 2, 4, 8, 14)
    assert count_limits(inst).w_external[0] == 19
    assert 102.50 <= db.dual_bound(inst).bound <= 162.55
