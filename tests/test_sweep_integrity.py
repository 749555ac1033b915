"""A record that detects corruption, and a resume that says what it does.

Real sweeps in this process (``--in-process``), real Parquet files, a real bit flip: every record file carries
page CRCs and a SHA-256 beside it; ``sweep status`` names the damaged file and how many of the sweep's runs it
held, readers exit 1 naming the file and the repair command, and the repair recomputes exactly those runs.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sweep_fixtures import CONFIG_TEXT as CONFIG
from sweep_fixtures import sweep_id_of, unwrapped

from pdors_cli.main import main
from pipeline.record import storage
from pipeline.spec.columns import TIMING_COLUMNS


def utilities(root: Path) -> dict[str, float]:
    return {
        r["run_id"]: r["total_utility"] for r in storage.read(root, columns=["run_id", "total_utility"]).to_pylist()
    }


@pytest.fixture
def compacted(tmp_path: Path) -> tuple[Path, Path, dict[str, float]]:
    """Two sweeps under one root (the second adds a seed): the second's run compacts both batches into one
    file per table. Returns the config, the root and the clean utilities."""
    config = tmp_path / "tiny.yaml"
    config.write_text(CONFIG)
    out = tmp_path / "out"
    assert main(["sweep", "run", str(config), "--in-process", "--out", str(out)]) == 0
    assert main(["sweep", "run", str(config), "seeds.count=3", "--in-process", "--out", str(out)]) == 0
    assert len(list((out / "runs").glob("p*.parquet"))) == 1
    return config, out, utilities(out)


def test_every_record_file_has_page_checksums_and_a_digest(compacted: tuple[Path, Path, dict[str, float]]) -> None:
    _, out, _ = compacted
    for path in [*out.glob("runs/p*.parquet"), *out.glob("jobs/p*.parquet")]:
        assert storage.verify(path) is None
        assert storage.digest_path(path).read_text().strip() == storage._sha256(path)
        pq.read_table(path, page_checksum_verification=True)  # pages carry CRCs: this verifies them


@pytest.mark.parametrize("where", [0.5, 0.97])
def test_a_bit_flip_in_a_compacted_runs_file_is_detected_and_repaired(
    compacted: tuple[Path, Path, dict[str, float]], capsys: pytest.CaptureFixture[str], where: float
) -> None:
    config, out, clean = compacted
    (runs_file,) = out.glob("runs/p*.parquet")
    blob = bytearray(runs_file.read_bytes())
    blob[int(len(blob) * where)] ^= 0x10
    runs_file.write_bytes(bytes(blob))
    capsys.readouterr()

    sweep = sweep_id_of(config)  # the first sweep: 8 of the 12 runs in the damaged file are its own
    assert main(["sweep", "status", sweep, "--out", str(out)]) == 1
    said = unwrapped(capsys.readouterr().out)
    assert f"damaged: {runs_file} (" in said and "content does not match its SHA-256" in said, said
    assert re.search(r"\(12 runs, 8 of this sweep's\)|\(its runs unknown\)", said), said
    repair = re.search(r"repair: `([^`]+)`", said)
    assert repair is not None

    for command in (
        ["sweep", "report", sweep, "--out", str(out), "--no-mlflow"],
        ["sweep", "log", sweep, "--out", str(out)],
    ):
        assert main(command) == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"pdors sweep: error: {runs_file}: runs file content does not match") and "\n" not in err
        assert f"repair: `{repair.group(1)}`" in err

    assert main(shlex.split(repair.group(1))[1:]) == 0
    said = unwrapped(capsys.readouterr().out)
    assert (
        "8 tasks (8 simulations, 0 OPT) over machines; 0 already recorded, 8 to run (1 damaged batches set aside)"
        in said
    )
    assert main(["sweep", "status", sweep, "--out", str(out)]) == 0
    assert "records intact" in unwrapped(capsys.readouterr().out)
    repaired = utilities(out)
    assert all(repaired[r] == clean[r] for r in repaired) and len(repaired) == 8  # the 4 other runs: the other sweep's
    assert list(out.glob("runs/.damaged-*.parquet"))  # set aside, kept for inspection


def test_resume_applies_or_refuses_each_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "tiny.yaml"
    config.write_text(CONFIG)
    out = tmp_path / "out"
    meta = out / "sweeps" / sweep_id_of(config)
    assert main(["sweep", "run", str(config), "--in-process", "--out", str(out)]) == 0
    before = {name: (meta / name).read_bytes() for name in ("manifest.json", "config.yaml")}
    capsys.readouterr()

    assert main(["sweep", "run", str(config), "schedules=true", "--in-process", "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"pdors sweep: error: --resume: schedules is True, but sweep {meta.name} recorded False")
    assert "\n" not in err
    assert {name: (meta / name).read_bytes() for name in before} == before  # nothing claimed, nothing written

    args = ["mlflow.experiment=renamed", "--in-process", "--out", str(out), "--resume"]
    assert main(["sweep", "run", str(config), *args]) == 0
    assert "resuming with changed mlflow (recorded in the manifest)" in unwrapped(capsys.readouterr().out)
    manifest = storage.manifest_of(storage.Store(out, meta.name))
    assert manifest.experiment == "renamed" and manifest.config["mlflow"]["experiment"] == "renamed"
    assert manifest.resumed[0]["overrides"] == ["mlflow.experiment=renamed"]
    assert "experiment: renamed" in (meta / "config.yaml").read_text()


WHEN = {"node_id", "node_ip", "worker_pid", "started_at", "finished_at", "git_commit", "policy_stats"}
WHEN |= set(TIMING_COLUMNS)


def record(root: Path) -> dict[str, list[dict]]:
    """Every table of the record, rows sorted, without the columns that say when and where a run ran (timings
    in policy_stats included)."""
    out = {}
    for table in storage.TABLES:
        rows = [{k: v for k, v in r.items() if k not in WHEN} for r in storage.read(root, table).to_pylist()]
        out[table] = sorted(rows, key=lambda r: repr(sorted(r.items())))
    return out


@pytest.fixture(scope="module")
def scheduled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, list[dict]]]:
    """One sweep recording schedules, run once for the module; each test damages a copy."""
    base = tmp_path_factory.mktemp("scheduled")
    config = base / "tiny.yaml"
    config.write_text(CONFIG + "schedules: true\n")
    out = base / "out"
    assert main(["sweep", "run", str(config), "--in-process", "--out", str(out)]) == 0
    clean = record(out)
    assert all(clean[t] for t in storage.TABLES)
    return config, out, clean


def _flip(path: Path) -> None:
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0x10
    path.write_bytes(bytes(blob))


FAULTS = {
    "runs file deleted": lambda f: f["runs"].unlink(),  # issue 47: read "not run; records intact" before
    "jobs digest deleted": lambda f: storage.digest_path(f["jobs"]).unlink(),  # issue 47: read intact before
    "schedules digest altered": lambda f: storage.digest_path(f["schedules"]).write_text("0" * 64 + "\n"),
    "schedules file deleted": lambda f: f["schedules"].unlink(),
    "jobs file flipped": lambda f: _flip(f["jobs"]),
    "schedules file flipped": lambda f: _flip(f["schedules"]),
    "runs digest deleted": lambda f: storage.digest_path(f["runs"]).unlink(),
    "runs digest deleted, runs flipped": lambda f: (storage.digest_path(f["runs"]).unlink(), _flip(f["runs"])),
    "jobs digest deleted, jobs flipped": lambda f: (storage.digest_path(f["jobs"]).unlink(), _flip(f["jobs"])),
    "schedules digest deleted, flipped": lambda f: (
        storage.digest_path(f["schedules"]).unlink(),
        _flip(f["schedules"]),
    ),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_every_file_of_a_batch_is_checked_and_repaired(
    scheduled: tuple[Path, Path, dict[str, list[dict]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fault: str,
) -> None:
    """Each file a sweep wrote is listed with its digest: removing or altering any of them, or removing a
    digest, is damage that status names (exit 1) and a resume recomputes: the repaired record equals the clean
    one in every table and column (when and where a run ran aside)."""
    config, clean_out, clean = scheduled
    out = tmp_path / "out"
    shutil.copytree(clean_out, out)
    batch = {t: next((out / t).glob("p*.parquet")) for t in storage.TABLES}
    assert len({p.stem for p in batch.values()}) == 1  # one batch: every run is in the damaged one
    FAULTS[fault](batch)
    capsys.readouterr()

    sweep = sweep_id_of(config)
    assert main(["sweep", "status", sweep, "--out", str(out)]) == 1
    said = unwrapped(capsys.readouterr().out)
    assert f"damaged: {batch['runs']} (" in said and "1 damaged batches" in said, said
    assert main(["sweep", "report", sweep, "--out", str(out), "--no-mlflow"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"pdors sweep: error: {batch['runs']}: ") and "\n" not in err, err

    assert main(["sweep", "run", str(config), "--in-process", "--out", str(out), "--resume"]) == 0
    assert main(["sweep", "status", sweep, "--out", str(out)]) == 0
    said = unwrapped(capsys.readouterr().out)
    assert "records intact" in said and "older than digests" not in said, said
    assert record(out) == clean


def test_a_lock_file_planted_as_a_symlink_is_refused_and_its_target_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "tiny.yaml"
    config.write_text(CONFIG)
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("fifteen bytes!\n")
    (out / ".lock").symlink_to(victim)
    assert main(["sweep", "run", str(config), "--in-process", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err == f"pdors sweep: error: {out / '.lock'} is a symbolic link; a lock file must be a regular file (remove it)"
    )
    assert victim.read_text() == "fifteen bytes!\n"
    assert not (out / "runs").exists()
