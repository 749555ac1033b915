"""The sweep pipeline against real parts: local Ray, a two-node Ray cluster, a real MLflow server, SIGKILL and
--resume. Everything runs inside a network namespace created here with only ``lo`` up, so every address Ray
or MLflow can use is loopback (Ray would otherwise rewrite 127.0.0.1 to the outward interface)."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
from realstack import (
    BIN,
    ROOT,
    config,
    end_session,
    in_netns_python,
    loopback_only,
    pdors,
    runs_of,
    session_pids,
    start,
    sweep_id,
    wait_healthy,
    wait_nodes,
)

from pipeline.record import storage
from pipeline.spec import columns

pytestmark = pytest.mark.slow


def file_states(out: Path) -> dict:
    """The runs files; a ``.tmp-*`` file a kill left mid-write is not one (pathlib's glob matches dotfiles)."""
    return {
        p.stem: (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in (out / "runs").glob("*.parquet")
        if not p.name.startswith(".")
    }


def recorded(out: Path) -> dict:
    """Recorded run -> its start time and worker (a recomputed run would differ); {} while a file it lists is
    being compacted away."""
    try:
        rows = storage.read(out, columns=["run_id", "started_at", "worker_pid"]).to_pylist()
    except OSError:
        return {}
    return {r["run_id"]: (r["started_at"], r["worker_pid"]) for r in rows}


def test_local_sweep_resume_and_parallelism(netns, env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an MLflow SQLite client creates ./mlruns
    cfg = config(tmp_path, "local", [4, 6], [1, 2])
    rc, log = pdors(netns, env, tmp_path, "sweep", "run", cfg, "--out", tmp_path / "a", "--max-parallel", "2")
    assert rc == 0, log
    assert "8 tasks (8 simulations, 0 OPT)" in log and "runs: 8 total, 8 ok, 0 failed, 0 invalid, 0 lost" in log
    sid = sweep_id(log)
    runs = runs_of(tmp_path / "a")
    assert len(runs) == runs["run_id"].nunique() == 8 and set(runs["status"]) == {"ok"}
    assert set(runs["node_ip"]) == {"127.0.0.1"}
    assert set(storage.Store(tmp_path / "a", sid).read().to_pandas()["run_id"]) == set(runs["run_id"])
    assert len(storage.read(tmp_path / "a", "jobs")) == 8 * 5
    meta = tmp_path / "a" / "sweeps" / sid
    assert (meta / "plots" / "total_utility.png").exists() and (meta / "summary.md").exists()

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=env["MLFLOW_TRACKING_URI"])
    exp = client.get_experiment_by_name("test-local")
    all_runs = client.search_runs([exp.experiment_id])
    parent = [
        r for r in all_runs if r.data.tags.get("pdors.sweep_id") == sid and "mlflow.parentRunId" not in r.data.tags
    ]
    children = [r for r in all_runs if r.data.tags.get("mlflow.parentRunId") == parent[0].info.run_id]
    assert len(parent) == 1 and len(children) == 4  # 2 machine counts x 2 policies
    assert all(c.data.metrics["n"] == 2 and "total_utility.std" in c.data.metrics for c in children)
    assert all(c.data.params["seeds"] == "1,2" for c in children)
    artifacts = {a.path for a in client.list_artifacts(parent[0].info.run_id)}
    assert artifacts >= {"config.yaml", "summary.csv", "report"} and not artifacts & {"plots", "comparison.csv"}

    before = file_states(tmp_path / "a")
    rc, log = pdors(netns, env, tmp_path, "sweep", "run", cfg, "--out", tmp_path / "a")
    assert rc == 0 and "8 already recorded, 0 to run" in log and "nothing to do" in log and "starting Ray" not in log
    assert "MLflow:" not in log  # published before, nothing changed since: no report, no MLflow logging
    rc, log = pdors(netns, env, tmp_path, "sweep", "run", cfg, "--out", tmp_path / "a", "--resume")
    assert rc == 0 and "8 already recorded, 0 to run" in log and "starting Ray" not in log
    assert file_states(tmp_path / "a") == before

    rc, log = pdors(netns, env, tmp_path, "sweep", "run", cfg, "--out", tmp_path / "b", "--max-parallel", "1")
    assert rc == 0, log
    keep = [c for c in runs.columns if c not in columns.TIMING_COLUMNS]
    pd.testing.assert_frame_equal(runs_of(tmp_path / "b")[keep], runs[keep])


def test_sigkill_then_resume_records_every_run_exactly_once(netns, env, tmp_path):
    # runs of ~0.5 s: records are flushed every 2 s, and runs of 0.05 s could all land in the first flush
    cfg = config(tmp_path, "kill", [8, 10], list(range(1, 17)), {"pdors": {}}, jobs=40, slots=20)
    out = tmp_path / "out"
    proc = start(netns, env, tmp_path, BIN / "pdors", "sweep", "run", cfg, "--out", out, "--max-parallel", "1")
    try:
        deadline = time.time() + 120
        while len(recorded(out)) < 3 and proc.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the sweep finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        end_session(proc, signal.SIGKILL)
    before = recorded(out)
    assert 3 <= len(before) < 32
    rc, log = pdors(netns, env, tmp_path, "sweep", "run", cfg, "--out", out, "--resume")
    assert rc == 0, log
    assert f"{len(before)} already recorded, {32 - len(before)} to run" in log
    after = recorded(out)
    assert {k: after[k] for k in before} == before  # nothing recorded before the kill was recomputed
    runs = runs_of(out)
    assert len(runs) == runs["run_id"].nunique() == 32 and set(runs["status"]) == {"ok"}  # none lost
    assert len(file_states(out)) == 1  # compacted
    assert not list(out.glob("*/.tmp-*"))


def test_two_node_cluster_on_loopback_survives_a_dead_worker(netns, env, tmp_path):
    port = 6390
    ray = BIN / "ray"
    # own temp dir (short: it holds unix sockets): `ray start` records its address there, not in the shared
    # /tmp/ray where any later address-less ray.init() on this machine would pick it up
    temp = tempfile.mkdtemp(prefix="pdray", dir="/tmp")
    common = ["--block", "--node-ip-address=127.0.0.1", "--num-cpus=1", "--disable-usage-stats", f"--temp-dir={temp}"]
    head = start(netns, env, tmp_path, ray, "start", "--head", f"--port={port}", "--include-dashboard=false", *common)
    node = None
    try:
        # the worker once the head is up: one `ray start` at a time in one temp dir, as test_ray_netns does
        assert wait_nodes(netns, env, f"127.0.0.1:{port}", 1) == ["127.0.0.1"]
        node = start(netns, env, tmp_path, ray, "start", f"--address=127.0.0.1:{port}", *common)
        nodes = wait_nodes(netns, env, f"127.0.0.1:{port}", 2)
        if nodes != ["127.0.0.1", "127.0.0.1"]:
            end_session(node)
            pytest.fail(f"the worker node did not join: {nodes}; its output: {node.stdout.read()[-3000:]}")
        # runs of ~1-2 s: with 0.1 s runs the head's already-leased worker can finish them all before the
        # second node's worker is up, and the sweep would (legitimately) use one node
        cfg = config(tmp_path, "cluster", [20, 30], [1, 2, 3, 4], {"pdors": {}, "fifo": {}}, jobs=40, slots=20)
        proc = start(
            netns,
            env,
            tmp_path,
            BIN / "pdors",
            "sweep",
            "run",
            cfg,
            "--out",
            tmp_path / "out",
            "--ray-address",
            f"127.0.0.1:{port}",
            "--max-parallel",
            "2",
        )
        killed = None
        try:  # SIGKILL a worker while it executes a run: Ray must retry that task
            deadline = time.time() + 120
            while killed is None and proc.poll() is None and time.time() < deadline:
                for pid in session_pids(head.pid) + session_pids(node.pid):
                    try:
                        title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
                    except OSError:
                        continue
                    if title.startswith(b"ray::execute"):
                        os.kill(pid, signal.SIGKILL)
                        killed = pid
                        break
                time.sleep(0.02)
            log, _ = proc.communicate(timeout=180)
        finally:
            end_session(proc)
        assert killed is not None, "no executing worker was seen"
        assert proc.returncode == 0, log
        assert f"Ray: 127.0.0.1:{port}, 2 node(s), 2 CPU(s)" in log
        runs = runs_of(tmp_path / "out")
        assert len(runs) == runs["run_id"].nunique() == 16 and set(runs["status"]) == {"ok"}
        assert runs["node_id"].nunique() == 2 and set(runs["node_ip"]) == {"127.0.0.1"}
        loopback_only(netns)  # no interface but lo, every TCP endpoint on 127.0.0.0/8
    finally:
        if node is not None:
            end_session(node)
        end_session(head)
        shutil.rmtree(temp, ignore_errors=True)


def test_mlflow_server_receives_sweeps_and_outage_loses_nothing(netns, env, tmp_path):
    port = 5055
    env = {**env, "MLFLOW_TRACKING_URI": f"http://127.0.0.1:{port}"}
    out = tmp_path / "out"
    first = config(tmp_path, "served", [4, 5], [1, 2])
    # in process: this test is MLflow's (Ray's are the others here)
    rc, log = pdors(netns, env, tmp_path, "sweep", "run", first, "--out", out, "--in-process")  # server down
    assert rc == 3 and "MLflow logging failed" in log and "runs: 8 total, 8 ok" in log, log
    outage_id = sweep_id(log)
    assert len(runs_of(out)) == 8
    backend = tmp_path / "backend-uri"  # the store URI from a file: on no command line
    backend.write_text(f"sqlite:///{tmp_path}/from-file.db\n")
    server = start(
        netns,
        {**env, "MLFLOW_BACKEND_STORE_URI_FILE": str(backend)},
        tmp_path,
        ROOT / "infra" / "mlflow-local.sh",
        port,
        tmp_path / "server",
    )
    try:
        wait_healthy(netns, f"http://127.0.0.1:{port}/health", server)
        assert (tmp_path / "from-file.db").exists()
        assert not [
            pid for pid in session_pids(server.pid) if b"from-file" in Path(f"/proc/{pid}/cmdline").read_bytes()
        ]
        # two loggers at once, on a sweep never logged: one parent, one child per (grid point, policy)
        loggers = [
            start(netns, env, tmp_path, BIN / "pdors", "sweep", "log", outage_id, "--out", out) for _ in range(2)
        ]
        try:
            logs = [p.communicate(timeout=240)[0] for p in loggers]
        finally:
            for p in loggers:
                end_session(p)
        assert [p.returncode for p in loggers] == [0, 0] and all("with 4 child runs" in lg for lg in logs), logs
        live = config(tmp_path, "served", [4, 5], [3])
        rc, log = pdors(netns, env, tmp_path, "sweep", "run", live, "--out", out, "--in-process")
        assert rc == 0 and "with 4 child runs" in log, log
        live_id = sweep_id(log)
        counts = in_netns_python(
            netns,
            env,
            (
                "import json\nfrom mlflow.tracking import MlflowClient\n"
                "c = MlflowClient()\nexp = c.get_experiment_by_name('test-served')\n"
                "runs = c.search_runs([exp.experiment_id])\nout = {}\n"
                "for p in [r for r in runs if r.data.tags.get('pdors.role') == 'sweep']:\n"
                "    kids = [r for r in runs if r.data.tags.get('mlflow.parentRunId') == p.info.run_id]\n"
                "    out[p.data.tags['pdors.sweep_id']] = [len(kids), sorted({k.data.metrics['n'] for k in kids}),\n"
                "        sorted((k.data.params['policy'], k.data.params['machines']) for k in kids),\n"
                "        sorted({key for k in kids for key in k.data.params\n"
                "                if key.startswith(k.data.params['policy'])}),\n"
                "        sorted({k.data.params['jobs'] + '/' + k.data.params['slots'] for k in kids})]\n"
                "print(json.dumps(out))\n"
            ),
        )
        points = [["fifo", "4"], ["fifo", "5"], ["pdors", "4"], ["pdors", "5"]]
        assert {sid: [*c[:3], c[4]] for sid, c in counts.items()} == {
            outage_id: [4, [2.0], points, ["5/5"]],
            live_id: [4, [1.0], points, ["5/5"]],
        }
        assert "pdors.rounding.gain" in counts[outage_id][3]  # every policy parameter is a param
    finally:
        end_session(server)
    assert server.returncode is not None
