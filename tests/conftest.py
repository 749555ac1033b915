"""Fixtures shared by the tests against real services (helpers in ``realstack.py``)."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile

import pytest

# The sweeps the tests run are indexed in a directory of their own, not the user's (pipeline/sweep_index.py);
# tests of the index set PDORS_RESULTS themselves.
os.environ["PDORS_RESULTS"] = tempfile.mkdtemp(prefix="pdors-test-index-")


@pytest.fixture(scope="module")
def netns():
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 to create a loopback-only network namespace")
    name = f"pdors-test-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


@pytest.fixture
def env(tmp_path):
    """A per-test Ray token (never ~/.ray), a per-test MLflow store, MLflow outages failing fast."""
    return {
        **os.environ,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(16),
        "RAY_USAGE_STATS_ENABLED": "0",
        "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/mlflow.db",
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
        "MLFLOW_HTTP_REQUEST_TIMEOUT": "20",
        "PYTHONUNBUFFERED": "1",
    }
