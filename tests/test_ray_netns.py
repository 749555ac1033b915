"""A Ray cluster across a real (virtual) network: three nodes, each in its own network namespace with its own
address on a bridge (tests/netlab.py), started with ``infra/ray-node.sh`` as docs/OPERATIONS.md tells a user,
token authentication on, the driver on the head. A sweep of a few hundred runs (OPT tasks among them):

* a worker node is SIGKILLed midway (every process in its namespace) and later a new node joins; the sweep
  finishes with every run recorded exactly once, each identical to the same sweep run locally;
* the head (with the driver) is SIGKILLed midway, the cluster restarted, ``--resume`` completes it.

Each test prints a JSON report: node addresses, the killed node, runs recorded, duplicates, lost, and the TCP
ports each node listened on. Traffic stays inside the lab's namespaces (a private /24 the host has no route to).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from netlab import Lab, host_has_no_route
from realstack import BIN, ROOT, end_session, in_netns_python, start

from pipeline.record import storage

pytestmark = pytest.mark.slow
INFRA = ROOT / "infra"
PORT = 6379  # the head's GCS port, as in docs/OPERATIONS.md
SEEDS = 40
NODE_ARGS = ["--block", "--num-cpus=1", "--object-store-memory=100000000"]
SWEEP = {
    "name": "netns",
    "instance": {"jobs": 6, "slots": 6},
    "policies": {"pdors": {}, "fifo": {}, "drf": {}, "dorm": {}},
    "grid": {"machines": [3, 4]},
    "seeds": {"start": 1, "count": SEEDS},
    "opt": {"solver": "highs", "time_limit": 30},
    "mlflow": {"enabled": False},
}
TASKS = 2 * SEEDS * 4 + 2 * SEEDS  # simulations + one OPT per instance
COMPARED = ["status", "schedule_digest", "total_utility"]
# Ray 2.60's gRPC servers (GCS, raylet, core workers, the agent's gRPC) bind [::] whatever the node address; every
# one of them checks the cluster token (docs/OPERATIONS.md). Nothing else may listen on a wildcard address.
GRPC_WILDCARD = ("gcs_server", "raylet", "ray::", "pdors")
REFUSED = {"401", "000"}  # an HTTP endpoint asks for the token; "000": not HTTP at all (gRPC, HTTP/2 only)
# One method of each service Ray 2.60's gRPC servers offer (an empty request is a valid one): a server answers
# UNIMPLEMENTED for another's methods, UNAUTHENTICATED for its own without the token, and not so with it.
GRPC_METHODS = (
    "/ray.rpc.NodeInfoGcsService/GetAllNodeInfo",
    "/ray.rpc.NodeManagerService/GetNodeStats",
    "/ray.rpc.ObjectManagerService/Pull",
    "/ray.rpc.CoreWorkerService/GetCoreWorkerStats",
    "/ray.rpc.LogService/ListLogs",
    "/ray.rpc.events.EventAggregatorService/AddEvents",
    "/ray.rpc.ReporterService/GetTraceback",
    "/ray.rpc.RayletDriver/ClusterInfo",
)
GRPC_PROBE = """
import json, os, sys, grpc
token = (("authorization", "Bearer " + os.environ["RAY_AUTH_TOKEN"]),)
out = {}
for endpoint in sys.argv[1:]:
    channel = grpc.insecure_channel(endpoint)
    for method in json.loads(os.environ["GRPC_METHODS"]):
        codes = []
        for metadata in ((), token):
            try:
                channel.unary_unary(method)(b"", timeout=5, metadata=metadata)
                codes.append("OK")
            except grpc.RpcError as e:
                codes.append(e.code().name)
        out.setdefault(endpoint, {})[method] = codes
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def sweep_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cfg") / "netns.yaml"
    path.write_text(yaml.safe_dump(SWEEP))
    return path


