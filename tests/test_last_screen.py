"""`make run`'s last screen fits a terminal of 120 columns: the quickstart config (every policy and both axes,
smaller instances and one seed fewer), logged to a real MLflow store, run as `make run` runs it (a fresh `pdors`
process, --out under the working directory); every line it prints (the plan, the headline table, the paths, the
MLflow lines and the URL) is at most 120 columns on standard output and on standard error (Ray's, the progress
bar's), no third-party warning reaches either, and the URL is whole on the last line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from realstack import end_session

from pipeline.text.screen import WIDTH, fit, shown

ROOT = Path(__file__).resolve().parents[1]


def test_fit_breaks_between_clauses_and_keeps_a_url_whole() -> None:
    line = "sweep x: " + "; ".join(f"clause {k} " + "w" * 30 for k in range(6))
    lines = fit(line).split("\n")
    assert len(lines) > 1 and all(len(w) <= WIDTH for w in lines) and lines[1].startswith("  clause")
    assert " ".join(w.strip() for w in lines) == line  # nothing lost, breaks only at spaces
    url = "http://127.0.0.1:5000/#/experiments/1/runs?viewStateShareKey=" + "k" * 80
    assert fit(url) == url and fit("short; line") == "short; line"


def test_fit_keeps_a_command_whole_to_copy() -> None:
    command = "`pdors sweep run " + "/very/long/path" * 8 + " --resume`"
    lines = fit("disk full; free space and continue with " + command).split("\n")
    assert lines[-1].strip() == command and all(len(x) <= 120 for x in lines[:-1])


def test_paths_under_the_working_directory_are_relative(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert shown(tmp_path / "out" / "x.parquet") == str(Path("out") / "x.parquet")
    assert shown("/nowhere/else") == "/nowhere/else"


@pytest.mark.slow
def test_quickstart_last_screen_fits_120_columns(tmp_path: Path, netns: str) -> None:
    """As `make run` runs it: a local Ray (in a loopback-only network namespace), Ray's token authentication left
    at its default (a token in a home of the test's own), both streams read apart."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env |= {"HOME": str(home), "PYTHONPATH": str(ROOT), "MLFLOW_TRACKING_URI": "sqlite:///mlflow.db"}
    argv = ["ip", "netns", "exec", netns, str(Path(sys.executable).parent / "pdors")]
    argv += ["sweep", "run", str(ROOT / "configs" / "quickstart.yaml")]
    argv += ["instance.jobs=8", "instance.slots=6", "seeds.count=2", "--out", "results/quickstart"]
    proc = subprocess.Popen(
        argv, cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        out, err = proc.communicate(timeout=900)
    finally:
        end_session(proc)
    assert proc.returncode == 0, out[-3000:] + err[-3000:]
    assert "Ray: local" in out, out
    for stream in (out, err):  # a carriage return starts a line on a terminal too
        assert [w for w in re.split(r"[\r\n]", stream) if len(w) > WIDTH] == [], stream
    assert not re.search(r"WARNING|Warning:", err), err  # no third-party warning the user cannot act on
    lines = out.rstrip("\n").split("\n")
    screen = "\n".join(lines)
    for policy in ("PD-ORS", "FIFO", "DRF", "Dorm", "OASiS"):
        assert policy in screen, screen
    assert "Parquet: results/quickstart/" in screen and "summary (every grid point): results/quickstart/" in screen
    assert lines[-2].startswith("MLflow comparison") and "pdors ui" in lines[-2], screen
    assert lines[-1].startswith("http://[::1]:5000/#/experiments/") and " " not in lines[-1], screen  # pdors ui
    assert lines[-1].endswith("&workflowType=machine_learning"), screen
