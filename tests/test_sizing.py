"""The memory estimate against measured peak RSS of real runs, each in a fresh process: fitted on a few sizes
by the rule of pipeline/spec/sizing.py, it predicts a size it was not fitted on within 1.5x; it covers long horizons
and many resources (the issue-38 shapes), refusing them before anything is written; and the default limit
follows the machine's available memory and the runs at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdors import instance_io
from pdors.model import RESOURCES
from pdors.workload import WorkloadConfig, generate
from pdors_cli.main import main
from pipeline.spec import sizing
from pipeline.spec.sizing import Size

slow = pytest.mark.slow
UNSEEN = Size(term="cell", machines=600, jobs=600, slots=80)


@slow
def test_fit_on_small_sizes_predicts_a_larger_one_within_1_5x() -> None:
    fitted = [
        sizing.measure("fifo", Size(term=term, machines=h, jobs=i, slots=t))
        for term, h, i, t in [("base", 10, 10, 10), ("cell", 300, 300, 80), ("cell", 100, 100, 800)]
    ]
    model = sizing.fit(fitted)
    unseen = sizing.measure("fifo", UNSEEN)
    predicted = model.bytes(600, 600, 80)
    print(
        f"fit: base {model.base / 2**20:.1f} MiB, {model.per_cell:.2f} B/cell; 600x600x80: peak "
        f"{unseen.peak_bytes / 2**20:.1f} MiB, predicted {predicted / 2**20:.1f} MiB"
    )
    assert 1 / 1.5 <= predicted / unseen.peak_bytes <= 1.5
    shipped = sizing.run_bytes(600, 600, 80)  # the constants in the code, fitted on SIZES
    assert shipped >= unseen.peak_bytes / 1.5  # never far below: the estimate guards against running out


@slow
def test_shipped_constants_are_at_most_1_5x_above_a_larger_run() -> None:
    unseen = sizing.measure("fifo", UNSEEN)
    assert sizing.run_bytes(600, 600, 80) <= 1.5 * unseen.peak_bytes


@slow
@pytest.mark.parametrize(
    "size",
    [
        Size(term="job_slot", machines=1, jobs=30, slots=30_000),
        Size(term="resource_slot", machines=2, jobs=4, slots=2_000, resources=3_000),
        Size(term="resource", machines=3, jobs=4, slots=5, resources=100_000),
    ],
    ids=["long-horizon", "many-resources-per-slot", "many-resources"],
)
def test_shipped_constants_predict_shapes_they_were_not_fitted_on_within_1_5x(size: Size) -> None:
    # one estimate for every policy: it is held against the larger of the two policies' peaks
    peak = max(sizing.measure(policy, size).peak_bytes for policy in ("fifo", "pdors"))
    estimate = sizing.run_bytes(size.machines, size.jobs, size.slots, size.resources)
    print(f"{size}: peak {peak / 2**20:.1f} MiB, estimate {estimate / 2**20:.1f} MiB (x{estimate / peak:.2f})")
    assert 1 / 1.5 <= estimate / peak <= 1.5


def sample(term: str, h: int, i: int, t: int, r: int, peak: float) -> sizing.Sample:
    return sizing.Sample(
        policy="fifo", size=Size(term=term, machines=h, jobs=i, slots=t, resources=r), peak_bytes=int(peak)
    )


def test_fit_is_never_below_a_size_it_was_fitted_on() -> None:
    truth = sizing.Model(
        base=80e6, per_cell=7.0, per_slot=120.0, per_job_slot=85.0, per_resource_slot=20.0, per_resource=850.0
    )
    sizes = [
        ("base", 10, 10, 10, 4),
        ("cell", 300, 300, 80, 4),
        ("cell", 100, 100, 800, 4),
        ("slot", 1, 1, 200_000, 4),
        ("job_slot", 1, 10, 50_000, 4),
        ("resource_slot", 1, 2, 1_000, 5_000),
        ("resource", 1, 1, 10, 50_000),
    ]
    noise = [1.0, 1.1, 0.95, 0.9, 1.2, 1.0, 1.05]  # measured peaks scatter around any model
    samples = [sample(*s, truth.bytes(*s[1:]) * k) for s, k in zip(sizes, noise, strict=True)]
    model = sizing.fit(samples)
    assert all(model.bytes(*s[1:]) >= p.peak_bytes - 1 for s, p in zip(sizes, samples, strict=True))
    assert min(model.per_cell, model.per_slot, model.per_job_slot, model.per_resource_slot, model.per_resource) > 0
    empty = sizing.Model(
        base=samples[0].peak_bytes,
        per_cell=0.0,
        per_slot=0.0,
        per_job_slot=0.0,
        per_resource_slot=0.0,
        per_resource=0.0,
    )
    assert sizing.fit(samples[:1]) == empty


def test_generated_instances_have_the_resources_the_estimate_assumes() -> None:
    assert len(RESOURCES) == sizing.GENERATED_RESOURCES


def test_the_issue_s_long_horizon_and_many_resources_are_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # T = 50,000,000 with I = H = 1: 4.7 GB in issue 38 (estimate 0.66 GB); PD-ORS peaked at 11.6 GiB on this code
    assert sizing.run_bytes(1, 1, 50_000_000) >= 12_182_204 * 1024
    valid = instance_io.to_dict(generate(WorkloadConfig(), 1, 1, 5, seed=1))
    long = tmp_path / "long.json"
    long.write_text(json.dumps({**valid, "slots": 50_000_000}))
    out = tmp_path / "out" / "run.json"
    assert main(["simulate", "--instance", str(long), "--json", str(out), "--max-run-memory", "4.7"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pdors simulate: error: too large: H=1 I=1 T=50000000 needs about") and "\n" not in err
    assert not out.parent.exists()
    # the resources count: an instance of many resources is estimated with its own R
    wide = sizing.Size(term="resource", machines=3, jobs=4, slots=5, resources=200_000)
    file = sizing.instance_file(wide, tmp_path)
    need = sizing.run_bytes(3, 4, 5, 200_000)
    assert need > sizing.run_bytes(3, 4, 5) + 200_000 * 10
    assert (
        main(["simulate", "--instance", str(file), "--json", str(out), "--max-run-memory", f"{need / 2**30 * 0.99}"])
        == 2
    )
    assert capsys.readouterr().err.startswith("pdors simulate: error: too large: H=3 I=4 T=5 R=200000 needs about")
    assert not out.parent.exists()


def test_default_limit_is_the_machines_share_over_the_runs_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sizing, "available_bytes", lambda: 24 * 2**30)
    assert sizing.memory_problem(1000, 1000, 80, None) is None  # the issue's run, on a 24 GiB machine
    assert sizing.memory_problem(1000, 1000, 80, None, parallel=2) is None  # both cores busy
    refused = sizing.memory_problem(1000, 100000, 80, None)
    assert refused is not None and refused.startswith("H=1000 I=100000 T=80 needs about")
    assert "over the limit of 12.00 GB (50% of the 24.0 GB available over 1 run(s) at once" in refused
    assert sizing.memory_problem(1000, 1000, 80, None, parallel=24) is not None  # 0.5 GB each
    assert sizing.memory_problem(1000, 1000, 80, 0.5) is not None  # an explicit limit is kept
