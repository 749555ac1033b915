"""Fixtures shared by the tests against real services (helpers in ``realstack.py``)."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

# The sweeps the tests run are indexed in a directory of their own, not the user's (pipeline/record/sweep_index.py);
# tests of the index set PDORS_RESULTS themselves.
os.environ["PDORS_RESULTS"] = tempfile.mkdtemp(prefix="pdors-test-index-")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules with integration tests (``slow``) first, each module kept whole (its module fixtures set up once):
    pytest-xdist's worksteal hands each worker a contiguous share and idle workers take from the end of the
    others' queues, so long tests started early leave short ones, not a two-minute test, for the end."""
    slow = {item.module for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.module not in slow)  # stable: the file order within each group


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


@pytest.fixture(scope="session")
def mlflow_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty MLflow SQLite store as MLflow creates it, made once per test process: its migrations cost about
    3 s of CPU, a copy of the file nothing."""
    from mlflow.tracking import MlflowClient

    path = tmp_path_factory.mktemp("mlflow-template") / "mlflow.db"
    MlflowClient(f"sqlite:///{path}").search_experiments()
    return path


@pytest.fixture
def mlflow_store(tmp_path: Path, mlflow_template: Path) -> str:
    """The tracking URI of a fresh MLflow store of this test's own (``tmp_path/mlflow.db``)."""
    shutil.copyfile(mlflow_template, tmp_path / "mlflow.db")
    return f"sqlite:///{tmp_path}/mlflow.db"


@pytest.fixture
def env(mlflow_store):
    """A per-test Ray token (never ~/.ray), a per-test MLflow store, MLflow outages failing fast."""
    return {
        **os.environ,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(16),
        "RAY_USAGE_STATS_ENABLED": "0",
        "MLFLOW_TRACKING_URI": mlflow_store,
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
        "MLFLOW_HTTP_REQUEST_TIMEOUT": "20",
        "PYTHONUNBUFFERED": "1",
    }
