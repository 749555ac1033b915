"""The Parquet record of sweeps: the source of truth that MLflow, summaries and plots are derived from.

Layout under the output root::

    runs/<batch>.parquet       one row per run of a batch (params, metrics, status, provenance)
    jobs/<batch>.parquet       one row per job of each run in the runs file of the same name
    schedules/<batch>.parquet  with ``schedules: true``: one row per (job, machine, slot) used
    runs/_batches              the ledger: one line per sealed batch, its run ids (a batch whose runs file is gone
                               from it, not merged by a compaction, is damage)
    sweeps/<id>/               manifest.json (the run ids the sweep asked for), config.yaml, summary.{csv,md}, plots/
    .lock                      one writer per output root

Every directory of the record must be a real directory, not a symbolic link (:meth:`Store.check_links`): nothing
outside the root is ever removed or renamed. Readers never hold a lock: a file that vanishes while read (another
process compacting) makes the read start again, so a read sees every run or fails, never a part of them.

A run is identified by what determines its result (:mod:`pipeline.spec.grid`), not by the sweep that asked for it:
every sweep under one root shares the record, so a run is computed once; a sweep's view is the runs its
manifest lists. A sweep writes its runs in batches (one file per table per batch), each file under a hidden
temp name (``.tmp-*``, which readers skip) moved into place with ``os.replace``, the jobs (and schedules) file
before the runs file of the same name: a run is recorded iff a runs file holds it, and a runs file's jobs are
in the jobs file of its name. Batch names (``p<stamp>``, a 20-digit stamp) grow with time, so a run held by
several runs files (recomputed, or a compaction interrupted) counts once: the row of the last file by name wins,
and only its jobs are read. :meth:`Store.compact` merges the batch files into one file per table (written before
the merged ones are removed). Files of the earlier one-file-per-run layout (``runs/<run_id>.parquet``) follow
the same rules, sort before every batch, and are merged by the first compaction. Every ``runs`` file has the
same schema (:func:`runs_schema`: the parameters of every registered policy, null where another policy ran);
plain pandas/DuckDB/Polars reads of the folder see every row of every file, including superseded ones (dedupe
by run_id: docs/PIPELINE.md).
"""

from __future__ import annotations

import dataclasses
import fcntl
import functools
import hashlib
import json
import os
import re
import shlex
import time
import typing
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from pdors import atomic
from pdors.atomic import TMP_PREFIX
from pdors.config import JSON
from pdors.errors import InputError, LockedError, RecordDamaged, SweepError, shorten
from pipeline.record import seal
from pipeline.record.manifest import Manifest
from pipeline.record.manifest import parse as parse_manifest
from pipeline.spec.columns import (
    IDENTITY,
    JOBS_SCHEMA,
    JSON_METRICS,
    JSON_SOURCES,
    METRICS,
    ORIGIN_FIELDS,
    PROVENANCE,
    SCHEDULES_SCHEMA,
    SUMMARY_IDENTITY,
    arrow_type,
)
from pipeline.spec.tasks import Outcome, Task, TaskSpec, same_but_seed

if typing.TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True, kw_only=True)
class Counts:
    total: int
    ok: int
    failed: int
    lost: int
    invalid: int = 0  # recorded with validator violations: left out of every statistic and figure

    @property
    def remaining(self) -> int:
        return self.total - self.ok - self.failed - self.invalid - self.lost


TABLES = ("runs", "jobs", "schedules")
SUMMARISED = ("ok", "invalid")  # the statuses of runs recorded with their summary and per-job rows
PER_RUN_TABLES = ("jobs", "schedules")  # per-run rows kept in the file named as the runs file
DAMAGED_PREFIX = ".damaged-"  # a damaged batch set aside: never read, kept for inspection
BATCH_PREFIX = "p"  # batch names sort after the run ids (hex) of the one-file-per-run layout
BATCH_NAME = re.compile(r"p[0-9]{20}")
LEDGER = "_batches"  # in runs/: the sealed batches (a name readers and dataset discovery skip)
META_DIRS = ("plots", "report", "theorem")  # what publishing writes under sweeps/<id>/
RETRIES = 50  # reads started again when a file vanished (another process compacting): a bounded number
T = TypeVar("T")


def _columns(cls: Any, prefix: str) -> list[tuple[str, pa.DataType]]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        name = f"{prefix}.{f.name}"
        tp = hints[f.name]
        out += _columns(tp, name) if dataclasses.is_dataclass(tp) else [(name, arrow_type(tp))]
    return out


