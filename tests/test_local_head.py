"""``pdors ray up|down|status``: the persistent local head (pipeline.execute.local_head). Each test keeps the head's
state in a directory of its own (``PDORS_RAY_HOME``), so no other sweep on the machine finds this head, and stops
it before it ends."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest
from realstack import BIN, config

from pipeline.execute import local_head


@pytest.fixture
def home(monkeypatch):
    """A short private path (Ray's unix sockets live under it) set as PDORS_RAY_HOME; the head under it is stopped
    at the end whatever happened."""
    where = Path(tempfile.mkdtemp(prefix="pdr", dir="/tmp"))
    monkeypatch.setenv(local_head.HOME_ENV, str(where))
    yield where
    local_head.down(where)
    shutil.rmtree(where, ignore_errors=True)


def test_a_stale_head_file_is_not_a_head(home):
    """A head.json left by a head that died names an address nothing answers on: sweeps start a Ray of their own."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    (home / local_head.STATE).write_text(json.dumps({"address": f"127.0.0.1:{port}", "session": 1}))
    assert local_head.find(home) is None
    assert local_head.down(home) == 0  # session 1 (init's) is never taken for a head: no command line of ours
    assert not (home / local_head.STATE).exists()


def listeners(pids: list[int]) -> set[str]:
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout.splitlines()
    return {line.split()[3] for line in out if {int(p) for p in re.findall(r"pid=(\d+)", line)} & set(pids)}


@pytest.mark.slow
def test_up_sweeps_connect_to_the_head_and_down_leaves_nothing(home, tmp_path, monkeypatch):
    import pipeline
    from pipeline.sweep import SweepOptions

    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    pdors = [str(BIN / "pdors"), "ray"]
    assert subprocess.run([*pdors, "status"], capture_output=True).returncode == 1
    up = subprocess.run([*pdors, "up", "--num-cpus", "1"], capture_output=True, text=True)
    assert up.returncode == 0, up.stdout + up.stderr
    head = local_head.find(home)
    assert head is not None and head.address.startswith("127.0.0.1:")
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE(head.token.stat().st_mode) == 0o600
    assert head.token.read_text() not in up.stdout + up.stderr
    again = subprocess.run([*pdors, "up"], capture_output=True, text=True)
    assert again.returncode == 0 and "already up" in again.stdout and local_head.find(home) == head

    pids = local_head.session_pids(head.session)
    if os.geteuid() == 0:  # ss -p shows other processes' sockets to root only
        seen = listeners(pids)
        assert head.address.rsplit(":", 1)[1] in {ep.rsplit(":", 1)[1] for ep in seen}, seen
        outside = {ep for ep in seen if not ep.startswith(("127.", "[::ffff:127.", "[::1]"))}
        assert not outside, f"the head listens beyond loopback: {sorted(outside)}"

    cfg = config(tmp_path, "head", [4], [1, 2], {"fifo": {}})
    # as a user runs them: each sweep a fresh process, which finds the head without flags
    for n, out in enumerate(("first", "second")):
        cmd = [str(BIN / "pdors"), "sweep", "run", str(cfg), "--out", str(tmp_path / out), "mlflow.enabled=false"]
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0 and "ran 2 tasks" in done.stdout, done.stdout + done.stderr
        assert f"connecting to Ray (local head at {head.address})" in done.stdout, f"sweep {n} did not take the head"
    # in this process too, unless its Ray already runs without the head's token (read once per process): then the
    # sweep says so and starts a Ray of its own, never failing on the head
    from pipeline.execute import executor

    usable = executor.head_usable(head)  # before the sweep: starting a Ray of its own changes what Ray has read
    opts = SweepOptions(out=str(tmp_path / "here"), overrides=["mlflow.enabled=false"])
    result = pipeline.run_sweep(cfg, opts)
    assert result.status == 0 and result.ran == 2
    assert result.ray == ("head" if usable else "started"), result.ray
    # a sweep asking for its own CPUs starts a Ray of its own, as without a head
    own = pipeline.run_sweep(
        cfg, SweepOptions(out=str(tmp_path / "own"), num_cpus=1, overrides=["mlflow.enabled=false"])
    )
    assert own.status == 0 and own.ray == "started"
    assert local_head.find(home) == head  # still up after the sweeps

    down = subprocess.run([*pdors, "down"], capture_output=True, text=True)
    assert down.returncode == 0 and "stopped" in down.stdout, down.stdout + down.stderr
    assert not local_head.session_pids(head.session), "processes of the head survived `pdors ray down`"
    assert not _running_in(home), "a process still runs in the head's directory"
    assert local_head.find(home) is None
    assert subprocess.run([*pdors, "status"], capture_output=True).returncode == 1


def _running_in(where: Path) -> list[int]:
    """Processes with ``where`` on their command line."""
    found = []
    for path in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if str(where).encode() in path.read_bytes():
                found.append(int(path.parent.name))
        except OSError:
            continue
    return found
