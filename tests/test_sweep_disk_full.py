"""A sweep cut off by a full disk at any byte resumes with the command it printed.

Writes are made to fail for real, with no mock: the sweep runs in a child process whose file size limit
(``RLIMIT_FSIZE``) makes every write past byte N of any file fail (``EFBIG``, handled as a full disk): N cuts
config.yaml (100), manifest.json (600), the Parquet batches (4096), the plots (20000). The printed
command is then run as printed, and the record must match a clean sweep's run for run.
"""

from __future__ import annotations

import re
import resource
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from sweep_fixtures import CONFIG_TEXT as CONFIG
from sweep_fixtures import sweep_id_of, unwrapped

from pdors_cli.main import main
from pipeline.record import storage


def limited(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def utilities(root: Path) -> dict[str, float]:
    runs = storage.read(root, columns=["run_id", "status", "total_utility"]).to_pylist()
    assert all(r["status"] == "ok" for r in runs)
    return {r["run_id"]: r["total_utility"] for r in runs}


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, float]]:
    base = tmp_path_factory.mktemp("ref")
    (base / "tiny.yaml").write_text(CONFIG)
    assert main(["sweep", "run", str(base / "tiny.yaml"), "--in-process", "--out", str(base / "out")]) == 0
    return base / "tiny.yaml", utilities(base / "out")


@pytest.mark.parametrize("limit", [100, 600, 4096, 20_000])
def test_disk_full_then_resume_by_the_printed_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reference: tuple[Path, dict[str, float]], limit: int
) -> None:
    config, clean = reference
    out = tmp_path / "out"
    cut = subprocess.run(
        [sys.executable, "-m", "pdors_cli.main", "sweep", "run", str(config), "--in-process", "--out", str(out)],
        preexec_fn=lambda: limited(limit),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cut.returncode == 4, (cut.stdout, cut.stderr)
    assert "Traceback" not in cut.stderr
    printed = re.search(r"disk full writing under .*continue with `([^`]+)`", unwrapped(cut.stdout))
    assert printed is not None, cut.stdout
    command = shlex.split(printed.group(1))
    assert command[:3] == ["pdors", "sweep", "run"] and "--resume" in command and "--in-process" in command
    assert not list(out.rglob(".tmp-*"))  # a failed write leaves no partial file
    manifest = out / "sweeps" / sweep_id_of(config) / "manifest.json"
    assert not manifest.exists() or manifest.read_text().rstrip().endswith("}")  # whole or absent
    assert main(command[1:]) == 0, capsys.readouterr()
    assert main(["sweep", "status", sweep_id_of(config), "--out", str(out)]) == 0
    assert "records intact" in capsys.readouterr().out
    assert utilities(out) == clean