def _runs_schema() -> pa.Schema:
    """Identity, instance params, every registered policy's params (``<policy>.<param>``), the offline
    optimum's settings, metrics, provenance: the same columns whichever policies a sweep ran."""
    from pdors.policies import POLICIES, policy_module
    from pdors.workload import WorkloadConfig
    from pipeline.spec.schema import OptConfig

    params = [c for p in POLICIES for c in _columns(policy_module(p).Config, p)]
    opt = [*_columns(OptConfig, "opt"), ("opt.status", pa.string()), ("opt.result", pa.string())]
    return pa.schema(
        [
            *IDENTITY,
            *_columns(WorkloadConfig, "workload"),
            *params,
            *opt,
            *METRICS,
            *[(c, pa.string()) for c in JSON_METRICS],
            *PROVENANCE,
        ]
    )


def schema_of(table: str) -> pa.Schema:
    return runs_schema() if table == "runs" else {"jobs": JOBS_SCHEMA, "schedules": SCHEDULES_SCHEMA}[table]


@functools.cache
def runs_schema() -> pa.Schema:
    """:func:`_runs_schema`, built on first use: it imports every policy, which ``status`` and ``list`` (four
    columns read by name) do not need."""
    return _runs_schema()


def flatten(tree: JSON, prefix: str = "") -> JSON:
    out: JSON = {}
    _flatten_into(out, tree, prefix)
    return out


def _flatten_into(out: JSON, tree: JSON, prefix: str) -> None:
    for k, v in tree.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, dict) and v:
            _flatten_into(out, v, key)
        else:
            out[key] = v


def _utc(t: float | None) -> datetime | None:
    return None if t is None else datetime.fromtimestamp(t, tz=UTC)


# where the seed goes in a spec's JSON (never a seed: seeds are >= 0): the JSON of a grid point's runs is written
# once and each run's seed put in (:func:`_point_columns`)
_SEED_MARK = -7_391_946_271_013
_SEED_TEXT = f'"seed": {_SEED_MARK}'


def _point_columns(task: Task, git_commit: str) -> tuple[JSON, str | None]:
    """The columns a grid point's runs share (``point_id``: runs that differ only in the seed), and its spec's
    JSON with the seed marked (None where the mark would be ambiguous: each run's JSON is then written whole)."""
    spec = task.spec
    row = {
        "kind": task.kind,
        "policy": task.policy,
        "point_id": task.point_id,
        "machines": spec["machines"],
        "jobs": spec["jobs"],
        "slots": spec["slots"],
        "instance_file": spec.get("instance_file"),
        **flatten(spec["workload"], "workload"),
        "git_commit": git_commit,
    }
    if task.kind == "sim":
        row.update(flatten(spec["params"], task.policy))
        origin = spec.get("origin") or builtin_origin(task.policy)
        row.update({f"policy_{k}": origin[k] for k in ORIGIN_FIELDS})
    else:
        row.update(flatten(spec["opt"], "opt"))
    text = json.dumps({**spec, "seed": _SEED_MARK}, sort_keys=True)
    return row, text if "seed" in spec and text.count(_SEED_TEXT) == 1 else None


def run_row(
    task: Task, outcome: Outcome, git_commit: str, points: dict[str, tuple[TaskSpec, JSON, str | None]] | None = None
) -> JSON:
    """The runs-table row of ``task``; ``points``: the shared columns of each grid point met so far (its runs'
    rows reuse them), added to."""
    known = (points or {}).get(task.point_id)
    if known is None or not same_but_seed(known[0], task.spec):
        known = (task.spec, *_point_columns(task, git_commit))
        if points is not None:
            points[task.point_id] = known
    _, columns, text = known
    spec = task.spec
    row = {
        **columns,
        "run_id": task.run_id,
        "instance_id": task.instance_id,
        "seed": task.seed,
        "status": outcome.status,
        "error": outcome.error,
        "code_version": outcome.code_version,
        "node_id": outcome.node_id,
        "node_ip": outcome.node_ip,
        "worker_pid": outcome.worker_pid,
        "started_at": _utc(outcome.started_at),
        "finished_at": _utc(outcome.finished_at),
        "spec": json.dumps(spec, sort_keys=True)
        if text is None
        else text.replace(_SEED_TEXT, f'"seed": {json.dumps(spec["seed"])}'),
    }
    result = outcome.result or {}
    if task.kind == "sim":
        row.update(flatten({k: v for k, v in result.items() if k not in SUMMARY_IDENTITY + JSON_SOURCES}))
        row["schedule_digest"] = result.get("schedule_digest")
        if result:
            row.update(
                violations=len(result["violations"]),
                violation_detail=result["violations"],
                policy_stats=result["policy_stats"],
            )
    else:
        proven = result.get("proven_optimal", False)  # a non-optimal result is never reported as OPT
        row.update(
            {
                "total_utility": result.get("objective") if proven else None,
                "opt.status": result.get("status"),
                "opt.result": result or None,
            }
        )
    return row


