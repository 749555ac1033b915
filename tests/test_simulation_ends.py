"""The simulator stops once no job can still arrive or run: the slots after that are not simulated, and the
result is the one over a horizon just long enough (an operation count, not a time)."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pytest

from pdors.run import RunSpec, make_instance, run
from pdors.workload import WorkloadConfig

SHORT, LONG = 20, 300_000


def _short_run(policy: str):
    """The first seed whose 3 jobs all complete within ``SHORT`` slots (the premise of the comparison)."""
    for seed in range(1, 50):
        spec = RunSpec(
            policy=policy, machines=10, jobs=3, slots=SHORT, seed=seed, workload=WorkloadConfig(workload_scale=0.01)
        )
        instance = make_instance(spec)
        result = run(spec, instance)
        if result.summary.completed == 3:
            return spec, instance, result
    raise AssertionError("no seed below 50 completes all three jobs")


@pytest.mark.parametrize("policy", ["fifo", "drf", "pdors"])
def test_a_long_horizon_ends_when_the_jobs_do_with_the_short_horizon_s_result(policy):
    spec, instance, short = _short_run(policy)
    last = max(j.completion for j in short.summary.jobs)
    assert short.simulation.slots_simulated == last + 1
    spec_long = dataclasses.replace(spec, slots=LONG)
    long = run(spec_long, dataclasses.replace(instance, slots=LONG))
    long_last = max(j.completion for j in long.summary.jobs if j.completion is not None)
    assert long.summary.completed == 3
    assert long.simulation.slots_simulated == long_last + 1  # of 300,000 slots, a handful simulated
    assert long.validation.ok
    if policy != "pdors":  # PD-ORS's price bound L depends on T (eq. 14), and so may its decisions
        assert long.simulation.schedule.to_sparse()["cells"] == short.simulation.schedule.to_sparse()["cells"]
        assert [j.completion for j in long.summary.jobs] == [j.completion for j in short.summary.jobs]
        assert long.summary.total_utility == short.summary.total_utility


def test_three_jobs_over_three_million_slots_give_the_twenty_slot_result():
    """The issue's case: 3 jobs over T = 3,000,000. The simulator, the validator, the summary and the digest look
    at the slots before the schedule's horizon; the result is the 20-slot run's, job by job (time:
    docs/appendix/HOSTILE.md)."""
    spec, instance, short = _short_run("fifo")
    long = run(dataclasses.replace(spec, slots=3_000_000), dataclasses.replace(instance, slots=3_000_000))
    assert long.validation.ok and long.summary.completed == 3
    assert long.simulation.schedule.to_sparse() == short.simulation.schedule.to_sparse()
    outcome = ("job", "arrival", "admitted", "completion", "utility", "workload", "samples_processed")
    assert [[getattr(j, f) for f in outcome] for j in long.summary.jobs] == [
        [getattr(j, f) for f in outcome] for j in short.summary.jobs
    ]
    assert long.summary.total_utility == short.summary.total_utility


def _reference_digest(workers: np.ndarray, servers: np.ndarray, admitted: np.ndarray) -> str:
    """The digest's definition, literally: the shape, a (flat index, workers, PSs) triple per non-zero cell,
    the admissions, all as int64."""
    h = hashlib.blake2b(digest_size=16)
    h.update(np.array(workers.shape, dtype="<i8").tobytes())
    for at in np.flatnonzero((workers != 0) | (servers != 0)):
        h.update(np.array([at, workers.flat[at], servers.flat[at]], dtype="<i8").tobytes())
    h.update(admitted.astype("<i8").tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("tail", [0, 1, 7, 300_000])
def test_the_digest_is_its_definition_whatever_the_idle_tail(tail):
    """The digest reads the slots before the horizon only, in blocks; it equals the literal definition for any
    idle tail, and a tail of a different length (another T) gives another digest."""
    _, _, short = _short_run("drf")
    sched = short.simulation.schedule
    slots = len(sched.workers) + tail
    grown = dataclasses.replace(
        sched,
        workers=np.concatenate([sched.workers, np.zeros((tail, *sched.workers.shape[1:]), np.int32)]),
        servers=np.concatenate([sched.servers, np.zeros((tail, *sched.servers.shape[1:]), np.int32)]),
        claimed_restart=np.concatenate([sched.claimed_restart, np.zeros((tail, sched.claimed_restart.shape[1]), bool)]),
    )
    assert len(grown.workers) == slots and grown.horizon() <= len(sched.workers)
    assert grown.digest() == _reference_digest(grown.workers, grown.servers, grown.admitted)
    assert (grown.digest() == sched.digest()) == (tail == 0)
