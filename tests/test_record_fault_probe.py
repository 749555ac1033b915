"""The record's file-fault probe (issue 47): every kind of record file and directory deleted, truncated,
corrupted or replaced by a link, and sweeps SIGKILLed at chosen points, each followed by the real commands a user
runs (``pdors sweep status``, ``report``, the repair ``sweep run --resume``, ``status`` again), each with a time
limit: after a file fault in one worker process that runs the commands one after another (tests/cli_worker.py;
start-up was most of a command's cost), after a SIGKILL each in a process of its own.

Counted over all faults and printed as a table (``-s``): tracebacks, hangs (a command past its limit), files
outside the output root touched (a directory beside it, snapshotted before and after), losses reported as intact
(a fault that loses or damages recorded data, yet ``status`` exits 0 saying "records intact"), and records not
restored (after the repair, the record differs from the clean one). Each must be 0.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_worker import CliWorker
from realstack import BIN
from sweep_fixtures import CONFIG_TEXT, sweep_id_of

from pipeline.record import storage

pytestmark = pytest.mark.slow
LIMIT = 300  # seconds a command may take before it counts as a hang
KILL_SEEDS = 12  # the SIGKILLed sweep: 48 runs in this process, several batches


def snapshot(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for p in sorted(root.rglob("*")):
        key = str(p.relative_to(root))
        out[key] = os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else "dir"
    return out


def record(root: Path) -> dict[str, object]:
    """What must survive: each table's rows by run id (utilities, job counts), read as a user would."""
    runs = storage.read(root, columns=["run_id", "status", "total_utility"]).to_pylist()
    jobs = storage.read(root, "jobs", columns=["run_id"]).column("run_id").to_pylist()
    cells = storage.read(root, "schedules", columns=["run_id"]).column("run_id").to_pylist()
    return {"runs": sorted(map(repr, runs)), "jobs": sorted(jobs), "schedules": sorted(cells)}


@dataclass
class Said:
    code: int | None  # None: a hang
    out: str

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.out


def pdors(*args: str | Path, worker: CliWorker | None = None) -> Said:
    """``pdors ARGS`` in a process of its own, or run by ``worker`` (the same command, its start-up paid once)."""
    if worker is not None:
        done = worker.run(list(map(str, args)), LIMIT)
        return Said(done.code, done.out + done.err)
    try:
        done = subprocess.run([BIN / "pdors", *map(str, args)], capture_output=True, text=True, timeout=LIMIT)
    except subprocess.TimeoutExpired as e:
        return Said(None, str(e.stdout or "") + str(e.stderr or ""))
    return Said(done.returncode, done.stdout + done.stderr)


def _flip(path: Path) -> None:
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0x10
    path.write_bytes(bytes(blob))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _link_dir(root: Path, rel: str, outside: Path) -> None:
    """Replace the directory ``root/rel`` by a link to a copy of it outside the root."""
    target = outside / rel.replace("/", "_")
    shutil.move(root / rel, target)
    (root / rel).symlink_to(target, target_is_directory=True)


def _link_file(path: Path, outside: Path) -> None:
    target = outside / path.name
    shutil.move(path, target)
    path.symlink_to(target)


Fault = Callable[[Path, Path, str], None]  # (root, outside, sweep id)


def batch(root: Path, table: str) -> Path:
    return next((root / table).glob("p*.parquet"))


def faults() -> dict[str, tuple[Fault, bool]]:
    """Name -> (the fault, whether it loses or damages recorded data: then status must not say intact)."""
    out: dict[str, tuple[Fault, bool]] = {}
    for t in storage.TABLES:
        out[f"{t} file deleted"] = (lambda r, o, s, t=t: batch(r, t).unlink(), True)
        out[f"{t} file truncated"] = (lambda r, o, s, t=t: _truncate(batch(r, t)), True)
        out[f"{t} file bit flipped"] = (lambda r, o, s, t=t: _flip(batch(r, t)), True)
        out[f"{t} digest deleted"] = (lambda r, o, s, t=t: storage.digest_path(batch(r, t)).unlink(), True)
        out[f"{t} digest corrupted"] = (
            lambda r, o, s, t=t: storage.digest_path(batch(r, t)).write_text("not a digest\n"),
            True,
        )
        out[f"{t}/ linked outside"] = (lambda r, o, s, t=t: _link_dir(r, t, o), False)
    out.update(
        {
            "ledger deleted": (lambda r, o, s: (r / "runs" / storage.LEDGER).unlink(), False),
            "ledger garbled": (lambda r, o, s: (r / "runs" / storage.LEDGER).write_bytes(b"\x00garbage\nzz\n"), False),
            "foreign file in runs/": (
                lambda r, o, s: (r / "runs" / f"p{9:020d}.parquet").write_text("x"),
                True,
            ),
            "runs file linked outside": (lambda r, o, s: _link_file(batch(r, "runs"), o), False),
            "temp file linked outside": (lambda r, o, s: (r / "jobs" / ".tmp-1-x").symlink_to(o / "victim"), False),
            ".lock linked outside": (lambda r, o, s: _link_file(r / ".lock", o), False),
            "sweeps/ linked outside": (lambda r, o, s: _link_dir(r, "sweeps", o), False),
            "report/ linked outside": (lambda r, o, s: _link_dir(r, f"sweeps/{s}/report", o), False),
            "manifest deleted": (lambda r, o, s: (r / "sweeps" / s / "manifest.json").unlink(), False),
            "manifest truncated": (lambda r, o, s: _truncate(r / "sweeps" / s / "manifest.json"), False),
            "config.yaml deleted": (lambda r, o, s: (r / "sweeps" / s / "config.yaml").unlink(), False),
        }
    )
    return out


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, object]]:
    base = tmp_path_factory.mktemp("probe")
    config = base / "tiny.yaml"
    config.write_text(CONFIG_TEXT + "schedules: true\n")
    out = base / "clean"
    assert pdors("sweep", "run", config, "--in-process", "--out", out).code == 0
    return config, out, record(out)