@functools.cache
def builtin_origin(policy: str) -> JSON:
    """A built-in policy's origin (its version: the code's, as every run records)."""
    from pdors.config import to_dict
    from pdors.policies import resolve

    origin: JSON = to_dict(resolve(policy).origin)
    return origin


def job_rows(task: Task, outcome: Outcome) -> list[JSON]:
    if task.kind != "sim" or outcome.result is None:
        return []
    ident = {
        "run_id": task.run_id,
        "policy": task.policy,
        "seed": task.seed,
        "point_id": task.point_id,
        "instance_id": task.instance_id,
    }
    return [{**ident, **job} for job in outcome.result["jobs"]]


def to_table(rows: list[JSON], schema: pa.Schema) -> pa.Table:
    """Rows -> a table of exactly ``schema``: missing columns are null, JSON columns are serialised."""
    cols = {}
    for f in schema:
        values = [r.get(f.name) for r in rows]
        if f.type == pa.string():
            values = [v if v is None or isinstance(v, str) else json.dumps(v, sort_keys=True) for v in values]
        cols[f.name] = pa.array(values, type=f.type)
    return pa.table(cols, schema=schema)


DIGEST_SUFFIX = ".sha256"
PAGE_CHECKSUMS = {"write_page_checksum": True}  # every data page carries a CRC, verified on every read


def digest_path(path: Path) -> Path:
    """Where the SHA-256 of a record file is kept: beside it, under a name readers and dataset discovery skip."""
    return path.with_name(f"_{path.name}{DIGEST_SUFFIX}")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


@contextmanager
def _sealed(path: Path, digest: list[str]) -> Iterator[Path]:
    """A temp path to write a record file to; its digest is written (atomically) before the file is moved into
    place, so every record file has its digest (a crash between the two leaves a digest without a file), and
    appended to ``digest``."""
    with atomic.replacing(path) as tmp:  # a failed write (a full disk) leaves no partial file behind
        yield tmp
        digest.append(_sha256(tmp))
        atomic.write(digest_path(path), digest[-1] + "\n")


@functools.lru_cache(maxsize=65_536)
def _sha256_of(path: str, size: int, mtime_ns: int) -> str:
    """A record file's SHA-256, computed once per (path, size, mtime): a changed file is hashed again."""
    return _sha256(Path(path))


def verify(path: Path, want: str | None = None, required: bool = False) -> str | None:
    """Why a record file does not match its digest (``want``, else its digest file), or None; a file without
    either is None unless ``required`` (written since digests exist: :mod:`pipeline.record.seal`)."""
    try:
        st = path.stat()
        kept = digest_path(path)
        if want is None and kept.exists():
            want = kept.read_bytes().decode("ascii").strip()
        if want is None:
            return f"has no digest file ({kept.name})" if required else None
        return (
            None if _sha256_of(str(path), st.st_size, st.st_mtime_ns) == want else "content does not match its SHA-256"
        )
    except UnicodeDecodeError:
        return f"has an unreadable digest file ({digest_path(path).name})"
    except OSError as e:
        return f"unreadable ({e.strerror})"


def _write_atomic(table: pa.Table, path: Path, files: dict[str, str] | None = None) -> str:
    """Write a record file (marked sealed; a runs file listing its batch's ``files``); returns its SHA-256."""
    digest: list[str] = []
    with _sealed(path, digest) as tmp:
        pq.write_table(table.replace_schema_metadata(seal.metadata(files)), tmp, **PAGE_CHECKSUMS)
    return digest[0]


def _files(root: Path, table: str) -> list[Path]:
    """A table's files in name order (the order in which a later file's row of a run wins)."""
    return sorted(p for p in (root / table).glob("*.parquet") if not p.name.startswith((".", "_")))


def _read(path: Path, columns: list[str]) -> tuple[dict[str, list[Any]], dict[bytes, bytes] | None] | None:
    """Columns of one file (as lists) and its footer metadata, or None if it cannot be read as such (truncated,
    not Parquet, another table, a string that is not UTF-8)."""
    try:
        with pq.ParquetFile(path, page_checksum_verification=True) as f:  # not read_table: no pyarrow.dataset
            t = f.read(columns=columns)
        if t.column_names != columns:  # ParquetFile.read leaves out a missing column silently
            return None
        return t.to_pydict(), t.schema.metadata
    except (OSError, pa.ArrowException, KeyError, ValueError):
        return None


