"""The team's MLflow stack, started here: a tracking server from ``infra/mlflow-local.sh`` whose backend store is
PostgreSQL (a throwaway cluster of Debian's ``postgresql``, run as the ``postgres`` user on 127.0.0.1) and whose
artifact store is S3 through moto's S3-compatible server on 127.0.0.1 (pure Python from PyPI, so ``pip`` installs
it with the test extras; MinIO's server is a binary no package registry ships), ``--serve-artifacts``, with the
settings of ``infra/mlflow-team.env``. Against it: a sweep logs parent, children, figures and tables (proxied
into the bucket); two sweeps and two ``sweep log`` at once; the server killed mid-log and ``sweep log`` completing
later; the nightly. Each test prints a JSON report. The database password is in a mode-600 file, never in argv.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from realstack import BIN, ROOT, end_session
from sweep_fixtures import unwrapped

from pipeline.publish import tracking
from pipeline.record import storage

pytestmark = pytest.mark.slow
INFRA = ROOT / "infra"


def team_settings() -> dict[str, str]:
    lines = (INFRA / "mlflow-team.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pg_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return found[-1].parent if found else None


def wait_http(url: str, proc: subprocess.Popen[str], timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except OSError:
            assert proc.poll() is None, f"{proc.args!r} exited: {proc.stdout.read() if proc.stdout else ''}"
            assert time.time() < deadline, f"{url} did not answer in {timeout:.0f} s"
            time.sleep(0.5)


@dataclass
class Stack:
    base: Path
    settings: dict[str, str]
    password: str
    s3_port: int
    mlflow_port: int
    server_env: dict[str, str]
    server: subprocess.Popen[str] | None = None
    logs: list[str] = field(default_factory=list)

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.mlflow_port}"

    def client_env(self) -> dict[str, str]:
        """A client's environment: the tracking URI only (no store credentials: the server proxies artifacts)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MLFLOW_"))}
        return {**env, "MLFLOW_TRACKING_URI": self.uri, "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1", "PYTHONUNBUFFERED": "1"}

    def start_server(self) -> None:
        self.server = subprocess.Popen(
            [INFRA / "mlflow-local.sh", str(self.mlflow_port), str(self.base / "mlflow")],
            env=self.server_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        wait_http(f"{self.uri}/health", self.server)
        argv = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in _session(self.server.pid)]
        assert argv and not [a for a in argv if self.password.encode() in a]  # never in a command line

    def kill_server(self) -> None:
        assert self.server is not None
        end_session(self.server, signal.SIGKILL)
        self.logs.append(self.server.stdout.read() if self.server.stdout else "")

    def pdors(self, *args: Any, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [BIN / "pdors", *map(str, args)],
            env=self.client_env(),
            cwd=self.base,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert self.password not in done.stdout + done.stderr
        return done

    def tracked(self, experiment: str) -> list[Any]:
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=self.uri)
        exp = client.get_experiment_by_name(experiment)
        return [] if exp is None else list(client.search_runs([exp.experiment_id], max_results=1000))


