"""Issue 47's holes in the record's guarantees, each a reproduction that failed before its fix.

Real sweeps in this process (``--in-process``), real Parquet, a real second process compacting: nothing outside
the output root is touched whatever links it holds, a reader never sees part of the record while another process
compacts it, every loss is named and repaired, the published mark reveals nothing, and Ray's token stays private.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from sweep_fixtures import CONFIG_TEXT as CONFIG
from sweep_fixtures import sweep_id_of, unwrapped

import pdors.version
from pdors_cli.main import main
from pipeline import sweep
from pipeline.execute import executor
from pipeline.publish import publish_run
from pipeline.record import storage
from pipeline.record.provenance import git_commit

INFRA = Path(__file__).resolve().parent.parent / "infra"


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry under ``root``: a file's bytes, a link's target, a directory's mode."""
    out: dict[str, bytes | str] = {}
    for p in sorted(root.rglob("*")):
        key = str(p.relative_to(root))
        out[key] = os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else oct(p.stat().st_mode)
    return out


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(CONFIG)
    return path


@pytest.mark.parametrize("table", ["runs", "jobs", "schedules", "sweeps"])
def test_a_linked_record_directory_is_refused_and_nothing_outside_the_root_is_touched(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str
) -> None:
    """Before: compaction removed every foreign ``*.parquet`` a linked jobs/schedules directory held, the lock's
    clean-up its ``.tmp-*`` files, and set_aside renamed a foreign runs file to ``.damaged-*``."""
    out, outside = tmp_path / "out", tmp_path / "outside"
    outside.mkdir()
    for name in ("keep.parquet", "p00000000000000000001.parquet", ".tmp-keep", "_keep.parquet.sha256"):
        (outside / name).write_bytes(b"not yours\n")
    out.mkdir()
    (out / table).symlink_to(outside, target_is_directory=True)
    before = snapshot(outside)
    capsys.readouterr()
    assert main(["sweep", "run", str(config), "--in-process", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"pdors sweep: error: {out / table} is a symbolic link; the record's directories must be real directories "
        "under the output root (replace it with the directory it points to)"
    )
    assert snapshot(outside) == before


def test_a_linked_directory_planted_after_a_sweep_is_refused_by_its_resume(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, outside = tmp_path / "out", tmp_path / "outside"
    assert main(["sweep", "run", str(config), "--in-process", "--out", str(out)]) == 0
    shutil.move(out / "jobs", outside)
    (outside / "foreign.parquet").write_bytes(b"not yours\n")
    (out / "jobs").symlink_to(outside, target_is_directory=True)
    before = snapshot(outside)
    assert main(["sweep", "run", str(config), "seeds.count=3", "--in-process", "--out", str(out)]) == 2
    assert main(["sweep", "run", str(config), "--in-process", "--out", str(out), "--resume"]) == 2
    assert snapshot(outside) == before


# A second process that compacts the record over and over: each round copies the last batch under a newer name
# (the same runs recorded again, a valid batch) and compacts, removing both files once the merged one is in place.
COMPACTOR = """
import sys
from pathlib import Path
from pdors import atomic
from pipeline.record import storage
root, rounds = Path(sys.argv[1]), int(sys.argv[2])
store = storage.Store(root)
with store.lock():
    for _ in range(rounds):
        (last,) = sorted((root / "runs").glob("p*.parquet"))
        name = store._name()
        for table in (*storage.PER_RUN_TABLES, "runs"):  # a new batch as Store.write adds one: runs file last
            src = root / table / last.name
            if src.exists():
                dst = root / table / (name + ".parquet")
                atomic.write(storage.digest_path(dst), storage.digest_path(src).read_bytes())
                atomic.write(dst, src.read_bytes())
        store.compact()
"""


@pytest.mark.slow
def test_readers_see_every_run_while_another_process_compacts(config: Path, tmp_path: Path) -> None:
    """Before: a reader skipped a batch file that vanished between listing and reading (fewer runs, no error)
    or raised a false RecordDamaged. Here every read, bounded in count, sees all 20 runs and their jobs."""
    out = tmp_path / "out"
    assert main(["sweep", "run", str(config), "seeds.count=5", "--in-process", "--out", str(out)]) == 0
    store = storage.Store(out, sweep_id_of_seeds(config, 5))
    want = set(storage.read(out, columns=["run_id"]).column("run_id").to_pylist())
    jobs = len(storage.read(out, "jobs"))
    assert len(want) == 20 and jobs > 0
    compactor = subprocess.Popen([sys.executable, "-c", COMPACTOR, str(out), "300"])
    reads = 0
    try:
        while compactor.poll() is None and reads < 3000:
            runs = storage.read(out, columns=["run_id"]).column("run_id").to_pylist()
            assert sorted(runs) == sorted(want), f"read {reads}: {len(runs)} of 20 runs"
            view = store.read("runs", ["run_id"])
            assert len(view) == 20, f"read {reads}: the sweep's view holds {len(view)} of 20 runs"
            assert len(storage.read(out, "jobs", list(want))) == jobs
            assert not storage.index(out).damaged
            reads += 1
    finally:
        compactor.wait(timeout=300)
    assert compactor.returncode == 0 and reads >= 20, reads


def sweep_id_of_seeds(config: Path, count: int) -> str:
    from pipeline.spec import grid, schema

    return grid.expand(schema.load(config, [f"seeds.count={count}"])).sweep_id


def test_publishing_reads_the_record_under_the_lock_it_was_recorded_with(config: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    held = []

    def publish(result: sweep.SweepResult, on_screen: Callable[[], None]) -> sweep.SweepResult:
        with pytest.raises(storage.LockedError), storage.Store(out).lock():
            pass
        held.append(result.sweep_id)
        return result

    sweep.run(str(config), sweep.SweepOptions(out=str(out), in_process=True), then=publish)
    assert held == [sweep_id_of(config)]


def test_a_manifest_listing_another_run_is_rebuilt_by_resume_not_looped(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `--resume` said `0 to run`, then status `1 not run`, exit 1, forever."""
    out = tmp_path / "out"
    sweep_id = sweep_id_of(config)
    assert main(["sweep", "run", str(config), "--in-process", "--out", str(out)]) == 0
    path = out / "sweeps" / sweep_id / "manifest.json"
    data = json.loads(path.read_text())
    data["run_ids"][0] = "0" * len(data["run_ids"][0])
    path.write_text(json.dumps(data))
    assert main(["sweep", "status", sweep_id, "--out", str(out)]) == 0  # nothing damaged: one run not run
    assert "1 not run" in unwrapped(capsys.readouterr().out)
    assert main(["sweep", "run", str(config), "--in-process", "--out", str(out), "--resume"]) == 0
    assert "lists other runs than its config plans: rebuilding it" in unwrapped(capsys.readouterr().out)
    assert main(["sweep", "status", sweep_id, "--out", str(out)]) == 0
    said = unwrapped(capsys.readouterr().out)
    assert "8 tasks, 8 ok, 0 failed, 0 invalid, 0 lost, 0 not run; records intact" in said, said


def test_the_repair_command_works_when_the_sweep_s_config_files_are_gone(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    sweep_id = sweep_id_of(config)
    assert main(["sweep", "run", str(config), "--in-process", "--out", str(out)]) == 0
    (out / "sweeps" / sweep_id / "config.yaml").unlink()
    config.unlink()
    (runs,) = out.glob("runs/p*.parquet")
    runs.unlink()
    capsys.readouterr()
    assert main(["sweep", "status", sweep_id, "--out", str(out)]) == 1
    said = unwrapped(capsys.readouterr().out)
    assert f"damaged: {runs} (8 runs, 8 of this sweep's): runs file missing" in said, said
    repair = said.split("repair: `")[1].split("`")[0]
    assert repair.startswith(f"pdors sweep run {out / 'sweeps' / sweep_id} ")
    assert main(shlex.split(repair)[1:]) == 0
    assert main(["sweep", "status", sweep_id, "--out", str(out)]) == 0
    assert "8 ok, 0 failed, 0 invalid, 0 lost, 0 not run; records intact" in unwrapped(capsys.readouterr().out)
    assert (out / "sweeps" / sweep_id / "config.yaml").is_file()  # written back


def test_the_published_mark_reveals_no_password_and_is_private(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the mark was an unsalted SHA-256 of readable data and the tracking URI, in a 0644 file; a guess
    of the password was confirmed by recomputing it, as here."""
    secret = "http://user:hunter2@127.0.0.1:9/"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", secret)
    out = tmp_path / "out"
    assert main(["sweep", "run", str(config), "--in-process", "--out", str(out)]) == 0
    store = storage.Store(out, sweep_id_of(config))
    published = store.meta / publish_run.PUBLISHED
    mark = json.loads(published.read_text())["mark"]
    manifest = storage.manifest_of(store)
    recorded = store.index().status()
    guess = {
        "manifest": manifest.to_json(),
        "runs": [recorded.get(r, "lost") for r in manifest.run_ids],
        "code": [pdors.version.CODE_VERSION, git_commit()],
        "tracking": secret,
        "track": False,
    }
    assert hashlib.sha256(json.dumps(guess, sort_keys=True, default=str).encode()).hexdigest() != mark
    for path in (published, out / publish_run.MARK_KEY):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert publish_run._mark(store, manifest, False) == mark  # keyed, and stable: a rerun publishes nothing


def test_ray_s_token_and_its_directory_are_made_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a local sweep left ~/.ray/auth_token 0644 in a 0755 ~/.ray."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    home = tmp_path / ".ray"
    with executor._private_token():  # what Ray creates meanwhile (the first run: no ~/.ray yet)
        (home / "auth_token").write_text("made by ray\n")
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "auth_token").stat().st_mode) == 0o600
    home.chmod(0o755)
    (home / "auth_token").chmod(0o644)  # left so by an older pdors or Ray itself
    with executor._private_token():
        pass
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "auth_token").stat().st_mode) == 0o600


def test_the_node_script_repairs_a_readable_token(tmp_path: Path) -> None:
    fake = tmp_path / "ray"
    fake.write_text('#!/bin/sh\necho "ray $*"\n')
    fake.chmod(0o755)
    token = tmp_path / "token"
    token.write_text("secret\n")
    token.chmod(0o644)
    env = {**os.environ, "RAY": str(fake), "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    env.pop("RAY_AUTH_TOKEN", None)
    result = subprocess.run([INFRA / "ray-node.sh", "head"], env=env, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and result.stdout.startswith("ray start --head"), result
    assert f"{token} was readable by other users: made it 0600" in result.stderr
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