def _rows(path: Path) -> int | None:
    """A file's row count from its Parquet footer (None if unreadable); no row is read."""
    try:
        return int(pq.ParquetFile(path, page_checksum_verification=True).metadata.num_rows)
    except (OSError, pa.ArrowException):
        return None


@dataclass(frozen=True)
class Damage:
    batch: str  # the runs file's name, without .parquet
    run_ids: tuple[str, ...]  # the runs it holds (none known if it is unreadable)
    problem: str
    restore: tuple[tuple[str, str], ...] = ()  # (table, SHA-256): only these digest files lost, rewritten by repair


class _Vanished(RecordDamaged):
    """A record file listed a moment ago is gone: another process compacted (or repaired) the record meanwhile."""


def _settled(root: Path, what: Callable[[], T]) -> T:
    """``what()``, started again while a file it read vanished (a compaction removes batches only once their
    merged file is in place, so the next listing holds every run)."""
    for attempt in range(RETRIES):
        try:
            return what()
        except _Vanished:
            time.sleep(min(0.01 * attempt, 0.2))
    raise RecordDamaged(f"the record under {root} kept changing while read ({RETRIES} tries); read it again")


def _gone(path: Path) -> None:
    if not path.exists():
        raise _Vanished(f"{path} vanished while read")


def _ledger_path(root: Path) -> Path:
    return root / "runs" / LEDGER


def _ledger(root: Path) -> dict[str, tuple[str, ...]]:
    """The sealed batches and their run ids: whole lines naming a batch only (a line cut short by a crash, or
    garbled, protects nothing and is skipped)."""
    try:
        text = _ledger_path(root).read_bytes().decode("ascii", errors="replace")
    except OSError:
        return {}
    out = {}
    for line in text.split("\n")[:-1]:
        batch, _, ids = line.partition(" ")
        if BATCH_NAME.fullmatch(batch):
            out[batch] = tuple(i for i in ids.split(",") if i)
    return out


def _enter(root: Path, batch: str, run_ids: list[str]) -> None:
    """Add a batch to the ledger once its runs file is in place (one appended line, synced)."""
    fd = os.open(_ledger_path(root), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, f"{batch} {','.join(run_ids)}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def _rewrite_ledger(root: Path, batches: dict[str, tuple[str, ...]]) -> None:
    atomic.write(_ledger_path(root), "".join(f"{b} {','.join(ids)}\n" for b, ids in sorted(batches.items())))


def _lost_digests(root: Path, batch: str, files: dict[str, str] | None) -> tuple[tuple[str, str], ...]:
    """The listed partners of an intact batch whose digest file is missing or says another SHA-256 than the
    runs file lists (the file itself matches the listing)."""
    lost = []
    for table, want in sorted((files or {}).items()):
        kept = digest_path(root / table / f"{batch}.parquet")
        try:
            ok = kept.read_bytes().strip() == want.encode()
        except OSError:
            ok = False
        if not ok:
            lost.append((table, want))
    return tuple(lost)


def _partner_problem(root: Path, batch: str, runs: dict[str, list[Any]], meta: dict[bytes, bytes] | None) -> str | None:
    """Whether the other files of a runs file's batch are those it lists (a sealed batch), each matching its
    digest, and the jobs file holds as many rows as its summarised simulations have jobs (footer only)."""
    sim_ok = [
        j for k, s, j in zip(runs["kind"], runs["status"], runs["jobs"], strict=False) if k == "sim" and s in SUMMARISED
    ]
    files = seal.listed(meta)
    if seal.sealed(meta) and files is None:
        return "runs file lists no files of its batch"
    for table in PER_RUN_TABLES:
        partner = root / table / f"{batch}.parquet"
        if files is not None and table in files and not partner.exists():
            return f"{table} file missing ({partner})"
        if files is not None and table not in files and partner.exists():
            return f"{table} file {partner} is not one its runs file lists"
        if partner.exists() and (why := verify(partner, None if files is None else files[table])):
            return f"{table} file {why}"
    path = root / "jobs" / f"{batch}.parquet"
    expected = sum(sim_ok)
    if not path.exists():
        return "jobs file missing" if expected else None
    held = _rows(path)
    if held is None:
        return "jobs file unreadable"
    return None if held == expected else f"jobs file holds {held} rows, expected {expected}"


@dataclass(frozen=True, kw_only=True)
class Index:
    """Where the record under a root stands, read from the runs files' ``run_id``, ``status``, ``kind``,
    ``jobs`` and ``node_ip`` columns and the jobs files' footers: the batch holding each recorded run (the last
    by name), its status and the node that ran it, each intact batch's row count, and the damaged batches
    (never read)."""

    chosen: dict[str, tuple[str, str]]  # run_id -> (batch, status)
    rows: dict[str, int]  # intact batch -> rows in its runs file (superseded ones included)
    damaged: list[Damage]
    node: dict[str, str | None]  # run_id -> address of the Ray node that ran it (None: run without Ray)
    unsealed: int = 0  # intact batches written before digests existed: read unchecked (pipeline.record.seal)
    covered: frozenset[str] = frozenset()  # batches a compacted runs file lists as merged into it
    ledger: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)  # as read, before the listing

    def status(self) -> dict[str, str]:
        return {run_id: status for run_id, (_, status) in self.chosen.items()}

    def batches_of(self, run_ids: Iterable[str] | None = None) -> dict[str, list[str]]:
        """Batch -> the runs read from it (of ``run_ids``, default all), batches in name order."""
        wanted = None if run_ids is None else set(run_ids)
        out: dict[str, list[str]] = {b: [] for b in self.rows}
        for run_id, (batch, _) in self.chosen.items():
            if wanted is None or run_id in wanted:
                out[batch].append(run_id)
        return {b: ids for b, ids in out.items() if ids}