@pytest.fixture(scope="module")
def worker() -> Iterator[CliWorker]:
    pdors = CliWorker(dict(os.environ))
    yield pdors
    pdors.close()


ROWS: list[dict[str, object]] = []


def probe_fault(
    pdors: Callable[..., Said], config: Path, clean_root: Path, clean: dict[str, object], tmp: Path, name: str
) -> dict[str, object]:
    fault, loses = faults()[name]
    root, outside = tmp / "out", tmp / "outside"
    shutil.copytree(clean_root, root, symlinks=True)
    outside.mkdir()
    (outside / "victim").write_text("not the record's\n")
    sweep = sweep_id_of(config)
    fault(root, outside, sweep)
    before = snapshot(outside)
    said = [
        pdors("sweep", "status", sweep, "--out", root),
        pdors("sweep", "report", sweep, "--out", root, "--no-mlflow"),
        pdors("sweep", "run", config, "--in-process", "--out", root, "--resume"),
    ]
    status, _, repair = said
    refused = repair.code == 2 and "symbolic link" in repair.out
    after = pdors("sweep", "status", sweep, "--out", root)
    said.append(after)
    restored = refused or (after.code == 0 and "records intact" in after.out and record(root) == clean)
    return {
        "fault": name,
        "status": status.code,
        "said": "intact" if "records intact" in status.out else "damaged" if "damaged" in status.out else "refused",
        "repair": "refused (link)" if refused else repair.code,
        "after": after.code,
        "tracebacks": sum(s.traceback for s in said),
        "hangs": sum(s.code is None for s in said),
        "outside touched": int(snapshot(outside) != before),
        "loss said intact": int(loses and status.code == 0 and "records intact" in status.out),
        "not restored": int(not restored),
    }


@pytest.mark.parametrize("name", list(faults()))
def test_file_fault(clean: tuple[Path, Path, dict[str, object]], worker: CliWorker, tmp_path: Path, name: str) -> None:
    config, root, want = clean
    row = probe_fault(functools.partial(pdors, worker=worker), config, root, want, tmp_path, name)
    ROWS.append(row)
    assert row["tracebacks"] == row["hangs"] == row["outside touched"] == 0, row
    assert row["loss said intact"] == row["not restored"] == 0, row


# SIGKILL points of a sweep, each seen on its output or in its root: the kill lands right after it
KILL_POINTS = {
    "manifest written": lambda out, root: any(root.glob("sweeps/*/manifest.json")),
    "first batch recorded": lambda out, root: len(list(root.glob("runs/p*.parquet"))) >= 1,
    "second batch recorded": lambda out, root: len(list(root.glob("runs/p*.parquet"))) >= 2,
    "runs done, compaction next": lambda out, root: "ran " in out,
    "publishing": lambda out, root: "compacted" in out or "runs:" in out,
}


def kill_args(config: Path) -> list[str]:
    return ["sweep", "run", str(config), f"seeds.count={KILL_SEEDS}", "--in-process"]


@pytest.fixture(scope="module")
def reference(
    clean: tuple[Path, Path, dict[str, object]], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, object]:
    """The record the SIGKILLed sweep, resumed, must equal: its sweep run once, uninterrupted (the same for
    every kill point)."""
    root = tmp_path_factory.mktemp("reference") / "out"
    assert pdors(*kill_args(clean[0]), "--out", root).code == 0
    return record(root)


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_sigkill(
    clean: tuple[Path, Path, dict[str, object]], reference: dict[str, object], tmp_path: Path, point: str
) -> None:
    args = kill_args(clean[0])
    root = tmp_path / "out"
    proc = subprocess.Popen(
        [BIN / "pdors", *args, "--out", str(root)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    seen, started, hit = "", time.monotonic(), False
    while proc.poll() is None and time.monotonic() - started < LIMIT:
        seen += (proc.stdout.read() or b"").decode(errors="replace")  # None: nothing new yet
        if KILL_POINTS[point](seen, root):
            proc.send_signal(signal.SIGKILL)
            hit = True
            break
        time.sleep(0.01)
    proc.wait(timeout=LIMIT)
    status = pdors("sweep", "status", "--out", root) if (root / "sweeps").exists() else Said(0, "no sweep yet")
    resume = pdors(*args, "--out", root, "--resume")
    after = pdors("sweep", "status", "--out", root)
    row = {
        "fault": f"SIGKILL: {point}" + ("" if hit else " (finished first)"),
        "status": status.code,
        "said": "damaged" if "damaged" in status.out else "ok",
        "repair": resume.code,
        "after": after.code,
        "tracebacks": sum(s.traceback for s in (status, resume, after)),
        "hangs": sum(s.code is None for s in (status, resume, after)),
        "outside touched": 0,
        "loss said intact": 0,
        "not restored": int(not (resume.code == after.code == 0 and record(root) == reference)),
    }
    ROWS.append(row)
    assert row["tracebacks"] == row["hangs"] == row["not restored"] == 0 and "damaged" not in status.out, row


def test_zz_table() -> None:
    """The probe's table (run with ``-s`` to see it); every total 0."""
    if not ROWS:
        pytest.skip("the probe's tests did not run in this session")
    cols = list(ROWS[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in ROWS]
    totals = {c: sum(int(str(r[c])) for r in ROWS) for c in cols[5:]}
    print("\n" + "\n".join(lines) + f"\n\n{len(ROWS)} faults; totals: {totals}")
    assert not any(totals.values()), totals
