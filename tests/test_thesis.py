"""The thesis profile: its throughput model on a hand-worked job, the validator's (3.4) and (3.5), and every
policy either keeping those rules or being refused."""

import subprocess
import sys

import numpy as np
import pytest

from pdors import thesis
from pdors.config import ConfigError, build
from pdors.instance_io import from_dict, to_dict
from pdors.model import SENSITIVE, Cluster, Instance, Jobs
from pdors.policies import POLICIES, THESIS_POLICIES
from pdors.run import RunSpec, run
from pdors.schedule import Schedule
from pdors.validator import validate
from pdors.workload import WorkloadConfig, generate

# One job by hand: E = 2 epochs of K = 10 chunks x M = 30 mini-batches = 600 mini-batches; tau = 0.02 s,
# g = 50 MB, b^(e) = 100 Mbps = 12.5 MB/s, b^(i) = 40 b^(e) = 500 MB/s, B = 4 Gbps = 500 MB/s; 60 s slots.
# External mini-batch: 0.02 + 2 * 50 / 12.5 = 8.02 s, so 10 workers train 10 * 60 / 8.02 = 74.8130 per slot.
# Internal mini-batch: 0.02 + 2 * 50 / 500 = 0.22 s, so 10 workers train 10 * 60 / 0.22 = 2727.27 per slot.
# (3.4): external traffic 10 * 12.5 = 125 MB/s <= one PS's 500 MB/s; internal 10 * 500 = 5000 MB/s needs
# 10 PSs, and (3.5) allows at most 10.
EXTERNAL_PER_SLOT = 10 * 60 / 8.02
INTERNAL_PER_SLOT = 10 * 60 / 0.22


def _hand_instance() -> Instance:
    arrays = thesis.job_arrays(
        np.array([2]), np.array([30]), np.array([10]), np.array([50.0]), np.array([0.02]), np.array([100.0]), 40.0
    )
    jobs = Jobs(
        arrival=[0],
        **arrays,
        worker_demand=[(0, 1, 0, 0)],
        ps_demand=[(0, 1, 0, 0)],
        theta1=[10.0],
        theta2=[1.0],
        theta3=[0.0],
        sensitivity=[SENSITIVE],
    )
    return Instance(
        jobs=jobs,
        cluster=Cluster(np.tile([0.0, 20.0, 0.0, 0.0], (2, 1))),
        slots=3,
        ps_bandwidth=thesis.gbps_to_mb_per_slot([4.0]),
    )


def _hand_schedule(inst, internal_servers=10, external_servers=1):
    s = Schedule.empty(inst)
    s.admitted[:] = True
    s.workers[0, 0, 0], s.servers[0, 0, 1] = 10, external_servers  # slot 0: external
    s.workers[1, 0, 0], s.servers[1, 0, 0] = 10, internal_servers  # slot 1: internal
    s.claimed_internal[1, 0] = True
    s.claimed_completion[:] = [1]
    return s


def test_throughput_model_on_a_hand_worked_job():
    assert thesis.minibatches_per_slot(10, 0.02, 50.0, 100.0) == pytest.approx(74.81296758, rel=1e-9)
    assert thesis.minibatches_per_slot(10, 0.02, 50.0, 4000.0) == pytest.approx(2727.272727, rel=1e-9)
    inst = _hand_instance()
    assert inst.jobs.workload[0] == 600
    v = validate(inst, _hand_schedule(inst))
    assert v.violations == []
    assert v.samples[:2, 0] == pytest.approx([EXTERNAL_PER_SLOT, INTERNAL_PER_SLOT], rel=1e-12)
    assert list(v.internal[:2, 0]) == [False, True]
    assert v.completion[0] == 1  # 74.8 < 600 <= 74.8 + 2727.3


def test_validator_rejects_a_schedule_breaking_the_ps_bandwidth_rule():
    inst = _hand_instance()
    bad = _hand_schedule(inst, internal_servers=9)  # 9 PSs carry 4500 < 5000 MB/s
    assert {x.kind for x in validate(inst, bad).violations} == {"ps_bandwidth"}
    paper = Instance(jobs=inst.jobs, cluster=inst.cluster, slots=inst.slots)  # the paper's model has no (3.4)
    assert validate(paper, bad).violations == []


def test_validator_rejects_more_servers_than_workers():
    inst = _hand_instance()
    s = _hand_schedule(inst)
    s.workers[0, 0, 0], s.servers[0, 0, 1] = 2, 3  # 2 workers, 3 PSs: (3.4) holds, (3.5) does not
    assert {x.kind for x in validate(inst, s).violations} >= {"ps_over_workers"}
    assert "ps_bandwidth" not in {x.kind for x in validate(inst, s).violations}