def index(root: str | Path) -> Index:
    root = Path(root)
    return _settled(root, lambda: _index(root))


def _index(root: Path) -> Index:
    chosen: dict[str, tuple[str, str]] = {}
    node: dict[str, str | None] = {}
    rows, damaged = {}, []
    unsealed = 0
    ledger = _ledger(root)  # before the listing: a batch it names had its runs file in place before
    covered: set[str] = set()
    present = _files(root, "runs")
    for f in present:
        read_ = _read(f, ["run_id", "status", "kind", "jobs", "node_ip"])
        if read_ is None:
            _gone(f)
            damaged.append(Damage(f.stem, ledger.get(f.stem, ()), f"runs file {verify(f) or 'unreadable'}"))
            continue
        t, meta = read_
        covered |= seal.merged(meta)
        why = verify(f, required=seal.sealed(meta))
        ids = t["run_id"]  # a file failing its digest may still tell which runs it held
        problem = f"runs file {why}" if why else _partner_problem(root, f.stem, t, meta)
        lost = () if problem else _lost_digests(root, f.stem, seal.listed(meta))
        if problem or lost:
            _gone(f)
            tables = ", ".join(table for table, _ in lost)
            damaged.append(Damage(f.stem, tuple(ids), problem or f"{tables} digest file missing or altered", lost))
            continue
        unsealed += not seal.sealed(meta)
        rows[f.stem] = len(ids)
        chosen.update((r, (f.stem, s)) for r, s in zip(ids, t["status"], strict=True))
        node.update(zip(ids, t["node_ip"], strict=True))
    names = {f.stem for f in present}
    for batch, held in ledger.items():
        if batch not in names and batch not in covered:
            damaged.append(Damage(batch, held, f"runs file missing (its batch is listed in {_ledger_path(root)})"))
    return Index(
        chosen=chosen,
        rows=rows,
        damaged=damaged,
        node=node,
        unsealed=unsealed,
        covered=frozenset(covered),
        ledger=ledger,
    )


MERGE_ROWS = 65_536  # rows per row group of a merged file: few groups, bounded memory
MERGE_BATCHES = 256  # files per scan and batches per row group: one-row files (the one-file-per-run layout)
# cost about 1 KB per column each in memory


