"""`pdors ui`: the local store served by MLflow's app in one process (MLflow imported once), on the IPv6 loopback
where the machine has it (MLflow's UI then shows no Assistant; the browser test looks at the page)."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest
from realstack import BIN, end_session, session_pids, start, wait_healthy

from pipeline.publish import tracking


def test_the_ui_address_is_the_ipv6_loopback_else_127_0_0_1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(tracking.UI_PORT_ENV, "5123")
    assert tracking.ui_base("sqlite:///x.db") == "http://[::1]:5123"  # this machine has ::1
    assert tracking.ui_base("http://user:pw@10.0.0.5:5000") == "http://10.0.0.5:5000"  # a server: its own address

    class NoIPv6(socket.socket):
        def bind(self, address: object) -> None:
            if self.family == socket.AF_INET6:
                raise OSError("Cannot assign requested address")
            super().bind(address)

    monkeypatch.setattr(socket, "socket", NoIPv6)
    assert tracking.ui_host() == "127.0.0.1" and tracking.local_base(5000) == "http://127.0.0.1:5000"


@pytest.mark.slow
def test_pdors_ui_serves_the_store_from_one_process(netns: str, env: dict, tmp_path: Path) -> None:
    server = start(netns, env, tmp_path, BIN / "pdors", "ui", "--port", 5000)
    try:
        wait_healthy(netns, "http://[::1]:5000/health", server)
        assert session_pids(server.pid) == [server.pid]  # no `mlflow ui`, no uvicorn child, no job runner
        answer = subprocess.run(
            ["ip", "netns", "exec", netns, "curl", "-sf", "-X", "POST", "-H", "Content-Type: application/json",
             "-d", '{"max_results": 5}', "http://[::1]:5000/ajax-api/2.0/mlflow/experiments/search"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert [e["name"] for e in json.loads(answer)["experiments"]] == ["Default"]  # the test's own store
    finally:
        end_session(server, sig=2)  # Ctrl-C
    out = server.stdout.read() if server.stdout else ""
    assert out.splitlines()[1] == "http://[::1]:5000/#/experiments?workflowType=machine_learning", out
    assert server.returncode == 0 and all(len(line) <= 120 for line in out.splitlines()), out
