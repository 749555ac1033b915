"""The public API of the three packages (README.md, "In a notebook"): what a user imports without knowing module
paths, on a real sweep recorded in Parquet (in this process, no MLflow)."""

from __future__ import annotations

import dataclasses
import json

from sweep_fixtures import TINY, unwrapped, write_config

import pdors
import pipeline
from offline_opt import compare, solve
from pipeline.sweep import SweepOptions


def test_pdors_runs_validates_and_lists_its_policies():
    spec = pdors.RunSpec(policy="fifo", machines=4, jobs=5, slots=5, seed=3)
    result = pdors.run(spec)
    assert isinstance(result.summary, pdors.RunSummary) and "pdors" in pdors.POLICIES
    again = pdors.validate(result.instance, result.simulation.schedule)
    assert again.ok and again.total_utility == result.summary.total_utility
    assert isinstance(pdors.generate(pdors.WorkloadConfig(), 4, 5, 5, 3), pdors.Instance)
    assert callable(solve) and callable(compare)


def test_load_runs_gives_the_rows_sweep_status_counts(tmp_path, capsys):
    config = write_config(tmp_path / "tiny.yaml", {**TINY, "mlflow": {"enabled": False}})
    root = tmp_path / "out"
    result = pipeline.run_sweep(config, SweepOptions(out=str(root), in_process=True))
    assert capsys.readouterr() == ("", "")  # a library call prints nothing unless given a progress callback
    assert (
        result.status == 0 and result.tasks == result.to_run == result.ran == 12
    )  # pdors 2 H x 2 gains x 2 seeds, fifo 2 x 2
    assert result.failed == result.lost == 0 and result.stages["runs"] > 0 and result.stages["report"] > 0
    json.dumps(dataclasses.asdict(result), default=str)  # plain data: a hook holding the result made this recurse
    runs = pipeline.load_runs(root)
    assert len(runs) == 12 and runs["run_id"].is_unique and set(runs["status"]) == {"ok"}
    # the same sweep again recomputes and republishes nothing (no --resume needed): the record holds each run once
    lines: list[str] = []
    again = pipeline.run_sweep(config, SweepOptions(out=str(root), in_process=True), lines.append)
    assert again.status == 0 and again.to_run == again.ran == 0 and len(pipeline.load_runs(root)) == 12
    assert again.stages["report"] == 0 and any(line.startswith("nothing to do") for line in lines), lines
    # a second sweep in the same process: its own counts and stages, nothing carried over from the first
    other = write_config(tmp_path / "other.yaml", {**TINY, "name": "other", "mlflow": {"enabled": False}})
    second = pipeline.run_sweep(other, SweepOptions(out=str(tmp_path / "out2"), in_process=True))
    assert second.status == 0 and second.ran == 12 and second.sweep_id != result.sweep_id
    assert second.stages["report"] > 0 and capsys.readouterr() == ("", "")
    from pipeline.sweep import status

    assert status(None, str(root)) == 0
    assert "12 tasks, 12 ok, 0 failed, 0 invalid, 0 lost" in unwrapped(capsys.readouterr().out)
    jobs = pipeline.load_jobs(root)
    assert set(jobs["run_id"]) == set(runs["run_id"]) and len(jobs) == 12 * TINY["instance"]["jobs"]