def _scan(
    root: Path, table: str, held: dict[str, list[str]], rows: dict[str, int], columns: list[str] | None
) -> Iterator[pa.RecordBatch]:
    """The rows of ``table`` of the runs ``held`` (batch -> run ids), streamed: batches whose every row is
    wanted are scanned whole (``MERGE_BATCHES`` files per scan), the others filtered by run id."""
    import pyarrow.compute as pc  # with pyarrow.dataset (which imports pandas): only where rows are read
    import pyarrow.dataset as ds

    verified = ds.ParquetFileFormat(
        default_fragment_scan_options=ds.ParquetFragmentScanOptions(page_checksum_verification=True)
    )
    schema = schema_of(table)
    whole: list[tuple[Path, list[str]]] = []
    partial: list[tuple[Path, list[str]]] = []
    for batch, ids in held.items():
        path = root / table / f"{batch}.parquet"
        if path.exists():
            (whole if len(ids) == rows[batch] else partial).append((path, ids))
        else:  # a batch without jobs (or schedules) is one whose runs file is still there
            _gone(root / "runs" / f"{batch}.parquet")
    try:
        for k in range(0, len(whole), MERGE_BATCHES):  # a scan's state grows with its files: a bounded number each
            paths = [p for p, _ in whole[k : k + MERGE_BATCHES]]
            yield from ds.dataset(paths, format=verified, schema=schema).to_batches(columns=columns)
        for path, ids in partial:
            yield from ds.dataset(path, format=verified, schema=schema).to_batches(
                columns=columns, filter=pc.field("run_id").isin(ids)
            )
    except (OSError, pa.ArrowException, ValueError) as e:  # damaged after ``index`` checked it, a page failing its CRC
        for batch in held:
            _gone(root / "runs" / f"{batch}.parquet")
        raise RecordDamaged(
            f"a {table} file under {root} cannot be read ({shorten(' '.join(str(e).split()), 300)})"
        ) from None


def read(
    root: str | Path, table: str = "runs", run_ids: list[str] | None = None, columns: list[str] | None = None
) -> pa.Table:
    """Every recorded run under ``root`` (each once, from the last runs file holding it), or those of
    ``run_ids``; ``table`` ``jobs``/``schedules``: their rows. ``columns``: only these (Parquet column
    pruning). Files written before a column existed read it as null. A damaged batch that holds (or may hold)
    one of ``run_ids`` is a :class:`RecordDamaged`: a view without some of its runs is never returned; without
    ``run_ids``, damaged batches are left out."""
    root = Path(root)
    return _settled(root, lambda: _read_view(root, table, run_ids, columns))


def _read_view(root: Path, table: str, run_ids: list[str] | None, columns: list[str] | None) -> pa.Table:
    idx = _index(root)
    wanted = set(run_ids or ())
    for d in idx.damaged if run_ids is not None else []:
        hit = len(wanted.intersection(d.run_ids)) if d.run_ids else None
        if hit != 0:
            raise RecordDamaged(
                f"{root / 'runs' / d.batch}.parquet: {d.problem} ("
                + (f"{hit} of the runs asked for" if hit else "its runs unknown")
                + ")"
            )
    schema = schema_of(table) if columns is None else pa.schema([schema_of(table).field(c) for c in columns])
    return pa.Table.from_batches(list(_scan(root, table, idx.batches_of(run_ids), idx.rows, columns)), schema=schema)


