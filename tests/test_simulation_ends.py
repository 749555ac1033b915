"""The simulator stops once no job can still arrive or run: the slots after that are not simulated, and the
result is the one over a horizon just long enough (an operation count, not a time)."""

from __future__ import annotations

import dataclasses

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
