"""A sweep's local Ray, started on this machine's own network (not in a namespace): every TCP socket its processes
listen on is on loopback, and no metrics endpoint answers. The test only lists sockets (``ss``); it connects to
nothing but 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time

import pytest
from realstack import BIN, config, end_session, session_pids

pytestmark = pytest.mark.slow


def listeners(pids: set[int]) -> set[str]:
    """``address:port`` of the TCP listeners owned by ``pids``."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout.splitlines()
    return {line.split()[3] for line in out if {int(p) for p in re.findall(r"pid=(\d+)", line)} & pids}


def test_local_sweep_ray_listens_on_loopback_only(tmp_path, mlflow_store):
    if os.geteuid() != 0:
        pytest.skip("needs root to see other processes' sockets in ss -p")
    cfg = config(tmp_path, "loopback", [6, 8], [1, 2], {"pdors": {}}, jobs=12, slots=8)
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "MLFLOW_TRACKING_URI": mlflow_store}
    env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
    proc = subprocess.Popen(
        [BIN / "pdors", "sweep", "run", cfg, "--out", tmp_path / "out", "--num-cpus", "1"],
        env=env,
        cwd=tmp_path,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    seen: set[str] = set()
    answers: dict[str, str] = {}  # endpoint -> HTTP status of a plain request ("000": nothing HTTP answered)
    try:
        while proc.poll() is None:
            seen |= listeners(set(session_pids(proc.pid)))
            for ep in seen - answers.keys():
                port = ep.rsplit(":", 1)[1]
                curl = ["curl", "-s", "-m", "2", "-o", "/dev/null", "-w", "%{http_code}", f"http://127.0.0.1:{port}/"]
                answers[ep] = subprocess.run(curl, capture_output=True, text=True).stdout
            time.sleep(0.3)
        log = proc.stdout.read()
    finally:
        end_session(proc)
    assert proc.returncode == 0, log
    assert len(seen) >= 4, seen  # GCS, raylet, agents, workers were seen
    print("\nlistening during the sweep (HTTP status of a plain request):", json.dumps(answers, indent=1))
    outside = {ep for ep in seen if not ep.startswith(("127.", "[::ffff:127.", "[::1]"))}
    assert not outside, f"listening beyond loopback: {sorted(outside)}"
    assert set(answers.values()) <= {"401", "000"}, f"answers without the token (a metrics endpoint?): {answers}"


def test_a_local_sweep_leaves_no_ray_setting_in_the_callers_environment(tmp_path, monkeypatch):
    """The local Ray's settings (``pipeline.execute.executor.LOCAL_RAY_ENV``) reach Ray, not the caller's later
    subprocesses: a ``ray start`` that inherited RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 refused to join a cluster."""
    import pipeline
    from pipeline.execute.executor import LOCAL_RAY_ENV
    from pipeline.sweep import SweepOptions

    for key in LOCAL_RAY_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    cfg = config(tmp_path, "environ", [4], [1, 2], {"fifo": {}})
    opts = SweepOptions(out=str(tmp_path / "out"), num_cpus=1, overrides=["mlflow.enabled=false"])
    result = pipeline.run_sweep(cfg, opts)
    assert result.status == 0 and result.ran == 2 and result.stages["ray_start"] > 0
    assert not set(LOCAL_RAY_ENV) & set(os.environ), {k: os.environ[k] for k in set(LOCAL_RAY_ENV) & set(os.environ)}