class Store:
    """The record under ``root``, seen from sweep ``sweep_id`` (its manifest lists the runs it asked for)."""

    def __init__(self, root: str | Path, sweep_id: str | None = None):
        self.root, self.sweep_id = Path(root), sweep_id
        self.meta = self.root / "sweeps" / (sweep_id or "")
        self._stamp = 0

    def part(self, table: str) -> Path:
        return self.root / table

    def index(self) -> Index:
        return index(self.root)

    def recorded(self) -> dict[str, str]:
        """run_id -> status of every run recorded under the root (any sweep's), damaged batches left out."""
        return self.index().status()

    def _name(self) -> str:
        """A batch name after every name in the record (a later file's row of a run wins); the record is
        listed once, after which this writer's own names are the latest."""
        if not self._stamp:
            names = [
                p.name.removeprefix(DAMAGED_PREFIX)
                for t in TABLES
                if (self.root / t).is_dir()
                for p in (self.root / t).iterdir()
            ]
            self._stamp = max([0, *(int(n[1:21]) for n in names if n.startswith(BATCH_PREFIX) and n[1:21].isdigit())])
        self._stamp = max(time.time_ns(), self._stamp + 1)
        return f"{BATCH_PREFIX}{self._stamp:020d}"

    @contextmanager
    def lock(self) -> Iterator[None]:
        """One writer per output root (sweeps share its record); the OS drops the lock when the process dies,
        even by SIGKILL."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.check_links()
        with atomic.lock_file(self.root / ".lock") as fd:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise LockedError(f"{self.root} is being written by another sweep; wait for it to finish") from None
            for table in TABLES:  # temp files of a writer that died mid-write
                for tmp in self.part(table).glob(TMP_PREFIX + "*"):
                    tmp.unlink()
            yield

    def check_links(self) -> None:
        """Refuse a record directory that is a symbolic link: compaction, the lock's clean-up and repair remove
        and rename files in these directories, and must never do so outside the root."""
        dirs = [self.root / d for d in (*TABLES, "sweeps")]
        if self.sweep_id is not None:
            dirs += [self.meta, *(self.meta / d for d in META_DIRS)]
        for d in dirs:
            if d.is_symlink():
                raise InputError(
                    f"{d} is a symbolic link; the record's directories must be real directories under the output "
                    "root (replace it with the directory it points to)"
                )

    def write(self, done: list[tuple[Task, Outcome]], git_commit: str) -> None:
        """Record a batch of finished runs: its jobs (and schedules) file, then its runs file."""
        if not done:
            return
        name = f"{self._name()}.parquet"
        files = {}
        jobs = [row for task, outcome in done for row in job_rows(task, outcome)]
        if jobs:
            files["jobs"] = _write_atomic(to_table(jobs, JOBS_SCHEMA), self.root / "jobs" / name)
        cells = [schedule_table(task, outcome) for task, outcome in done if outcome.schedule is not None]
        if cells:
            files["schedules"] = _write_atomic(pa.concat_tables(cells), self.root / "schedules" / name)
        points: dict[str, tuple[TaskSpec, JSON, str | None]] = {}
        runs = to_table([run_row(t, o, git_commit, points) for t, o in done], runs_schema())
        _write_atomic(runs, self.root / "runs" / name, files)
        _enter(self.root, name.removesuffix(".parquet"), [task.run_id for task, _ in done])

    def set_aside(self, damaged: list[Damage]) -> None:
        """Rename damaged batches' files to hidden names: never read again, their runs computed anew (a batch
        that lost only digest files gets them back: its files match what its runs file lists)."""
        for d in damaged:
            for table, sha in d.restore:
                atomic.write(digest_path(self.root / table / f"{d.batch}.parquet"), sha + "\n")
            for table in TABLES if not d.restore else ():
                path = self.root / table / f"{d.batch}.parquet"
                if path.exists():
                    os.replace(path, path.with_name(DAMAGED_PREFIX + path.name))
                if digest_path(path).exists():
                    os.replace(digest_path(path), path.with_name(DAMAGED_PREFIX + digest_path(path).name))
        ledger = _ledger(self.root)
        aside = {d.batch for d in damaged if not d.restore}
        if aside & ledger.keys():
            _rewrite_ledger(self.root, {b: ids for b, ids in ledger.items() if b not in aside})

    def compact(self) -> int:
        """Merge every intact batch into one file per table, holding each recorded run once; returns how many
        runs files were merged (0: nothing to do). Crash-safe at every step: the merged files are written (jobs
        and schedules, then runs) before the batches are removed (runs, then the rest), so a crash leaves either
        the old batches alone, or both with every run held twice (readers take the later, merged row), or
        jobs/schedules files without a runs file (never read; removed here). Call it under :meth:`lock`."""
        idx = self.index()
        merged, held = list(idx.rows), idx.batches_of()
        if len(merged) > 1 or (merged and idx.rows[merged[0]] > len(held.get(merged[0], []))):
            name = f"{self._name()}.parquet"
            files: dict[str, str] = {}
            replaced = set(merged) | (idx.covered & idx.ledger.keys())  # the ledger's names it makes go away
            for table in (*PER_RUN_TABLES, "runs"):
                rows = _scan(self.root, table, held, idx.rows, None)
                meta = seal.metadata(files, sorted(replaced)) if table == "runs" else seal.metadata()
                digest = _merge(rows, schema_of(table).with_metadata(meta), self.root / table / name)
                if digest is not None:
                    files[table] = digest
            for table in ("runs", *PER_RUN_TABLES):
                for batch in merged:
                    _remove(self.root / table / f"{batch}.parquet")
            if "runs" in files:
                still = {b: ids for b, ids in _ledger(self.root).items() if b not in replaced}
                _rewrite_ledger(self.root, {**still, name.removesuffix(".parquet"): tuple(sorted(idx.chosen))})
        else:
            merged = []
        runs = {p.stem for p in _files(self.root, "runs")}
        for table in PER_RUN_TABLES:  # left by a crash between writing a batch's files, or in compaction
            for orphan in (p for p in _files(self.root, table) if p.stem not in runs):
                _remove(orphan)
        for table in TABLES:  # digests whose file was never moved in (a crash between the two)
            for kept in (self.root / table).glob(f"_*.parquet{DIGEST_SUFFIX}"):
                if not kept.with_name(kept.name[1 : -len(DIGEST_SUFFIX)]).exists():
                    kept.unlink()
        return len(merged)

    def read(self, table: str = "runs", columns: list[str] | None = None) -> pa.Table:
        """The sweep's view: the recorded runs its manifest lists, with a ``sweep_id`` column."""
        try:
            t = read(self.root, table, manifest_of(self).run_ids, columns)
        except RecordDamaged as e:
            raise RecordDamaged(f"{e}; repair: `{resume_command(self)}`") from None
        return t.append_column("sweep_id", pa.array([self.sweep_id] * len(t), pa.string()))


