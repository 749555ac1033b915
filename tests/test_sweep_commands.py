"""``pdors sweep status|log|report CONFIG [KEY=VALUE ...]`` name the sweep ``pdors sweep run`` with the same
arguments named; CONFIG alone names the latest sweep of that config under the root."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sweep_fixtures import unwrapped

from pdors_cli.main import main
from pipeline.record import storage

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = str(ROOT / "configs" / "quickstart.yaml")
# quickstart made small enough for a test (one grid point, two cheap policies, tiny instances), no MLflow
SMALL = [
    "grid.machines=[4]",
    "grid.workload.mix=[[0.1,0.55,0.35]]",
    "instance.jobs=4",
    "instance.slots=4",
    "policies={fifo: {}, drf: {}}",
    "mlflow.enabled=false",
]


def test_status_log_report_take_runs_overrides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # `sweep log` logs to MLflow's default store, ./mlflow.db
    out = str(tmp_path / "R")
    assert main(["sweep", "run", QUICKSTART, *SMALL, "seeds.count=2", "--out", out, "--in-process"]) == 0
    first = capsys.readouterr().out.split("sweep ", 1)[1].split(":", 1)[0]
    for command in ("status", "report"):
        assert main(["sweep", command, QUICKSTART, *SMALL, "seeds.count=2", "--out", out]) == 0, command
        assert first in capsys.readouterr().out
    assert main(["sweep", "status", QUICKSTART, "--out", out]) == 0  # CONFIG alone: the latest of quickstart's
    text = capsys.readouterr().out
    assert f"naming the latest sweep of config 'quickstart': {first}" in text and "4 tasks, 4 ok" in text

    assert main(["sweep", "run", QUICKSTART, *SMALL, "seeds.count=1", "--out", out, "--in-process"]) == 0
    second = capsys.readouterr().out.split("sweep ", 1)[1].split(":", 1)[0]
    assert second != first
    assert main(["sweep", "status", QUICKSTART, "--out", out]) == 0
    text = capsys.readouterr().out
    assert f"latest sweep of config 'quickstart': {second}" in text and f"also under {out}: {first}" in text
    assert "2 tasks, 2 ok" in text
    assert main(["sweep", "status", QUICKSTART, *SMALL, "seeds.count=2", "--out", out]) == 0
    assert f"{first} ({out}): 4 tasks, 4 ok" in capsys.readouterr().out
    # sweep log takes the same arguments
    assert main(["sweep", "log", QUICKSTART, *SMALL, "seeds.count=1", "--out", out]) == 0

    # overrides that name a sweep that never ran, and overrides without a config: one line, exit 2
    assert main(["sweep", "status", QUICKSTART, *SMALL, "seeds.count=3", "--out", out]) == 2
    assert "has not run under" in capsys.readouterr().err
    assert main(["sweep", "status", first, "seeds.count=3", "--out", out]) == 2
    assert "overrides (seeds.count=3) apply only after a sweep config" in capsys.readouterr().err


def test_a_sweep_written_anywhere_is_found_by_list_and_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sweep run ... --out elsewhere`, then `sweep list` and `sweep status CONFIG OVERRIDES` without --out find
    it through the sweep index (pipeline/record/sweep_index.py), from another working directory."""
    monkeypatch.setenv("PDORS_RESULTS", str(tmp_path / "index"))
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    assert main(["sweep", "run", QUICKSTART, *SMALL, "seeds.count=2", "--out", str(elsewhere), "--in-process"]) == 0
    sweep_id = capsys.readouterr().out.split("sweep ", 1)[1].split(":", 1)[0]
    (tmp_path / "other").mkdir()
    monkeypatch.chdir(tmp_path / "other")
    assert main(["sweep", "list"]) == 0
    listed = unwrapped(capsys.readouterr().out)
    assert sweep_id in listed and str(elsewhere) in listed
    assert main(["sweep", "status", QUICKSTART, *SMALL, "seeds.count=2"]) == 0
    assert f"{sweep_id} ({elsewhere}): 4 tasks, 4 ok" in unwrapped(capsys.readouterr().out)
    assert (tmp_path / "index" / "sweep-roots.txt").read_text() == f"{elsewhere.resolve()}\n"


def test_status_without_a_target_names_the_latest_sweep_here_before_the_machines_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sweep status` alone: the latest sweep under results/ of the working directory, even when a sweep written
    later elsewhere is in the machine's index; that one only from a directory without sweeps; none: a hint."""
    monkeypatch.setenv("PDORS_RESULTS", str(tmp_path / "index"))
    for d in ("here", "empty"):
        (tmp_path / d).mkdir()
    monkeypatch.chdir(tmp_path / "empty")
    assert main(["sweep", "status"]) == 2
    assert "run one first: `pdors sweep run configs/quickstart.yaml`" in capsys.readouterr().err

    def run(*args: str) -> str:
        assert main(["sweep", "run", QUICKSTART, *SMALL, *args, "--in-process"]) == 0
        return capsys.readouterr().out.split("sweep ", 1)[1].split(":", 1)[0]

    monkeypatch.chdir(tmp_path / "here")
    here = run("seeds.count=1", "--out", "results/q")
    elsewhere = run("seeds.count=2", "--out", str(tmp_path / "elsewhere"))  # later, and in the index
    assert main(["sweep", "status"]) == 0
    assert f"{here} (results/q)" in unwrapped(capsys.readouterr().out)
    monkeypatch.chdir(tmp_path / "empty")
    assert main(["sweep", "status"]) == 0
    assert elsewhere in capsys.readouterr().out


def test_a_second_sweep_into_a_root_being_written_is_refused_before_it_writes(
    tmp_path: Path, mlflow_store: str
) -> None:
    """Sweeps under one root share its run record, so one writes at a time: a second sweep started while the
    first runs is refused with one line (exit 2) and writes nothing; started after it, it completes, and every
    run of both is recorded once."""
    out = tmp_path / "R"
    env = {**os.environ, "MLFLOW_TRACKING_URI": mlflow_store}
    pdors = [str(Path(sys.executable).parent / "pdors"), "sweep", "run", QUICKSTART, *SMALL]
    first = subprocess.Popen(
        [*pdors, "seeds.count=40", "instance.jobs=40", "instance.slots=30", "--out", str(out), "--in-process"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.time() + 120
        while not list((out / "sweeps").glob("*/manifest.json")):  # the first holds the root
            assert first.poll() is None and time.time() < deadline
            time.sleep(0.1)
        second = subprocess.run(
            [*pdors, "seeds.count=3", "--out", str(out), "--in-process"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert first.poll() is None, "the first sweep ended before the second started: make it longer"
    finally:
        log, _ = first.communicate(timeout=300)
    assert first.returncode == 0, log
    assert second.returncode == 2 and second.stderr.strip() == (
        f"pdors sweep: error: {out} is being written by another sweep; wait for it to finish"
    ), second.stderr
    assert len(list((out / "sweeps").iterdir())) == 1  # the second wrote no manifest, no config, no runs
    again = subprocess.run([*pdors, "seeds.count=3", "--out", str(out), "--in-process"], env=env, cwd=tmp_path)
    assert again.returncode == 0
    runs = storage.read(out, columns=["run_id", "seed"]).to_pandas()
    assert len(runs) == runs["run_id"].nunique() == 2 * 40 + 2 * 3  # other instance sizes: runs of their own
    assert len(list((out / "sweeps").iterdir())) == 2
