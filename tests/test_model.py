import json

import numpy as np
import pytest
from tiny import tiny_instance

from pdors import instance_io
from pdors.config import ConfigError, build
from pdors.workload import WorkloadConfig, arrival_weights, generate


def test_generate_is_bit_reproducible_and_seed_sensitive():
    a = generate(WorkloadConfig(), 10, 40, 20, seed=7)
    b = generate(WorkloadConfig(), 10, 40, 20, seed=7)
    c = generate(WorkloadConfig(), 10, 40, 20, seed=8)
    assert json.dumps(instance_io.to_dict(a)) == json.dumps(instance_io.to_dict(b))
    assert not np.array_equal(a.jobs.samples, c.jobs.samples)


def test_generated_values_lie_in_the_paper_ranges():
    inst = generate(WorkloadConfig(workload_scale=1.0), 100, 2000, 20, seed=3)  # the literal Section V ranges
    j = inst.jobs
    assert j.epochs.min() >= 50 and j.epochs.max() <= 200
    assert j.samples.min() >= 20000 and j.samples.max() <= 500000
    assert j.gamma.min() >= 1 and j.gamma.max() <= 10 and j.batch.max() <= 200
    assert np.all(j.worker_demand[:, 0] <= 4) and np.all(j.ps_demand[:, 0] == 0)
    assert np.allclose(j.bw_internal / j.bw_external, 40.0)
    assert np.all(np.diff(j.arrival) >= 0), "jobs are numbered in arrival order"
    shares = np.bincount(j.sensitivity, minlength=3) / len(j)
    assert np.allclose(shares, [0.10, 0.55, 0.35], atol=0.03)
    critical = j.sensitivity == 2
    assert j.theta2[critical].min() >= 4 and j.theta2[critical].max() <= 6
    assert np.all(j.theta2[j.sensitivity == 0] == 0)
    assert np.allclose(inst.cluster.capacity[0], 18 * np.array([2, 5.5, 17, 7.5]))


def test_the_default_scale_shrinks_only_the_sample_counts():
    """The calibrated default (docs/MODEL.md, "Calibration") draws the same instance as the literal ranges
    (``workload_scale: 1``) except K_i, which it multiplies and rounds."""
    scale = WorkloadConfig().scale()
    assert 0 < scale < 1
    literal = instance_io.to_dict(generate(WorkloadConfig(workload_scale=1.0), 10, 40, 20, seed=7))
    default = instance_io.to_dict(generate(WorkloadConfig(), 10, 40, 20, seed=7))
    samples = np.array(literal["jobs"].pop("samples"))
    assert np.array_equal(default["jobs"].pop("samples"), np.maximum(1, np.round(samples * scale)))
    assert default == literal


def test_the_thesis_profile_keeps_its_own_sizes_by_default():
    """The calibration is the paper profile's: the thesis profile's default scale is its Section 4.1 sizes."""
    assert WorkloadConfig(profile="thesis").scale() == 1.0
    assert WorkloadConfig(profile="thesis", workload_scale=0.5).scale() == 0.5


def test_alternating_arrivals_weight_even_paper_slots_twice():
    w = arrival_weights(4, "alternating")
    assert np.allclose(w, np.array([1, 2, 1, 2]) / 6)
    inst = generate(WorkloadConfig(), 5, 6000, 10, seed=1)
    counts = np.bincount(inst.jobs.arrival, minlength=10)
    assert 1.8 < counts[1::2].sum() / counts[0::2].sum() < 2.2


def test_instance_json_round_trip_is_exact(tmp_path):
    inst = generate(WorkloadConfig(), 4, 12, 6, seed=11)
    instance_io.save(inst, tmp_path / "i.json")
    back = instance_io.load(tmp_path / "i.json")
    for name in ("arrival", "tau", "grad_mb", "bw_external", "worker_demand", "theta2"):
        assert np.array_equal(getattr(inst.jobs, name), getattr(back.jobs, name))
    assert np.array_equal(inst.cluster.capacity, back.cluster.capacity) and back.slots == 6


@pytest.mark.parametrize(
    "change, field",
    [
        ({"arrival": 5}, "jobs.arrival"),
        ({"gamma": 0}, "jobs.gamma"),
        ({"tau": -1.0}, "jobs.tau"),
        ({"theta2": -0.5}, "jobs.theta2"),
    ],
)
def test_invalid_instances_are_rejected_naming_the_field(change, field):
    with pytest.raises(ValueError, match=field):
        tiny_instance([change])


def test_instance_arrays_are_read_only():
    inst = tiny_instance([{}])
    with pytest.raises(ValueError):
        inst.jobs.tau[0] = 1.0


@pytest.mark.parametrize(
    "data, path",
    [
        ({"mix": [0.5, 0.5, 0.5]}, "mix"),
        ({"epochs": [10, 5]}, "epochs"),
        ({"bandwidth_ratio": "fast"}, "bandwidth_ratio"),
        ({"worker_demand": {"gpu": [0, 4], "cpu": [1, 10], "mem": [2, 32]}}, "worker_demand.storage"),
        ({"colour": 1}, "colour"),
    ],
)
def test_workload_config_errors_name_the_field(data, path):
    with pytest.raises(ConfigError) as e:
        build(WorkloadConfig, data)
    assert e.value.path == path


def test_config_error_inside_an_optional_section_names_the_field():
    from dataclasses import dataclass

    @dataclass
    class Inner:
        a: int = 1

    @dataclass
    class Outer:
        inner: Inner | None = None

    assert build(Outer, {"inner": None}).inner is None
    with pytest.raises(ConfigError) as e:
        build(Outer, {"inner": {"a": "x"}})
    assert e.value.path == "inner.a" and "integer" in e.value.reason
    with pytest.raises(ConfigError) as e:
        build(Outer, {"inner": {"b": 1}})
    assert e.value.path == "inner.b"
