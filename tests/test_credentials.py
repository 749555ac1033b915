"""Credentials in a tracking URI: masked in every message and file, sent as MLflow's client sends them."""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
import yaml
from realstack import BIN

from pipeline.publish import tracking
from pipeline.text.credentials import redact, split_auth

SECRET = "S3cr3t-pw"
DEAD_URI = f"http://user:{SECRET}@127.0.0.1:9"  # port 9 (discard): nothing listens


@pytest.mark.parametrize(
    "text",
    [
        f"http://user:{SECRET}@127.0.0.1:9/api",
        f"postgresql://mlflow:{SECRET}@db:5432/x",
        f"see https://u:{SECRET}@host and s3://k:{SECRET}@bucket/p",
        f"http://u:a@b{SECRET}@h/x",
    ],
)
def test_redact_masks_userinfo_and_keeps_the_rest(text):
    masked = redact(text)
    assert SECRET not in masked and "***@" in masked
    assert redact("http://127.0.0.1:5000/health") == "http://127.0.0.1:5000/health"


class _Health(BaseHTTPRequestHandler):
    expected = "Basic " + base64.b64encode(f"user:{SECRET}".encode()).decode()

    def do_GET(self):
        ok = self.path == "/health" and self.headers.get("Authorization") == self.expected
        self.send_response(200 if ok else 401)
        self.end_headers()
        self.wfile.write(b"OK" if ok else b"")

    def log_message(self, *args):
        pass


def test_reachability_sends_basic_auth_from_the_uri_and_never_shows_it():
    server = HTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        tracking.check_reachable(f"http://user:{SECRET}@127.0.0.1:{port}")  # accepted, as MLflow accepts it
        with pytest.raises(ConnectionError) as wrong:
            tracking.check_reachable(f"http://user:wrong-{SECRET}@127.0.0.1:{port}")
        assert "401" in str(wrong.value) and SECRET not in str(wrong.value)
    finally:
        server.shutdown()
    assert split_auth(f"http://user:{SECRET}@127.0.0.1:{port}/x")[0] == f"http://127.0.0.1:{port}/x"
    with pytest.raises(ConnectionError) as bad_port:
        tracking.check_reachable(f"http://user:{SECRET}@127.0.0.1:port/")
    assert SECRET not in str(bad_port.value)


@pytest.mark.slow  # the integration tier: real sweeps, nightly and MLflow clients against a dead server
def test_no_command_prints_or_writes_the_password(tmp_path):
    """sweep run, sweep log and nightly with a dead server behind a URI with a password."""
    env = {**os.environ, "MLFLOW_TRACKING_URI": DEAD_URI, "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"}
    cfg = tmp_path / "secret.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "name": "secret",
                "instance": {"jobs": 3, "slots": 3, "machines": 3},
                "policies": {"fifo": {}},
                "seeds": [1],
            }
        )
    )
    out = tmp_path / "out"

    def pdors(*args) -> str:
        done = subprocess.run(
            [BIN / "pdors", *map(str, args)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
        return done.stdout + done.stderr

    ran = pdors("sweep", "run", cfg, "--out", out, "--in-process")
    assert "MLflow logging failed" in ran and "http://***@127.0.0.1:9" in ran, ran
    sid = ran.split("sweep ", 1)[1].split(":", 1)[0]
    logged = pdors("sweep", "log", sid, "--out", out)
    assert "unreachable" in logged, logged
    # no paper-scale instances: they run before MLflow and never read the tracking URI
    nightly = pdors(
        "nightly", "--fresh", "1", "--paper", "0", "--fig09", "0", "--time-limit", "2", "--out", tmp_path / "nightly"
    )
    assert "MLflow logging failed" in nightly, nightly
    for text in (ran, logged, nightly):
        assert SECRET not in text
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written and not [p for p in written if SECRET.encode() in p.read_bytes()]