def test_generated_thesis_instance_follows_section_4_1():
    inst = generate(WorkloadConfig(profile="thesis"), 4, 200, 50, 3)
    j = inst.jobs
    assert np.array_equal(j.batch, j.gamma) and j.batch.min() >= 5 and j.batch.max() <= 20
    minibatches = j.samples / j.batch
    assert np.all((minibatches >= 20) & (minibatches <= 40) & (minibatches == np.round(minibatches)))
    assert j.epochs.min() >= 50 and j.epochs.max() <= 150
    assert np.all(j.worker_demand[:, 1] == 0) and j.worker_demand[:, 2].min() >= 2
    B = inst.ps_bandwidth / thesis.MBPS_TO_MB_PER_SLOT / 1000.0
    assert B.min() >= 4.0 and B.max() <= 20.0
    assert from_dict(to_dict(inst)).ps_bandwidth.tolist() == inst.ps_bandwidth.tolist()


def test_paper_fields_are_refused_with_the_thesis_profile():
    with pytest.raises(ConfigError, match=r"workload\.epochs: not used with profile thesis"):
        build(RunSpec, {"workload": {"profile": "thesis", "epochs": [1, 2]}})


@pytest.mark.parametrize("policy", THESIS_POLICIES)
@pytest.mark.parametrize("ratio", [1.0, 10.0, 60.0])
def test_thesis_policies_give_schedules_the_validator_accepts(policy, ratio):
    spec = {
        "policy": policy,
        "machines": 8,
        "jobs": 15,
        "slots": 30,
        "seed": 2,
        "workload": {"profile": "thesis", "bandwidth_ratio": ratio},
    }
    result = run(spec)
    assert result.validation.violations == []
    assert result.summary.admitted > 0


def test_other_policies_are_refused_with_exit_2(tmp_path):
    refused = [p for p in POLICIES if p not in THESIS_POLICIES]
    assert refused
    for policy in refused:
        with pytest.raises(ConfigError, match=r"^policy: .*\(3\.4\)-\(3\.5\)"):
            build(RunSpec, {"policy": policy, "workload": {"profile": "thesis"}})
    config = tmp_path / "thesis.yaml"
    config.write_text("workload: {profile: thesis}\n")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pdors_cli.main",
            "simulate",
            "--policy",
            refused[0],
            "--config",
            str(config),
            "--json",
            str(tmp_path / "out.json"),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert "policy:" in out.stderr and "(3.4)-(3.5)" in out.stderr
    assert not (tmp_path / "out.json").exists()


def test_thesis_utility_is_one_over_one_plus_d_by_default_and_the_sigmoid_one_switch_away() -> None:
    thesis = generate(WorkloadConfig(profile="thesis"), 4, 6, 20, 3)
    sigmoid = generate(WorkloadConfig(profile="thesis", utility="sigmoid"), 4, 6, 20, 3)
    d = np.arange(5)
    assert np.allclose(thesis.jobs.utility_of(2, d), 1.0 / (1.0 + d))
    assert np.allclose(thesis.jobs.utility(np.full(6, 3)), 0.25)
    assert not np.allclose(sigmoid.jobs.utility_of(2, d), 1.0 / (1.0 + d))
    assert np.array_equal(thesis.jobs.workload, sigmoid.jobs.workload)  # only the utility moved
    assert np.array_equal(from_dict(to_dict(thesis)).jobs.utility_form, thesis.jobs.utility_form)
    old = to_dict(sigmoid)
    del old["jobs"]["utility_form"]  # a document written before the field: sigmoid utilities
    assert np.array_equal(from_dict(old).jobs.utility(d[:, None]), sigmoid.jobs.utility(d[:, None]))


def test_algorithm_4_as_printed_drops_3_5_and_its_schedules_validate() -> None:
    """With ``thesis_ps_rule: as_printed`` a co-located job may take more PSs than workers (steps 2-6 add PSs while
    w b^(i) > s B_i); the validator then accepts it, and the default still refuses it."""
    printed = generate(WorkloadConfig(profile="thesis", thesis_ps_rule="as_printed", bandwidth_ratio=60), 8, 20, 30, 2)
    assert not printed.ps_at_most_workers and from_dict(to_dict(printed)).ps_at_most_workers is False
    over = 0
    for policy in THESIS_POLICIES:
        result = run(RunSpec(policy=policy, machines=8, jobs=20, slots=30, seed=2), printed)
        assert result.summary.violations == []
        sched = result.simulation.schedule
        over += int((sched.servers.sum(axis=2) > sched.workers.sum(axis=2)).sum())
    assert over > 0  # the printed reading is exercised
    with pytest.raises(ConfigError, match="thesis_ps_rule"):
        build(WorkloadConfig, {"thesis_ps_rule": "as_printed"})
