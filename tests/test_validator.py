"""The validator against schedules built by hand, each breaking one rule."""

import numpy as np
import pytest
from tiny import tiny_instance

from pdors.schedule import Schedule
from pdors.validator import validate


def _instance():
    # Job 0: V = 4 samples, F = 2, gamma = 1, 2 samples per worker-slot; job 1 arrives in slot 1.
    return tiny_instance([{}, {"arrival": 1, "gamma": 2, "batch": 4, "samples": 8}])


def _good():
    inst = _instance()
    s = Schedule.empty(inst)
    s.admitted[:] = True
    s.workers[0, 0, 0], s.servers[0, 0, 0] = 2, 2  # job 0: internal on machine 0, done in slot 0
    s.workers[1, 1, 1], s.servers[1, 1, 1] = 2, 1  # job 1: internal, 4 samples in slot 1 ...
    s.workers[2, 1, 0], s.servers[2, 1, 1] = 2, 1  # ... and external, 4 more in slot 2
    s.claimed_internal[0, 0] = s.claimed_internal[1, 1] = True
    s.claimed_completion[:] = [0, 2]
    return inst, s


def test_a_correct_schedule_passes_with_its_utility():
    inst, s = _good()
    v = validate(inst, s)
    assert v.violations == []
    assert list(v.completion) == [0, 2]
    expected = 10 / (1 + np.exp(0.0)) + 10 / (1 + np.exp(1.0))  # u_0(0) + u_1(2 - 1)
    assert v.total_utility == pytest.approx(expected)


def _kinds(inst, s):
    return {x.kind for x in validate(inst, s).violations}


def test_capacity():
    inst, s = _good()
    s.workers[0, 0, 0] = 3  # 3 workers + 2 PS = 5 cpu > 4
    assert "capacity" in _kinds(inst, s)


def test_cap_f():
    inst, s = _good()
    s.workers[1, 1, 1], s.servers[1, 1, 1] = 5, 3  # F = 4
    s.workers[1, 1, 0] = 0
    assert "cap" in _kinds(inst, s)


def test_ratio_too_few_servers_and_servers_without_workers():
    inst, s = _good()
    s.servers[2, 1, 1] = 0
    s.servers[2, 1, 0] = 0  # 2 workers at gamma 2 need 1 PS
    assert "ratio" in _kinds(inst, s)
    inst, s = _good()
    s.servers[1, 0, 1] = 1  # a PS for job 0 in a slot with no workers
    assert "ratio" in _kinds(inst, s)


def test_before_arrival():
    inst, s = _good()
    s.workers[0, 1, 1], s.servers[0, 1, 1] = 1, 1  # job 1 arrives in slot 1
    assert "before_arrival" in _kinds(inst, s)


def test_not_admitted():
    inst, s = _good()
    s.admitted[1] = False
    assert "not_admitted" in _kinds(inst, s)
    assert validate(inst, s).utility[1] == 0


def test_wrong_locality_rate_claimed():
    inst, s = _good()
    s.claimed_internal[2, 1] = True  # slot 2 spans two machines: external
    assert "locality" in _kinds(inst, s)


def test_completion_claimed_early():
    inst, s = _good()
    s.claimed_completion[1] = 1  # only 4 of 8 samples by slot 1
    assert "completion" in _kinds(inst, s)


def test_external_rate_is_slower_when_bandwidth_matters():
    inst = tiny_instance([{"grad_mb": 1.0, "samples": 4}])  # per sample: 0.5 + 2/(b*2)
    s = Schedule.empty(inst)
    s.admitted[:] = True
    s.workers[0, 0, 0], s.servers[0, 0, 1] = 2, 2  # external: 0.5 + 2*1*1/(1*2) = 1.5 slot/sample
    v = validate(inst, s)
    assert v.samples[0, 0] == pytest.approx(2 / 1.5) and not v.internal[0, 0]
    s.servers[0, 0, 1], s.servers[0, 0, 0] = 0, 2  # internal: 0.5 + 2/(40*2) = 0.525
    v = validate(inst, s)
    assert v.samples[0, 0] == pytest.approx(2 / 0.525) and v.internal[0, 0]


def test_restart_loss_is_charged_and_a_broken_restart_claim_is_caught():
    inst, s = _good()
    s.restart_loss = 0.5  # job 1 moves from machine 1 (slot 1) to 0+1 (slot 2)
    s.claimed_restart[2, 1] = True
    s.claimed_completion[1] = -1  # 4 + 4 * 0.5 = 6 of 8 samples: never complete
    v = validate(inst, s)
    assert v.violations == [] and v.restarts.tolist() == [[False, False], [False, False], [False, True]]
    assert v.samples[2, 1] == pytest.approx(2.0) and v.utility[1] == 0
    s.claimed_restart[2, 1] = False  # claims the move was free
    assert _kinds(inst, s) == {"restart"}
    s.claimed_restart[2, 1], s.claimed_restart[0, 0] = True, True  # job 0's first slot is a start, not a restart
    assert _kinds(inst, s) == {"restart"}
    s.restart_loss = 1.0
    with pytest.raises(ValueError, match="restart_loss"):
        validate(inst, s)


def test_retime_with_the_actual_ratio_on_a_hand_worked_schedule():
    """docs/MODEL.md "Three readings" (b). Job 0: 3 workers (machine 0) and ceil(3/2) = 2 PSs (machine 1), external
    (b = 1), g = 1, tau = 0.5, F = 4: per sample 0.5 + 2 * 1 * gamma / 4 = 1.5 slots at gamma = 2, 2 samples per
    slot; at the actual ratio 3/2, 1.25, 2.4 per slot: V = 11 is reached in slot 5 (12 samples) as run, in slot 4
    (12.0) re-timed. Job 1: 2 workers with 2 PSs (one more than ceil(2/2)) on machine 2, internal, V = 4: slot 1
    either way."""
    from pdors.retime import retime

    inst = tiny_instance(
        [
            {"grad_mb": 1.0, "gamma": 2, "batch": 4, "samples": 11},
            {"grad_mb": 1.0, "gamma": 2, "batch": 4, "samples": 4},
        ],
        machines=3,
        slots=6,
    )
    s = Schedule.empty(inst)
    s.admitted[:] = True
    s.workers[:, 0, 0], s.servers[:, 0, 1] = 3, 2
    s.workers[:2, 1, 2], s.servers[:2, 1, 2] = 2, 2
    s.claimed_internal[:2, 1] = True
    s.claimed_completion[:] = [5, 1]
    r = retime(inst, s, validate(inst, s))
    u1 = validate(inst, s).utility[1]
    assert (r.running, r.extra_ps, r.extra_ps_jobs, r.below_gamma) == (8, 2, 1, 8)
    assert r.utility_nominal == pytest.approx(10 / (1 + np.exp(5.0)) + u1, rel=1e-12)
    assert r.utility_actual == pytest.approx(10 / (1 + np.exp(4.0)) + u1, rel=1e-12)
    assert (r.completed_nominal, r.completed_actual) == (2, 2)
    s.workers[:, 0, 0], s.servers[:, 0, 1] = 4, 2  # ratio exactly gamma: the two readings agree
    s.claimed_completion[0] = 4  # 4 / 1.5 per slot: 11 samples in slot 4
    r = retime(inst, s, validate(inst, s))
    assert r.below_gamma == 2 and r.utility_actual == r.utility_nominal
    s.servers[:, 0, 1] = 1  # too few PSs: no rate to re-time
    with pytest.raises(ValueError, match="not feasible"):
        retime(inst, s, validate(inst, s))
