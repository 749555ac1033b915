"""A run whose schedule the validator rejects is recorded ``invalid``, never ``ok``: left out of the headline
table, the summary and the figures (each says how many were), and the sweep exits 1 (issue 47, item 1)."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sweep_fixtures import unwrapped

from pdors_cli.main import main
from pipeline import load_runs

RUN = importlib.import_module("pdors.run")  # the module: ``pdors.run`` is the function
QUICKSTART = "configs/quickstart.yaml"
SMALL = ["seeds.count=1", "grid.machines=[10]", "mlflow.enabled=false", "instance.jobs=6", "instance.slots=6"]


def _drf_claims_a_false_completion(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planted fault: DRF's simulator claims job 0 finished in slot 0 (the validator recomputes and rejects)."""
    simulate = RUN.simulate

    def faulty(instance: Any, policy: Any, seed: int) -> Any:
        sim = simulate(instance, policy, seed)
        if type(policy).__module__.endswith(".drf"):
            claimed = np.array(sim.schedule.claimed_completion, copy=True)
            claimed[0] = 0 if claimed[0] != 0 else 1
            sim = dataclasses.replace(sim, schedule=dataclasses.replace(sim.schedule, claimed_completion=claimed))
        return sim

    monkeypatch.setattr(RUN, "simulate", faulty)


def test_a_rejected_schedule_is_recorded_invalid_and_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _drf_claims_a_false_completion(monkeypatch)
    out = str(tmp_path / "ws")
    assert main(["sweep", "run", QUICKSTART, *SMALL, "--in-process", "--out", out]) == 1
    said = capsys.readouterr().out
    runs: pd.DataFrame = load_runs(out)
    drf = runs[runs["policy"] == "drf"]
    assert len(drf) == 2 and set(drf["status"]) == {"invalid"}, drf[["status", "violations"]]
    assert (drf["violations"] > 0).all() and drf["error"].str.startswith("1 validator violation(s)").all()
    assert set(runs.loc[runs["policy"] != "drf", "status"]) == {"ok"}
    assert "2 invalid runs left out" in said and ", 2 invalid," in said
    headline = said[said.index("Total utility") : said.index("runs:")]
    assert "DRF" not in headline and "FIFO" in headline  # not ranked
    summary = next((tmp_path / "ws" / "sweeps").glob("*/summary.md")).read_text()
    assert "2 invalid runs left out" in summary
    report = next((tmp_path / "ws" / "sweeps").glob("*/report/quickstart.report.md")).read_text()
    assert "2 invalid runs left out" in report
    figure = pd.read_csv(next((tmp_path / "ws" / "sweeps").glob("*/report/total_utility.csv")))
    assert "drf" not in set(figure["policy"]) and "fifo" in set(figure["policy"])
    assert main(["sweep", "status", QUICKSTART, *SMALL, "--out", out]) == 0
    assert "8 ok, 0 failed, 2 invalid" in unwrapped(capsys.readouterr().out)


def test_the_overflowing_workload_of_the_issue_is_never_ranked_ok(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reproduction of issue 47: E x K x scale beyond int64 made negative workloads, 19-20 violations per run,
    exit 0 and a ranked table. Now the value is refused before anything is written."""
    out = tmp_path / "ws"
    for overrides in (
        ["instance.workload.workload_scale=1.0e+12"],
        [
            "instance.workload.epochs=[1000000,1000000]",
            "instance.workload.samples=[1000000000,1000000000]",
            "instance.workload.workload_scale=10000",
        ],
    ):
        code = main(["sweep", "run", QUICKSTART, "seeds.count=1", "grid.machines=[10]", "mlflow.enabled=false",
                     *overrides, "--in-process", "--out", str(out)])  # fmt: skip
        said = capsys.readouterr()
        assert code == 2, said
        assert not out.exists()
        line = said.err.strip()
        assert "\n" not in line and "instance.workload.workload_scale: the largest job workload" in line, line
