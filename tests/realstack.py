"""Helpers for tests against real services (Ray clusters, MLflow servers) kept on loopback.

Every process runs inside a network namespace created by the ``netns`` fixture with only ``lo`` up, so every
address Ray or MLflow can use is loopback (Ray would otherwise rewrite 127.0.0.1 to the outward interface).
Processes are started in their own session and stopped by session id. The fixtures ``netns`` and ``env``
are in ``conftest.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

from pipeline.record import storage

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def session_pids(sid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # after "(comm)": state ppid pgrp session; zombies are dead
            out.append(int(stat.parent.name))
    return out


def end_session(proc: subprocess.Popen, sig=signal.SIGTERM, grace: float = 20) -> None:
    """Stop a process started with start_new_session and everything it spawned (Ray daemons, workers)."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    deadline = time.time() + 10
    while (left := session_pids(proc.pid)) and time.time() < deadline:
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
    assert not session_pids(proc.pid), "processes of the test's session survived"


def start(netns: str, env: dict, cwd: Path, *cmd) -> subprocess.Popen:
    return subprocess.Popen(
        ["ip", "netns", "exec", netns, *map(str, cmd)],
        env=env,
        cwd=cwd,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def pdors(netns, env, cwd, *args, timeout=240) -> tuple[int, str]:
    proc = start(netns, env, cwd, BIN / "pdors", *args)
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        end_session(proc)
    return proc.returncode, out


def in_netns_python(netns, env, code: str, timeout=90):
    out = subprocess.run(
        ["ip", "netns", "exec", netns, sys.executable, "-c", code],
        env=env,
        text=True,
        capture_output=True,
        timeout=timeout,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def wait_healthy(netns: str, url: str, server: subprocess.Popen, timeout: float = 120) -> None:
    """Poll ``url`` from inside the namespace until it answers (an MLflow server's /health)."""
    deadline = time.time() + timeout
    while subprocess.run(["ip", "netns", "exec", netns, "curl", "-sf", url], capture_output=True).returncode:
        assert server.poll() is None, f"server exited early: {server.stdout.read()}"
        assert time.time() < deadline, f"{url} did not become healthy in {timeout:.0f} s"
        time.sleep(0.5)


def wait_nodes(netns: str, env: dict, address: str, count: int) -> list[str]:
    """The addresses of the live nodes once ``count`` have joined the cluster at ``address`` (60 s at most)."""
    return in_netns_python(
        netns,
        env,
        (
            "import json, time, ray\n"
            f"ray.init(address='{address}', logging_level='ERROR')\n"
            "deadline = time.time() + 60\n"
            f"while len([n for n in ray.nodes() if n['Alive']]) < {count} and time.time() < deadline: time.sleep(0.5)\n"
            "print(json.dumps([n['NodeManagerAddress'] for n in ray.nodes() if n['Alive']]))\n"
        ),
    )


def loopback_only(netns: str) -> None:
    """Assert the namespace has no interface but ``lo`` and every TCP endpoint in it is loopback or wildcard."""
    links = subprocess.run(["ip", "-n", netns, "-o", "link"], capture_output=True, text=True).stdout
    assert [line.split(":")[1].strip() for line in links.splitlines()] == ["lo"]
    sockets = subprocess.run(
        ["ip", "netns", "exec", netns, "ss", "-tanH"], capture_output=True, text=True
    ).stdout.split("\n")
    endpoints = [ep.rsplit(":", 1)[0] for line in sockets if line for ep in line.split()[3:5]]
    assert endpoints and all(
        ep.startswith(("127.", "[::ffff:127.", "0.0.0.0", "*", "[::1]", "[::]")) for ep in endpoints
    ), endpoints


def config(tmp_path: Path, name: str, machines, seeds, policies=None, jobs=5, slots=5) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": name,
                "instance": {"jobs": jobs, "slots": slots},
                "policies": policies or {"pdors": {}, "fifo": {}},
                "grid": {"machines": machines},
                "seeds": seeds,
                "mlflow": {"experiment": f"test-{name}"},
            }
        )
    )
    return path


def sweep_id(output: str) -> str:
    return output.split("sweep ", 1)[1].split(":", 1)[0]


def runs_of(out: Path) -> pd.DataFrame:
    return storage.read(out).to_pandas().sort_values("run_id").reset_index(drop=True)