def schedule_table(task: Task, outcome: Outcome) -> pa.Table:
    ident = {"run_id": task.run_id, "policy": task.policy, "seed": task.seed, "point_id": task.point_id}
    schedule = outcome.schedule
    assert schedule is not None  # written only for outcomes that carry one
    cells = len(schedule["job"])
    return pa.table({**{k: [v] * cells for k, v in ident.items()}, **schedule}, schema=SCHEDULES_SCHEMA)


def _merge(batches: Iterator[pa.RecordBatch], schema: pa.Schema, path: Path) -> str | None:
    """Stream ``batches`` into one file at ``path`` (atomically, with its digest); no file if there is no row.
    Returns the file's SHA-256 (None: no file)."""
    rows = (b for b in batches if b.num_rows)
    first = next(rows, None)
    if first is None:
        return None
    digest: list[str] = []
    with _sealed(path, digest) as tmp, pq.ParquetWriter(tmp, schema, **PAGE_CHECKSUMS) as writer:
        pending, buffered = [first], first.num_rows
        for batch in rows:
            if buffered >= MERGE_ROWS or len(pending) >= MERGE_BATCHES:
                writer.write_table(pa.Table.from_batches(pending, schema))
                pending, buffered = [], 0
            pending.append(batch)
            buffered += batch.num_rows
        writer.write_table(pa.Table.from_batches(pending, schema))
    return digest[0]


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)
    digest_path(path).unlink(missing_ok=True)


def resume_command(store: Store, *extra: str) -> str:
    """The command that continues (and repairs) a sweep from its recorded config (its ``config.yaml``, else its
    directory: ``sweep run`` then takes the config its manifest recorded)."""
    config = store.meta / "config.yaml"
    given = config if config.is_file() else store.meta
    return shlex.join(["pdors", "sweep", "run", str(given), "--out", str(store.root), "--resume", *extra])


def manifest_of(store: Store) -> Manifest:
    """The sweep's manifest (the one reader of ``manifest.json``)."""
    path = store.meta / "manifest.json"
    if store.sweep_id is None or not path.exists():
        known = sorted(p.name for p in (store.root / "sweeps").glob("*")) if (store.root / "sweeps").exists() else []
        raise SweepError(f"no sweep {store.sweep_id!r} under {store.root} (known: {', '.join(known) or 'none'})")
    try:
        return parse_manifest(json.loads(path.read_bytes()))
    except (ValueError, RecursionError) as e:  # a manifest of older code cut short by a full disk, or edited
        why = shorten(" ".join(str(e).split()), 200)
        raise SweepError(f"{path} is damaged ({why}); rebuild it with `{resume_command(store)}`") from None
    except OSError as e:
        raise SweepError(f"{path} is unreadable ({e.strerror})") from None


def count(manifest: Manifest, recorded: dict[str, str]) -> Counts:
    """A sweep's run counts by status, from ``recorded`` (run_id -> status)."""
    states = [recorded.get(run_id) for run_id in manifest.run_ids]
    return Counts(
        total=manifest.tasks,
        ok=states.count("ok"),
        failed=states.count("failed"),
        lost=states.count("lost"),
        invalid=states.count("invalid"),
    )


def recorded_runs(store: Store, manifest: Manifest) -> tuple[Counts, pd.DataFrame]:
    """Run counts by status and the recorded runs (a DataFrame) in plan order."""
    try:
        runs = store.read("runs").to_pandas()
    except ValueError as e:  # a string that is not UTF-8 in a file written before digests (read unchecked)
        raise RecordDamaged(f"a runs file under {store.root} cannot be decoded ({shorten(str(e), 200)})") from None
    if len(runs):  # plan order (grid, policy, seed), not file order, for tables and plots
        order = {run_id: k for k, run_id in enumerate(manifest.run_ids)}
        runs = runs.sort_values("run_id", key=lambda ids: ids.map(order)).reset_index(drop=True)
    return count(manifest, dict(zip(runs["run_id"], runs["status"], strict=False))), runs