def _session(sid: int) -> list[int]:
    from realstack import session_pids

    return session_pids(sid)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    pg = pg_bin()
    if os.geteuid() != 0 or pg is None or not (BIN / "moto_server").exists():
        pytest.skip("needs root, PostgreSQL (make postgres) and moto[server] (the test extras)")
    settings = team_settings()
    base = tmp_path_factory.mktemp("team")
    pgdir = Path(tempfile.mkdtemp(prefix="pdpg"))  # the postgres user's: its data, socket and password file
    password, pg_port, s3_port = secrets.token_hex(16), free_port(), free_port()
    (pgdir / "pw").write_text(password + "\n")
    shutil.chown(pgdir, "postgres")
    shutil.chown(pgdir / "pw", "postgres")
    (pgdir / "pw").chmod(0o600)
    as_pg = ["runuser", "-u", "postgres", "--"]
    moto = None
    stack = None
    try:
        user = settings["MLFLOW_DB_USER"]
        subprocess.run(
            [*as_pg, pg / "initdb", "-D", pgdir / "data", "-U", user, "--auth=scram-sha-256", f"--pwfile={pgdir}/pw"],
            check=True,
            capture_output=True,
        )
        options = f"-h 127.0.0.1 -p {pg_port} -k {pgdir}"
        subprocess.run(
            [*as_pg, pg / "pg_ctl", "-D", pgdir / "data", "-l", pgdir / "log", "-w", "-o", options, "start"],
            check=True,
            capture_output=True,
        )
        pg_env = {**os.environ, "PGPASSWORD": password}
        subprocess.run(
            [pg / "createdb", "-h", "127.0.0.1", "-p", str(pg_port), "-U", user, settings["MLFLOW_DB_NAME"]],
            env=pg_env,
            check=True,
            capture_output=True,
        )
        moto = subprocess.Popen(
            [BIN / "moto_server", "-H", "127.0.0.1", "-p", str(s3_port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        wait_http(f"http://127.0.0.1:{s3_port}/", moto)
        s3_keys = {"AWS_ACCESS_KEY_ID": "pdors-test", "AWS_SECRET_ACCESS_KEY": secrets.token_hex(16)}
        _s3(s3_port, s3_keys).create_bucket(Bucket=settings["MLFLOW_S3_BUCKET"])
        uri_file = base / "mlflow-db"  # the backend URI with its password: a file only its owner reads
        uri_file.write_text(
            f"postgresql://{user}:{password}@127.0.0.1:{pg_port}/{settings['MLFLOW_DB_NAME']}\n", encoding="utf-8"
        )
        uri_file.chmod(0o600)
        server_env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")},
            **s3_keys,
            "MLFLOW_BACKEND_STORE_URI_FILE": str(uri_file),
            "MLFLOW_ARTIFACTS_DESTINATION": f"s3://{settings['MLFLOW_S3_BUCKET']}/{settings['MLFLOW_S3_PREFIX']}",
            "MLFLOW_S3_ENDPOINT_URL": f"http://127.0.0.1:{s3_port}",
        }
        stack = Stack(base, settings, password, s3_port, free_port(), server_env)
        stack.start_server()
        yield stack
        stack.kill_server()
        assert not [log for log in stack.logs if password in log]
    finally:
        if stack is not None and stack.server is not None:
            end_session(stack.server)
        if moto is not None:
            end_session(moto)
        subprocess.run([*as_pg, pg / "pg_ctl", "-D", pgdir / "data", "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(pgdir, ignore_errors=True)


def _s3(port: int, keys: dict[str, str]) -> Any:
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{port}",
        region_name="us-east-1",
        aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"],
    )


def sweep_config(base: Path, name: str, machines: list[int]) -> Path:
    path = base / f"{name}.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": name,
                "instance": {"jobs": 4, "slots": 4},
                "policies": {"pdors": {}, "fifo": {}},
                "grid": {"machines": machines},
                "seeds": [1, 2],
                "mlflow": {"experiment": f"team-{name}"},
            }
        )
    )
    return path


def counts(stack: Stack, experiment: str) -> dict[str, int]:
    """Parent runs (one per sweep id), children per parent, duplicates (a child key logged twice)."""
    runs = stack.tracked(experiment)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    kids = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    keys = [(r.data.tags["mlflow.parentRunId"], r.info.run_name) for r in kids]
    return {
        "parents": len(parents),
        "sweeps": len({r.data.tags.get("pdors.sweep_id") for r in parents}),
        "children": len(kids),
        "duplicates": len(keys)
        - len(set(keys))
        + len(parents)
        - len({r.data.tags.get("pdors.sweep_id") for r in parents}),
    }


def report(name: str, data: dict[str, Any]) -> None:
    print(f"\n{name}: " + json.dumps(data, indent=1, sort_keys=True))


