"""The workload grid never costs a job alone a slot (docs/MODEL.md, "The workload grid")."""

import dataclasses
from typing import Any

import numpy as np
import pytest

from pdors.model import CRITICAL, Instance
from pdors.policies.pdors import PDORS, Config
from pdors.primal_dual.dynamic_program import aligned_levels
from pdors.simulator import simulate
from pdors.solo import fastest_completion, max_samples_per_slot, utility_ceiling
from pdors.validator import validate
from pdors.workload import WorkloadConfig, generate


def test_aligned_levels_are_the_smallest_multiple_of_the_fastest_slot_count() -> None:
    fastest = np.array([7, 3, 1, 150, 40, 0])
    window = np.array([30, 30, 30, 200, 20, 30])
    assert aligned_levels(100, fastest, window).tolist() == [105, 102, 100, 150, 100, 100]


def test_max_samples_per_slot_by_hand() -> None:
    # tiny-like job: 1 cpu per worker and per PS, gamma 1, F = 4, tau 0.5 (2 samples per worker);
    # one machine of 5 cpu holds 2 workers + 2 PSs (internal: 4 samples); two hold 4 + 4 workers + PSs
    # only with F = 4: w = 4, s = 4 needs 8 cpu over 10 -> 8 samples at the same external rate.
    from tiny import tiny_instance

    one = tiny_instance([{"batch": 4}], machines=1, capacity=(1.0, 5.0, 10.0, 10.0))
    two = tiny_instance([{"batch": 4}], machines=2, capacity=(1.0, 5.0, 10.0, 10.0))
    assert max_samples_per_slot(one).tolist() == [4.0]
    assert max_samples_per_slot(two).tolist() == [8.0]
    # V = 4 samples: one slot on two machines; ceiling = u(0) = 10 / (1 + e^0) = 5
    assert fastest_completion(two).tolist() == [0] and utility_ceiling(two) == pytest.approx(5.0)


def _lone_job(seed: int) -> tuple[Instance, int]:
    """One time-critical job arriving at 0 on a random empty cluster, and the slot its fastest schedule alone
    completes in (-1 if after T - 1). Its utility drops from 0.95 theta_1 to 0.05 theta_1 right after that slot,
    so any later completion pays less than the fastest one whenever the job is admitted at all."""
    rng = np.random.default_rng(seed)
    workload = WorkloadConfig(
        workload_scale=float(rng.uniform(0.0005, 0.05)), capacity_factor=float(rng.uniform(3.0, 30.0))
    )
    machines = int(rng.integers(1, 7))
    inst = generate(workload, machines, 1, 30, seed, arrivals=np.array([0]), sensitivity=np.array([CRITICAL]))
    fastest = int(fastest_completion(inst)[0])
    jobs = dataclasses.replace(inst.jobs, theta2=np.array([6.0]), theta3=np.array([fastest + 0.5]))
    return dataclasses.replace(inst, jobs=jobs), fastest


def _completion(inst: Instance, policy: PDORS, seed: int) -> int:
    return int(validate(inst, simulate(inst, policy, seed).schedule).completion[0])


def test_a_lone_job_completes_when_its_fastest_schedule_does() -> None:
    """200 random workloads and clusters: on the empty cluster (prices L) PD-ORS finishes a lone job exactly
    when its fastest schedule alone does; with one Q = 100 for every job some finish later."""
    late, fixed_late, checked = [], [], 0
    for seed in range(200):
        inst, fastest = _lone_job(seed)
        if fastest < 0:
            continue
        checked += 1
        if _completion(inst, PDORS(Config()), seed) != fastest:
            late.append(seed)
        if _completion(inst, PDORS(Config(workload_grid="uniform")), seed) != fastest:
            fixed_late.append(seed)
    print(f"{checked} lone jobs; late on the aligned grid: {late}; on Q = 100 for all: {len(fixed_late)}")
    assert checked >= 150 and late == [] and fixed_late, (checked, late, fixed_late)


def test_the_greedy_shortcut_never_changes_the_most_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    """``_greedy_fits`` only decides cases the exact packing would decide the same way."""
    import pdors.solo as solo

    instances = []
    for seed in range(30):
        rng = np.random.default_rng(seed)
        profile = "thesis" if seed % 3 == 0 else "paper"
        workload = WorkloadConfig(profile=profile, capacity_factor=float(rng.uniform(2.0, 30.0)))
        instances.append(generate(workload, int(rng.integers(1, 12)), 20, 30, seed))
    fast = [solo.max_samples_reference(inst) for inst in instances]
    monkeypatch.setattr(solo, "_greedy_fits", lambda *args: False)
    for inst, expected in zip(instances, fast, strict=True):
        assert np.array_equal(solo.max_samples_reference(inst), expected)


def test_identical_machines_give_the_reference_numbers_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    """``_max_samples_identical`` (all jobs at once) returns the very floats of ``max_samples_reference`` (job by
    job) on 300 random instances of both profiles and both thesis PS rules; each of its ways to a job's rate (the
    internal count beats any external one, the greedy test places F_i, the exact packing) is taken many times."""
    import pdors.solo as solo

    greedy, packed = [], []
    greedy_fits, exact = solo._greedy_fits_identical, solo._servers_on_identical

    def greedy_counted(*args: Any) -> np.ndarray:
        out = greedy_fits(*args)
        greedy.append(int(out.sum()))
        return out

    def packed_counted(*args: Any) -> np.ndarray:
        packed.append(1)
        return exact(*args)

    monkeypatch.setattr(solo, "_greedy_fits_identical", greedy_counted)
    monkeypatch.setattr(solo, "_servers_on_identical", packed_counted)
    internal = 0
    for seed in range(300):
        rng = np.random.default_rng(seed)
        profile = "thesis" if seed % 3 == 0 else "paper"
        rule = "as_printed" if seed % 6 == 0 else "eq3_5"
        size = {} if profile == "thesis" else {"batch": (1, int(rng.integers(1, 300)))}
        workload = WorkloadConfig(
            profile=profile, thesis_ps_rule=rule, capacity_factor=float(rng.uniform(0.5, 30.0)), **size
        )
        inst = generate(workload, int(rng.integers(1, 45)), int(rng.integers(1, 30)), 10, seed)
        fast, reference = solo._max_samples_identical(inst), solo.max_samples_reference(inst)
        assert fast.tobytes() == reference.tobytes(), seed
        internal += int(np.sum(reference > inst.jobs.batch / inst.jobs.time_per_sample(False)))
    print(f"internal beats external: {internal}; greedy fits: {sum(greedy)}; exact packings: {len(packed)}")
    assert min(internal, sum(greedy), len(packed)) >= 100, (internal, sum(greedy), len(packed))
