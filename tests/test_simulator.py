"""The simulator on hand-built instances: progress per slot (eq. 1 with Fact 1's rates), completion, release of
a plan's later slots, the restart loss, and masking of jobs that are not active. Expected values by hand:
``tiny_instance`` jobs need V = 4 samples at 1/tau = 2 samples per worker per slot (g = 0)."""

from __future__ import annotations

import numpy as np
import pytest
from tiny import tiny_instance

from pdors.policies.base import JobPlan, PlanningPolicy, Policy, SlotAllocation, SlotPolicy
from pdors.simulator import simulate
from pdors.validator import validate


class OneWorkerPlan(PlanningPolicy):
    """Admit every job with one worker and one PS on machine 0 in every slot from its arrival on."""

    def plan(self, job, view):
        inst = view.instance
        workers = np.zeros((inst.slots, inst.num_machines), dtype=np.int64)
        workers[view.t :, 0] = 1
        return JobPlan(workers=workers, servers=workers.copy(), completion=inst.slots - 1)


class Scripted(SlotPolicy):
    """Slot t: job 0 gets one worker and one PS on machine ``machine_of[t]``."""

    def __init__(self, machine_of, restart_loss=0.0, jobs=1):
        self.machine_of, self.restart_loss, self.jobs = machine_of, restart_loss, jobs

    def allocate(self, view):
        w = np.zeros((self.jobs, view.instance.num_machines), dtype=np.int64)
        w[:, self.machine_of[view.t]] = 1
        return SlotAllocation(w, w.copy())


def test_a_plan_runs_until_the_workload_is_done_and_its_later_slots_are_released():
    inst = tiny_instance([{}], slots=4)
    sim = simulate(inst, OneWorkerPlan())
    s = sim.schedule
    assert s.admitted.tolist() == [True]
    assert s.claimed_completion.tolist() == [1]  # 2 samples in slot 0, 2 in slot 1
    assert s.workers[:2, 0, 0].tolist() == [1, 1] and s.workers[2:].sum() == 0 and s.servers[2:].sum() == 0
    check = validate(inst, s)
    assert check.ok and check.completion.tolist() == [1]
    assert len(sim.decision_seconds) == 1  # one decision per arriving job


def test_a_placement_change_after_running_costs_the_restart_loss():
    inst = tiny_instance([{}], slots=4)
    sim = simulate(inst, Scripted([0, 1, 1, 1], restart_loss=0.5))
    s = sim.schedule
    assert s.claimed_restart[:, 0].tolist() == [False, True, False, False]
    assert s.claimed_completion.tolist() == [2]  # 2 + 2 * 0.5 + 2 >= 4 samples
    assert validate(inst, s).completion.tolist() == [2]
    free = simulate(inst, Scripted([0, 1, 1, 1]))  # no restart cost: done in slot 1
    assert free.schedule.claimed_completion.tolist() == [1]
    assert len(free.decision_seconds) == free.slots_simulated == 2  # one decision per slot, until the job is done


def test_allocations_of_jobs_not_yet_arrived_or_done_are_not_executed():
    inst = tiny_instance([{"arrival": 1}, {}], slots=4)
    sim = simulate(inst, Scripted([0, 0, 0, 0], jobs=2))
    s = sim.schedule
    assert s.workers[0, 0].sum() == 0 and s.workers[1, 0].sum() == 1  # job 0 arrives in slot 1
    assert s.claimed_completion.tolist() == [2, 1]
    assert s.workers[2:, 1].sum() == 0  # job 1 is done after slot 1
    assert validate(inst, s).ok


def test_a_policy_of_neither_kind_is_refused():
    with pytest.raises(TypeError, match="neither a PlanningPolicy nor a SlotPolicy"):
        simulate(tiny_instance([{}]), Policy())