def test_settings_agree_with_the_kubernetes_manifest_and_the_script() -> None:
    settings = team_settings()
    text = (INFRA / "k8s" / "mlflow.yaml").read_text()
    deployment = next(d for d in yaml.safe_load_all(text) if d and d["kind"] == "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--workers={settings['MLFLOW_SERVER_WORKERS']}" in args and "--serve-artifacts" in args
    assert f"s3://{settings['MLFLOW_S3_BUCKET']}/{settings['MLFLOW_S3_PREFIX']}" in text
    assert f"postgresql://{settings['MLFLOW_DB_USER']}:PASSWORD@" in text and f"/{settings['MLFLOW_DB_NAME']}" in text
    assert "--serve-artifacts" in (INFRA / "mlflow-local.sh").read_text()


def test_sweep_logs_parent_children_figures_and_tables_into_postgres_and_s3(stack: Stack) -> None:
    cfg = sweep_config(stack.base, "one", [4, 5])
    done = stack.pdors("sweep", "run", cfg, "--out", stack.base / "one", "--in-process")
    assert done.returncode == 0, done.stdout + done.stderr
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=stack.uri)
    runs = stack.tracked("team-one")
    [parent] = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert len(runs) == 1 + 4  # 2 machine counts x 2 policies
    top = {a.path for a in client.list_artifacts(parent.info.run_id)}
    figures = {a.path for a in client.list_artifacts(parent.info.run_id, "report")}
    assert {"summary.csv", "summary.md", "manifest.json", "report"} <= top and any(f.endswith(".png") for f in figures)
    keys = {k: stack.server_env[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    objects = _s3(stack.s3_port, keys).list_objects_v2(Bucket=stack.settings["MLFLOW_S3_BUCKET"])["Contents"]
    stored = [o["Key"] for o in objects]
    assert any(k.endswith("summary.csv") for k in stored) and any(k.endswith(".png") for k in stored)
    assert all(k.startswith(stack.settings["MLFLOW_S3_PREFIX"] + "/") for k in stored)
    report(
        "MLflow on PostgreSQL + S3: one sweep",
        {"server": stack.uri, "s3": f"127.0.0.1:{stack.s3_port}", "objects_in_bucket": len(stored)}
        | counts(stack, "team-one"),
    )


def test_two_sweeps_and_two_logs_at_once_and_a_server_killed_mid_log(stack: Stack) -> None:
    cfgs = {name: sweep_config(stack.base, name, machines) for name, machines in (("a", [4, 5]), ("b", [4, 6, 7]))}
    env = stack.client_env()
    first = stack.pdors("sweep", "run", cfgs["a"], "--out", stack.base / "a", "--in-process")
    assert first.returncode == 0, first.stdout + first.stderr
    procs = [
        subprocess.Popen(
            [BIN / "pdors", *map(str, args)],
            env=env,
            cwd=stack.base,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for args in (
            ["sweep", "run", cfgs["b"], "--out", stack.base / "b", "--in-process"],
            ["sweep", "run", cfgs["a"], "seeds=[3]", "--out", stack.base / "a3", "--in-process"],
            ["sweep", "log", cfgs["a"], "--out", stack.base / "a"],
            ["sweep", "log", cfgs["a"], "--out", stack.base / "a"],
        )
    ]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], outputs
    got_a, got_b = counts(stack, "team-a"), counts(stack, "team-b")
    assert got_a == {"parents": 2, "sweeps": 2, "children": 2 * 4, "duplicates": 0}, got_a
    assert got_b == {"parents": 1, "sweeps": 1, "children": 6, "duplicates": 0}, got_b

    # the server killed while `sweep log` logs a sweep of 12 children; logged again once it is back
    big = sweep_config(stack.base, "big", [4, 5, 6, 7, 8, 9])
    done = stack.pdors("sweep", "run", big, "mlflow.enabled=false", "--out", stack.base / "big", "--in-process")
    assert done.returncode == 0, done.stdout + done.stderr
    log = subprocess.Popen(
        [BIN / "pdors", "sweep", "log", big, "mlflow.enabled=false", "--out", stack.base / "big"],
        env=env,
        cwd=stack.base,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.time() + 120
    while not [r for r in stack.tracked("team-big") if "mlflow.parentRunId" in r.data.tags]:
        assert log.poll() is None and time.time() < deadline, log.stdout.read() if log.stdout else ""
        time.sleep(0.2)
    stack.kill_server()
    cut_off = unwrapped(log.communicate(timeout=300)[0])
    assert log.returncode == 3 and "re-log with `pdors sweep log" in cut_off, cut_off
    stack.start_server()
    partial = counts(stack, "team-big")
    # Whatever the kill's timing left, one point is left as a log killed right after creating its child leaves
    # it (created, RUNNING, no params or metrics): the re-log must complete that child, not skip it.
    record = storage.read(stack.base / "big").to_pandas()
    points = sorted(record["point_id"].unique())
    planted = _half_logged_child(stack, "team-big", points[0])
    again = stack.pdors("sweep", "log", big, "mlflow.enabled=false", "--out", stack.base / "big")
    assert again.returncode == 0, again.stdout + again.stderr
    final = counts(stack, "team-big")
    got = _children_against_record(stack, "team-big", record)
    config = yaml.safe_load(big.read_text())
    expected = len(config["policies"]) * len(config["grid"]["machines"])  # children: policies x grid points
    assert len(points) == expected, points
    assert final == {"parents": 1, "sweeps": 1, "children": expected, "duplicates": 0}, final
    lost = f"{got.lost} of {len(points)} children lost; unfinished {got.unfinished}; wrong {got.wrong}"
    assert got.lost == 0 and not got.wrong and not got.unfinished and not got.extra, f"{lost}; extra {got.extra}"
    assert planted in got.complete, (planted, got)
    # a log killed after a child's last batch, before it was marked finished: the next log marks it finished
    unmarked = _unfinished_child(stack, "team-big", points[1])
    third = stack.pdors("sweep", "log", big, "mlflow.enabled=false", "--out", stack.base / "big")
    assert third.returncode == 0, third.stdout + third.stderr
    again_got = _children_against_record(stack, "team-big", record)
    assert unmarked in again_got.complete and not again_got.unfinished and again_got.lost == 0, (unmarked, again_got)
    report(
        "MLflow on PostgreSQL + S3: concurrent sweeps and logs, server killed mid-log",
        {
            "concurrent": {"team-a": got_a, "team-b": got_b},
            "killed_mid_log": {"children_when_killed": partial["children"], "after_relog": final},
            "points_in_record": len(points),
            "lost": got.lost,
            "wrong": len(got.wrong),
        },
    )


@dataclass
class ChildCheck:
    """The children of a sweep's parent read back against its record: ``complete`` (run ids FINISHED with the
    point's params and metrics), ``lost`` (record points without such a child), ``wrong`` (point: what differs),
    ``unfinished`` (run ids not FINISHED), ``extra`` (children of no record point, or a point's second child)."""

    complete: list[str]
    lost: int
    wrong: dict[str, str]
    unfinished: list[str]
    extra: list[str]


def _half_logged_child(stack: Stack, experiment: str, point: str) -> str:
    """Leave ``point``'s child as a log killed right after ``create_run`` leaves it; its run id."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=stack.uri)
    runs = stack.tracked(experiment)
    [parent] = [r for r in runs if tracking.PARENT_TAG not in r.data.tags]
    for r in runs:
        if r.data.tags.get(tracking.POINT_TAG) == point:
            client.delete_run(r.info.run_id)
    tags = {
        tracking.PARENT_TAG: parent.info.run_id,
        tracking.SWEEP_TAG: parent.data.tags[tracking.SWEEP_TAG],
        tracking.POINT_TAG: point,
        tracking.LAYOUT_TAG: tracking.LAYOUT,
    }
    return str(client.create_run(parent.info.experiment_id, tags=tags).info.run_id)


def _unfinished_child(stack: Stack, experiment: str, point: str) -> str:
    """Leave ``point``'s child as a log killed after the child's last batch, before it was marked finished, leaves
    it (its content logged, RUNNING); its run id."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=stack.uri)
    [child] = [r for r in stack.tracked(experiment) if r.data.tags.get(tracking.POINT_TAG) == point]
    client.update_run(child.info.run_id, status="RUNNING")
    return str(child.info.run_id)


def _children_against_record(stack: Stack, experiment: str, record: Any) -> ChildCheck:
    runs = stack.tracked(experiment)
    children = [r for r in runs if tracking.PARENT_TAG in r.data.tags]
    by_point: dict[str, list[Any]] = {}
    for r in children:
        by_point.setdefault(r.data.tags.get(tracking.POINT_TAG, ""), []).append(r)
    complete, wrong, extra = [], {}, []
    for point, rows in record.groupby("point_id"):
        found = by_point.pop(str(point), [])
        extra += [r.info.run_id for r in found[1:]]
        if not found:
            continue
        child = found[0]
        seeds = ",".join(str(s) for s in sorted(rows["seed"]))
        ok = rows[rows["status"] == "ok"]
        want = {
            "policy": rows["policy"].iloc[0],
            "machines": str(rows["machines"].iloc[0]),
            "seeds": seeds,
            "n": float(len(ok)),
            "total_utility": tracking.shown(ok["total_utility"].mean()),
        }
        have = {
            "policy": child.data.params.get("policy"),
            "machines": child.data.params.get("machines"),
            "seeds": child.data.params.get("seeds"),
            "n": child.data.metrics.get("n"),
            "total_utility": child.data.metrics.get("total_utility"),
        }
        if child.info.status == "FINISHED" and have == want:
            complete.append(child.info.run_id)
        else:
            wrong[str(point)] = f"{child.info.status}: {have} != {want}"
    extra += [r.info.run_id for rest in by_point.values() for r in rest]
    return ChildCheck(
        complete=complete,
        lost=record["point_id"].nunique() - len(complete),
        wrong=wrong,
        unfinished=[r.info.run_id for r in children if r.info.status != "FINISHED"],
        extra=extra,
    )


def test_the_nightly_logs_its_run(stack: Stack) -> None:
    # the pinned set only: what is logged, not the paper-scale verdict (test_nightly.py runs that through the CLI)
    done = stack.pdors(
        "nightly",
        "--fresh",
        "0",
        "--paper",
        "0",
        "--fig09",
        "0",
        "--record-file",
        ROOT / "configs" / "nightly_record.json",
        "--out",
        stack.base / "nightly",
        timeout=900,
    )
    assert done.returncode == 0 and "**PASS**" in done.stdout, done.stdout + done.stderr
    [night] = stack.tracked("nightly-competitive-ratio")
    assert night.data.tags["result"] == "pass"
    report("MLflow on PostgreSQL + S3: the nightly", {"nightly_runs": 1, "result": night.data.tags["result"]})
