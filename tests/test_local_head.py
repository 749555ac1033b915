"""``pdors ray up|down|status``: the persistent local head (pipeline.execute.local_head). Each test keeps the head's
state in a directory of its own (``PDORS_RAY_HOME``), so no other sweep on the machine finds this head, and stops
it before it ends."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from realstack import BIN, ROOT, config, runs_of

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


def _runners(head: local_head.Head) -> set[int]:
    """The head's processes that are reused sweep workers (Ray titles them ``ray::Runner``)."""
    found = set()
    for pid in local_head.session_pids(head.session):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::Runner"):
                found.add(pid)
    return found


def _settled(head: local_head.Head, n: int, timeout: float = 60) -> set[int]:
    """The head's ``n`` reused workers once there are ``n`` (a restart takes a moment)."""
    deadline = time.monotonic() + timeout
    while len(found := _runners(head)) != n and time.monotonic() < deadline:
        time.sleep(0.2)
    return found


DIES = """\
import os

from mine_pool.policy import Greedy


class Dies(Greedy):
    \"\"\"Ends its worker process at its first decision.\"\"\"

    def allocate(self, view):
        os._exit(3)
"""

# A plain task needing every CPU of the head, submitted by another driver while the pool is up: the pool's actors
# hold no CPU, so it is scheduled (with num_cpus=1 each they would hold both and it would wait forever)
ALL_CPUS = """\
from pipeline.execute import executor, local_head

executor.connect(None, None, local_head.find())
import ray

print("available", ray.available_resources().get("CPU"))
print("ran", ray.get(ray.remote(num_cpus=2)(lambda: 1).remote(), timeout=60))
"""


# A sweep's fan-out interrupted (Ctrl-C) while its run hangs, in a driver that stays alive (a notebook): the worker
# running it is stopped (Ray restarts it), as a job's tasks are when its driver shuts Ray down
INTERRUPTED = """\
import sys, time
from pipeline.execute import executor, local_head
from pipeline.spec import grid, schema

cluster = executor.connect(None, None, local_head.find())
try:
    list(executor.fan_out(grid.expand(schema.load(sys.argv[1])).tasks, cluster, None))
except KeyboardInterrupt:
    print("interrupted", flush=True)
time.sleep(60)
"""


