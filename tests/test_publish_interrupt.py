"""A real SIGINT (Ctrl-C) while a sweep publishes: the record is kept whole, the sweep says how to publish later,
and that command publishes it. The headline table is on screen before the figures are drawn."""

from __future__ import annotations

import re
import signal
import subprocess
import time

import pytest
from realstack import BIN, config, end_session

pytestmark = pytest.mark.slow


def interrupt_at(cfg, out, env, cwd, prefix, check=lambda proc: None):
    """``pdors sweep run CFG --in-process`` in a session of its own, sent SIGINT at the first line starting with
    ``prefix`` (after ``check(proc)``); returns the process and every line it printed, once it has ended."""
    proc = subprocess.Popen(
        [BIN / "pdors", "sweep", "run", cfg, "--in-process", "--out", out],
        env=env,
        cwd=cwd,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    lines = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith(prefix):
                check(proc)
                proc.send_signal(signal.SIGINT)
                break
        lines += proc.stdout.read().splitlines()
        proc.wait(120)
    except BaseException:
        end_session(proc)  # nothing of a failed test's session left running
        raise
    return proc, lines


def test_ctrl_c_while_publishing_keeps_the_record_and_says_how_to_publish(tmp_path, env):
    cfg = config(tmp_path, "interrupt", [4, 6], [1, 2], {"pdors": {}, "fifo": {}})
    out = tmp_path / "out"
    proc, lines = interrupt_at(cfg, out, env, tmp_path, "drawing the report's figures")
    end_session(proc)
    text = "\n".join(lines)
    assert proc.returncode == 130, text
    assert text.index("Total utility against PD-ORS") < text.index("drawing the report's figures"), text
    assert "interrupted while publishing: every run is recorded and kept" in text, text
    assert all(len(line) <= 120 for line in lines), [line for line in lines if len(line) > 120]
    publish = re.search(r"publish later with `([^`]+)`", text)
    assert publish is not None, text
    status = subprocess.run(
        [BIN / "pdors", "sweep", "status", "--out", out], env=env, cwd=tmp_path, text=True, capture_output=True
    )
    assert status.returncode == 0 and "8 ok, 0 failed, 0 invalid, 0 lost, 0 not run" in " ".join(status.stdout.split())
    argv = publish.group(1).split()
    assert argv[:3] == ["pdors", "sweep", "log"]
    later = subprocess.run([BIN / "pdors", *argv[1:]], env=env, cwd=tmp_path, text=True, capture_output=True)
    assert later.returncode == 0, later.stdout + later.stderr
    assert "MLflow: experiment 'test-interrupt'" in later.stdout and (out / "sweeps").exists()


def test_ctrl_c_during_the_runs_ends_the_logging_process_started_ahead(tmp_path, env):
    """MLflow's process starts before the runs (its imports overlap them): a Ctrl-C during the runs ends it with
    the sweep, which says how to continue; nothing of the session is left running."""
    from realstack import session_pids

    cfg = config(tmp_path, "ahead", [4, 6], [1, 2, 3, 4], {"pdors": {}, "fifo": {}})

    def logging_process_started(proc: subprocess.Popen[str]) -> None:
        assert len(session_pids(proc.pid)) >= 2, "no logging process started ahead of the runs"

    proc, lines = interrupt_at(cfg, tmp_path / "out", env, tmp_path, "running in this process", logging_process_started)
    try:
        deadline = time.monotonic() + 30  # multiprocessing's resource tracker ends when it reads the sweep's exit
        while (left := session_pids(proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        end_session(proc)
    text = "\n".join(lines)
    assert proc.returncode == 130 and "interrupted: finished runs are recorded; continue with" in " ".join(text.split())
    assert not left, f"left running: {left}"