@pytest.fixture(scope="module")
def reference(sweep_config: Path, tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """The same sweep run locally, one run after another in one process (no Ray, no network)."""
    out = tmp_path_factory.mktemp("local") / "out"
    done = subprocess.run(
        [BIN / "pdors", "sweep", "run", sweep_config, "--out", out, "--in-process"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    runs = _runs(out)
    runs.attrs["root"] = str(out)  # check_against compares the jobs too
    return runs


@pytest.fixture
def lab() -> Iterator[Lab]:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 to create network namespaces, veth pairs and a bridge")
    lab = Lab(f"pdn{os.getpid() % 100000}")
    try:
        lab.create()
        yield lab
    finally:
        lab.remove()
    assert host_has_no_route()


@pytest.fixture
def ray_env(env: dict[str, str]) -> Iterator[dict[str, str]]:
    temp = tempfile.mkdtemp(prefix="pdn", dir="/tmp")  # short: it holds unix sockets; never the shared /tmp/ray
    yield {**env, "RAY_TEMP_DIR": temp, "RAY_PORT": str(PORT)}
    shutil.rmtree(temp, ignore_errors=True)


def _runs(out: Path) -> pd.DataFrame:
    runs: pd.DataFrame = storage.read(out).to_pandas()
    return runs.sort_values("run_id").reset_index(drop=True)


def _recorded(out: Path) -> int:
    try:
        return len(storage.index(out).status())
    except OSError:  # a file listed while compaction removes it
        return 0


def start_node(lab: Lab, env: dict[str, str], cwd: Path, name: str) -> subprocess.Popen[str]:
    """``RAY_NODE_IP=<its address> infra/ray-node.sh head|worker ...`` in node ``name``'s namespace."""
    role = ["head", "--include-dashboard=false"] if name == "head" else ["worker", f"{lab.addresses['head']}:{PORT}"]
    node_env = {**env, "RAY_NODE_IP": lab.addresses[name]}
    return start(lab.nodes[name], node_env, cwd, INFRA / "ray-node.sh", *role, *NODE_ARGS)


def wait_alive(lab: Lab, env: dict[str, str], count: int) -> list[str]:
    """The live nodes' addresses once ``count`` are alive (asked from the head's namespace)."""
    return sorted(
        in_netns_python(
            lab.nodes["head"],
            env,
            (
                "import json, time, ray\n"
                f"ray.init(address='{lab.addresses['head']}:{PORT}', logging_level='ERROR')\n"
                "alive = lambda: [n['NodeManagerAddress'] for n in ray.nodes() if n['Alive']]\n"
                "deadline = time.time() + 90\n"
                f"while len(alive()) != {count} and time.time() < deadline: time.sleep(0.5)\n"
                "print(json.dumps(alive()))\n"
            ),
            timeout=150,
        )
    )


def join(lab: Lab, env: dict[str, str], cwd: Path, name: str, alive: int) -> subprocess.Popen[str]:
    """Start node ``name`` (its namespace made already) and wait until ``alive`` nodes are; nodes join one at
    a time (two ``ray start`` at once in one temp dir can lose one of them)."""
    proc = start_node(lab, env, cwd, name)
    nodes = wait_alive(lab, env, alive)
    if proc.poll() is not None:
        pytest.fail(f"node {name} exited {proc.returncode}: {proc.stdout.read() if proc.stdout else ''}")
    assert lab.addresses[name] in nodes and len(nodes) == alive, (name, nodes)
    return proc


def driver(lab: Lab, env: dict[str, str], cwd: Path, config: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    address = f"{lab.addresses['head']}:{PORT}"
    return start(
        lab.nodes["head"],
        env,
        cwd,
        BIN / "pdors",
        "sweep",
        "run",
        config,
        "--out",
        out,
        "--ray-address",
        address,
        *extra,
    )


def wait_recorded(out: Path, proc: subprocess.Popen[str], at_least: int, timeout: float = 400) -> int:
    deadline = time.time() + timeout
    while (n := _recorded(out)) < at_least:
        assert proc.poll() is None, f"the sweep ended before {at_least} runs were recorded"
        assert time.time() < deadline, f"{n} runs recorded after {timeout:.0f} s"
        time.sleep(0.5)
    return n


def finish(proc: subprocess.Popen[str], timeout: float = 600) -> str:
    try:
        log, _ = proc.communicate(timeout=timeout)
    finally:
        end_session(proc)
    assert proc.returncode == 0, log
    return log


def check_against(out: Path, reference: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, int]]:
    """Every run recorded exactly once (no file holds a run twice, none is missing), each equal to the local run."""
    runs = _runs(out)
    raw = pd.read_parquet(out / "runs", columns=["run_id"])["run_id"]  # every row of every file, no dedupe
    duplicates = len(raw) - raw.nunique()
    lost = len(set(reference["run_id"]) - set(runs["run_id"])) + int((runs["status"] == "lost").sum())
    assert len(runs) == runs["run_id"].nunique() == len(reference) == TASKS
    assert duplicates == 0 and lost == 0
    assert (runs["kind"] == "opt").sum() == 2 * SEEDS and set(runs["status"]) == {"ok"}
    assert runs.loc[runs["kind"] == "sim", "schedule_digest"].notna().all()
    pd.testing.assert_frame_equal(runs[["run_id", *COMPARED]], reference[["run_id", *COMPARED]], check_exact=True)
    jobs, local = (
        storage.read(root, "jobs").to_pandas().sort_values(["run_id", "job"]).reset_index(drop=True)
        for root in (out, Path(reference.attrs["root"]))
    )
    assert len(jobs) > 0
    pd.testing.assert_frame_equal(jobs, local, check_exact=True)  # every job of every run, exactly
    return runs, {"runs_recorded": len(runs), "duplicates": duplicates, "lost": lost}


def status_by_node(lab: Lab, env: dict[str, str], cwd: Path, config: Path, out: Path) -> str:
    done = subprocess.run(
        ["ip", "netns", "exec", lab.nodes["head"], BIN / "pdors", "sweep", "status", config, "--out", out],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def exposure(lab: Lab, name: str, prober: str) -> dict[str, str]:
    """``process address:port`` of every listener of node ``name`` outside loopback -> the HTTP status a plain
    request from node ``prober`` (another machine) gets, "000" when nothing HTTP answers."""
    found = {}
    for entry in lab.listeners(name):
        program, endpoint = entry.split(" ")
        host, port = endpoint.rsplit(":", 1)
        if host.removeprefix("[::ffff:").startswith("127.") or host == "[::1]":
            continue
        assert host not in ("0.0.0.0", "*", "[::]") or program.startswith(GRPC_WILDCARD), f"wildcard: {entry}"
        target = f"{lab.addresses[name]}:{port}"
        curl = ["curl", "-s", "-m", "3", "-o", "/dev/null", "-w", "%{http_code}", f"http://{target}/"]
        found[entry] = subprocess.run(
            ["ip", "netns", "exec", lab.nodes[prober], *curl],
            capture_output=True,
            text=True,
        ).stdout
    return found


def grpc_answers(lab: Lab, env: dict[str, str], name: str, prober: str, exposed: dict[str, str]) -> dict[str, Any]:
    """For every listener of node ``name`` outside loopback that is not HTTP: each of ``GRPC_METHODS`` called
    from node ``prober`` without and with the cluster token -> the two gRPC status codes."""
    endpoints = [f"{lab.addresses[name]}:{e.rsplit(':', 1)[1]}" for e, code in exposed.items() if code == "000"]
    answers: dict[str, Any] = in_netns_python(
        lab.nodes[prober],
        {**env, "GRPC_METHODS": json.dumps(GRPC_METHODS)},
        GRPC_PROBE.replace("sys.argv[1:]", repr(endpoints)),
    )
    return answers


def assert_token_checked(answers: dict[str, Any]) -> None:
    """No call succeeds without the token, and each listener is a gRPC server that refuses one of its own
    methods without the token and serves it with the token (so the refusal is the token check's)."""
    for endpoint, calls in answers.items():
        if {c for pair in calls.values() for c in pair} == {"UNAVAILABLE"}:
            continue  # an idle worker that exited since it was listed: nothing answers there any more
        assert not [m for m, (bare, _) in calls.items() if bare == "OK"], (
            f"{endpoint} answers without the token: {calls}"
        )
        checked = [m for m, (bare, keyed) in calls.items() if bare == "UNAUTHENTICATED" and keyed != "UNAUTHENTICATED"]
        assert checked, f"{endpoint}: not one of Ray's token-checked gRPC servers: {calls}"


def report(name: str, data: dict[str, Any]) -> None:
    print(f"\n{name}: " + json.dumps(data, indent=1, sort_keys=True))


def test_worker_killed_and_new_node_joining_midway(
    lab: Lab, ray_env: dict[str, str], tmp_path: Path, sweep_config: Path, reference: pd.DataFrame
) -> None:
    procs: list[subprocess.Popen[str]] = []
    try:
        for host, name in enumerate(("head", "w1", "w2"), start=1):
            lab.add_node(name, host)
            procs.append(join(lab, ray_env, tmp_path, name, host))
        out = tmp_path / "out"
        sweep = driver(lab, ray_env, tmp_path, sweep_config, out)
        procs.append(sweep)
        wait_recorded(out, sweep, TASKS // 4)
        # w3 joins now and boots while the listeners are probed: started after the probes, under load it came up
        # when every run left was already leased to the other nodes, and ran nothing.
        lab.add_node("w3", 4)
        procs.append(start_node(lab, ray_env, tmp_path, "w3"))
        ports = {lab.addresses[n]: lab.listeners(n) for n in ("head", "w1", "w2")}
        seen = {n: exposure(lab, n, "w2") for n in ("head", "w1")}
        exposed = {**seen["head"], **seen["w1"]}
        grpc = {k: v for n in seen for k, v in grpc_answers(lab, ray_env, n, "w2", seen[n]).items()}
        killed_at = _recorded(out)
        killed = lab.kill("w1")  # the machine loses power: every process of the node at once
        log = finish(sweep)
        runs, counts = check_against(out, reference)
        by_node = runs.groupby("node_ip")["run_id"].count().to_dict()
        assert set(by_node) <= set(lab.addresses.values()) and len(by_node) >= 3, by_node
        assert by_node.get(lab.addresses["w3"], 0) > 0, f"the node that joined ran nothing: {by_node}"
        text = status_by_node(lab, ray_env, tmp_path, sweep_config, out)
        for ip, n in by_node.items():
            assert f"{ip}: {n} runs" in text, text
        assert "Ray:" in log
        report(
            "cluster across namespaces, a worker killed",
            {
                "nodes": lab.addresses,
                "killed": f"w1 ({lab.addresses['w1']}): {killed} processes SIGKILLed with {killed_at} runs recorded",
                "joined": f"w3 ({lab.addresses['w3']})",
                "runs_by_node": by_node,
                "listening": ports,
                "reached_from_w2": exposed,
                "grpc_from_w2": grpc,
                **counts,
            },
        )
        assert any(p.startswith("gcs_server") for p in exposed) and exposed, exposed
        assert set(exposed.values()) <= REFUSED, f"answers without the token: {exposed}"
        assert len(grpc) == list(exposed.values()).count("000"), grpc
        assert f"{lab.addresses['head']}:{PORT}" in grpc, grpc  # the GCS among them
        assert_token_checked(grpc)
        assert not [p for n in ports.values() for p in n if p.endswith((":44217", ":44227", ":8265"))], ports
    finally:
        for proc in reversed(procs):
            end_session(proc)


def test_head_and_driver_killed_cluster_restarted_resume_completes(
    lab: Lab, ray_env: dict[str, str], tmp_path: Path, sweep_config: Path, reference: pd.DataFrame
) -> None:
    procs: list[subprocess.Popen[str]] = []
    try:
        for host, name in enumerate(("head", "w1", "w2"), start=1):
            lab.add_node(name, host)
            procs.append(join(lab, ray_env, tmp_path, name, host))
        out = tmp_path / "out"
        sweep = driver(lab, ray_env, tmp_path, sweep_config, out)
        wait_recorded(out, sweep, TASKS // 3)
        killed = lab.kill("head")  # the head node and the driver on it
        sweep.wait()
        before = _recorded(out)
        assert 0 < before < TASKS
        for name in ("w1", "w2"):  # the rest of the cluster goes down with its head: restart it all
            lab.kill(name)
        for proc in procs:
            end_session(proc)
        procs = [join(lab, ray_env, tmp_path, name, alive) for alive, name in enumerate(("head", "w1", "w2"), 1)]
        resumed = driver(lab, ray_env, tmp_path, sweep_config, out, "--resume")
        procs.append(resumed)
        log = finish(resumed)
        assert f"{before} already recorded, {TASKS - before} to run" in log, log
        _, counts = check_against(out, reference)
        report(
            "cluster across namespaces, the head and driver killed",
            {
                "nodes": lab.addresses,
                "killed": f"head ({lab.addresses['head']}) with the driver: {killed} processes SIGKILLed",
                "recorded_before_resume": before,
                **counts,
            },
        )
    finally:
        for proc in reversed(procs):
            end_session(proc)