@pytest.mark.slow
def test_sweeps_on_the_head_reuse_its_workers_with_fresh_code_and_the_faults_of_tasks(home, tmp_path, monkeypatch):
    """Reused workers (pipeline.execute.pool): a second sweep runs on the first one's worker processes; a planted
    source file gives new ones, the old ended; a run that kills its worker comes back lost and the rest of the
    sweep is recorded, the pool restarted; run_time_limit stops a hanging run; a killed sweep's hanging run does
    not keep a worker, nor does an interrupted one's in a process that lives on; two sweeps at once both finish;
    other drivers' tasks needing every CPU still run; a sweep on a Ray of its own uses tasks; ``down`` leaves
    nothing."""
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    head, _ = local_head.up(2, home)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}  # the driver finds mine_pool there, the head's workers by cwd

    def sweep(cfg: Path, out: str, *more: str) -> tuple[subprocess.CompletedProcess[str], set[int]]:
        cmd = [str(BIN / "pdors"), "sweep", "run", str(cfg), "--out", str(tmp_path / out), "mlflow.enabled=false"]
        done = subprocess.run([*cmd, *more], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
        assert done.returncode in (0, 1), done.stdout + done.stderr
        return done, set(runs_of(tmp_path / out)["worker_pid"].dropna().astype(int))

    fifo = config(tmp_path, "pool", [4, 5], [1, 2, 3, 4], {"fifo": {}})
    done, ran = sweep(fifo, "a")
    first = _runners(head)
    assert len(first) == 2 and ran <= first, (ran, first, done.stdout)
    done, ran = sweep(fifo, "b")
    assert "connected in" in done.stdout and ran <= first and _runners(head) == first, (ran, first)
    others = subprocess.run(
        [sys.executable, "-c", ALL_CPUS], capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path
    )
    assert "available 2.0" in others.stdout and "ran 1" in others.stdout, others.stdout + others.stderr

    # a source edit, planted in a module that exists (a new module would be missing from the architecture map
    # for a test running meanwhile); its bytes are put back
    edited = ROOT / "pipeline" / "execute" / "pool.py"
    source = edited.read_bytes()
    try:
        edited.write_bytes(source + b"# planted by test_local_head: a source edit\n")
        _, ran = sweep(fifo, "c")
    finally:
        edited.write_bytes(source)
    fresh = _runners(head)
    assert len(fresh) == 2 and not fresh & first and ran <= fresh, (first, fresh, ran)

    package = tmp_path / "mine_pool"
    shutil.copytree(ROOT / "examples" / "pdors-greedy" / "src" / "pdors_greedy", package)
    (package / "dies.py").write_text(DIES)
    faults = config(
        tmp_path, "faults", [4], [1, 2], {"fifo": {}, "mine_pool.broken:Hangs": {}, "mine_pool.dies:Dies": {}}
    )
    faults.write_text(faults.read_text() + "run_time_limit: 2\n")
    done, _ = sweep(faults, "f")
    runs = runs_of(tmp_path / "f").set_index("policy")
    assert runs.loc["fifo", "status"].tolist() == ["ok", "ok"], done.stdout
    assert runs.loc["mine_pool.broken:Hangs", "status"].tolist() == ["failed", "failed"]
    assert all(e.startswith("RunTimeLimit") for e in runs.loc["mine_pool.broken:Hangs", "error"])
    assert runs.loc["mine_pool.dies:Dies", "status"].tolist() == ["lost", "lost"], done.stdout
    assert len(_settled(head, 2)) == 2  # restarted after the deaths

    # a sweep killed while its run hangs (no time limit): the worker running it ends with it, the next sweep runs
    hang = config(tmp_path, "hang", [4], [1], {"mine_pool.broken:Hangs": {}})
    cmd = [str(BIN / "pdors"), "sweep", "run", str(hang), "--out", str(tmp_path / "h"), "mlflow.enabled=false"]
    driver = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not _running_chunk(head) and time.monotonic() < deadline and driver.poll() is None:
        time.sleep(0.1)
    busy = _running_chunk(head)
    assert busy, "no reused worker was seen running the hanging run"
    driver.kill()
    driver.wait()
    deadline = time.monotonic() + 30
    while busy & _runners(head) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not busy & _runners(head), "the killed sweep's hanging run still holds its worker"
    done, _ = sweep(fifo, "d")
    assert "ran 8 tasks" in done.stdout, done.stdout
    before = _runners(head)
    notebook = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED, str(hang)], cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not _running_chunk(head) and time.monotonic() < deadline:
            time.sleep(0.1)
        notebook.send_signal(signal.SIGINT)  # Ctrl-C
        assert notebook.stdout is not None and notebook.stdout.readline() == "interrupted\n"
        deadline = time.monotonic() + 30
        while (before & _running_chunk(head) or len(_runners(head)) != 2) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert notebook.poll() is None and not _running_chunk(head), "an interrupted sweep's run still holds a worker"
    finally:
        notebook.kill()
        notebook.wait()
    # two sweeps at once share the workers: both finish, every run recorded once
    cmd = [str(BIN / "pdors"), "sweep", "run", str(fifo), "mlflow.enabled=false", "--out"]
    both = [subprocess.Popen([*cmd, str(tmp_path / o)], cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)
            for o in ("x", "y")]  # fmt: skip
    assert [p.wait(timeout=600) for p in both] == [0, 0]
    assert all(len(runs_of(tmp_path / o)) == 8 for o in ("x", "y"))

    pool = _runners(head)
    _, ran = sweep(fifo, "own", "--num-cpus", "1")  # a Ray of its own: tasks, never the head's workers
    assert not ran & pool

    assert local_head.down(home) and not _runners(head) and not local_head.session_pids(head.session)


def _running_chunk(head: local_head.Head) -> set[int]:
    """The head's reused workers running a chunk now (Ray titles them ``ray::Runner.run`` meanwhile)."""
    found = set()
    for pid in _runners(head):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::Runner.run"):
                found.add(pid)
    return found
