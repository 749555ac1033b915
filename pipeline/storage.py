"""The Parquet record of sweeps: the source of truth that MLflow, summaries and plots are derived from.

Layout under the output root::

    runs/<run_id>.parquet     one row per run (params, metrics, status, provenance)
    jobs/<run_id>.parquet     one row per job per run
    schedules/<run_id>.parquet   with ``schedules: true``: one row per (job, machine, slot) used
    sweeps/<id>/              manifest.json (the run ids the sweep asked for), config.yaml, summary.{csv,md}, plots/
    .lock                     one writer per output root

A run is identified by what determines its result (:mod:`pipeline.grid`), not by the sweep that asked for it:
every sweep under one root shares the run files, so a run is computed once and the folder holds it once; a
sweep's view is the files its manifest lists. Each file is written under a hidden temp name (``.tmp-*``, which
readers skip) and moved into place with ``os.replace``, the jobs file before the runs file: a run is recorded
iff its ``runs`` file exists. Every ``runs`` file has the same schema (:data:`RUNS_SCHEMA`: the parameters of
every registered policy, null where another policy ran), so plain pandas/DuckDB/Polars reads of the folder work.
"""
from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from pdors.policies import POLICIES, policy_module
from pdors.workload import WorkloadConfig

from .columns import (IDENTITY, JOBS_SCHEMA, JSON_METRICS, JSON_SOURCES, METRICS, PROVENANCE, SCHEDULES_SCHEMA,
                      SUMMARY_IDENTITY, arrow_type)
from .schema import OptConfig
from .tasks import Outcome, Task

class SweepError(ValueError):
    """A sweep cannot be started or read as asked (reported as one line, exit status 2)."""


@dataclass(frozen=True)
class Counts:
    total: int
    ok: int
    failed: int
    lost: int

    @property
    def remaining(self) -> int:
        return self.total - self.ok - self.failed - self.lost


TABLES = ("runs", "jobs", "schedules")
TMP_PREFIX = ".tmp-"

def _columns(cls, prefix: str) -> list[tuple[str, pa.DataType]]:
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
    params = [c for p in POLICIES for c in _columns(policy_module(p).Config, p)]
    opt = [*_columns(OptConfig, "opt"), ("opt.status", pa.string()), ("opt.result", pa.string())]
    return pa.schema([*IDENTITY, *_columns(WorkloadConfig, "workload"), *params, *opt, *METRICS,
                      *[(c, pa.string()) for c in JSON_METRICS], *PROVENANCE])


RUNS_SCHEMA = _runs_schema()
SCHEMAS = {"runs": RUNS_SCHEMA, "jobs": JOBS_SCHEMA, "schedules": SCHEDULES_SCHEMA}


def flatten(tree: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in tree.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        out.update(flatten(v, key) if isinstance(v, dict) and v else {key: v})
    return out


def _utc(t: float | None) -> datetime | None:
    return None if t is None else datetime.fromtimestamp(t, tz=timezone.utc)


def run_row(task: Task, outcome: Outcome, git_commit: str) -> dict:
    spec = task.spec
    row = {"run_id": task.run_id, "kind": task.kind, "policy": task.policy, "point_id": task.point_id,
           "instance_id": task.instance_id, "seed": task.seed, "machines": spec["machines"],
           "jobs": spec["jobs"], "slots": spec["slots"], **flatten(spec["workload"], "workload"),
           "status": outcome.status, "error": outcome.error, "code_version": outcome.code_version,
           "git_commit": git_commit, "node_id": outcome.node_id, "node_ip": outcome.node_ip,
           "worker_pid": outcome.worker_pid, "started_at": _utc(outcome.started_at),
           "finished_at": _utc(outcome.finished_at), "spec": json.dumps(spec, sort_keys=True)}
    result = outcome.result or {}
    if task.kind == "sim":
        row.update(flatten(spec["params"], task.policy))
        row.update(flatten({k: v for k, v in result.items() if k not in SUMMARY_IDENTITY + JSON_SOURCES}))
        if result:
            row.update(violations=len(result["violations"]), violation_detail=result["violations"],
                       policy_stats=result["policy_stats"])
    else:
        row.update(flatten(spec["opt"], "opt"))
        proven = result.get("proven_optimal", False)   # a non-optimal result is never reported as OPT
        row.update({"total_utility": result.get("objective") if proven else None, "opt.status": result.get("status"),
                    "opt.result": result or None})
    return row


def job_rows(task: Task, outcome: Outcome) -> list[dict]:
    if task.kind != "sim" or outcome.result is None:
        return []
    ident = {"run_id": task.run_id, "policy": task.policy, "seed": task.seed, "point_id": task.point_id,
             "instance_id": task.instance_id}
    return [{**ident, **job} for job in outcome.result["jobs"]]


def to_table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    """Rows -> a table of exactly ``schema``: missing columns are null, JSON columns are serialised."""
    cols = {}
    for f in schema:
        values = [r.get(f.name) for r in rows]
        if f.type == pa.string():
            values = [v if v is None or isinstance(v, str) else json.dumps(v, sort_keys=True) for v in values]
        cols[f.name] = pa.array(values, type=f.type)
    return pa.table(cols, schema=schema)


def _write_atomic(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{TMP_PREFIX}{os.getpid()}-{path.name}")
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    finally:   # a failed write (a full disk) leaves no partial file behind
        tmp.unlink(missing_ok=True)


@dataclass(frozen=True)
class Damage:
    run_id: str
    problem: str


def _run_files(root: Path, table: str) -> list[Path]:
    return sorted(p for p in (root / table).glob("*.parquet") if not p.name.startswith((".", "_")))


def _read(path: Path, columns: list[str]) -> pa.Table | None:
    """Columns of one file, or None if it cannot be read as such (truncated, not Parquet, another table)."""
    try:
        return pq.read_table(path, columns=columns)
    except (OSError, pa.ArrowException, KeyError):
        return None


def _read_ids(path: Path) -> list[str] | None:
    t = _read(path, ["run_id"])
    return None if t is None else t["run_id"].to_pylist()


class Store:
    """The record under ``root``, seen from sweep ``sweep_id`` (its manifest lists the runs it asked for)."""

    def __init__(self, root: str | Path, sweep_id: str | None = None):
        self.root, self.sweep_id = Path(root), sweep_id
        self.meta = self.root / "sweeps" / (sweep_id or "")

    def part(self, table: str) -> Path:
        return self.root / table

    def path(self, table: str, run_id: str) -> Path:
        return self.root / table / f"{run_id}.parquet"

    def recorded(self) -> dict[str, str]:
        """run_id -> status of every run recorded under the root (any sweep's); a file that cannot be read or
        holds another run than its name says is not a record (the next run replaces it)."""
        out = {}
        for f in _run_files(self.root, "runs"):
            t = _read(f, ["run_id", "status"])
            if t is not None and t["run_id"].to_pylist() == [f.stem]:
                out[f.stem] = t["status"][0].as_py()
        return out

    def verify(self, run_ids: list[str], jobs: dict[str, int]) -> list[Damage]:
        """Integrity of the records of ``run_ids`` that have a runs file: each readable and holding the run its
        name says; each ok simulation's jobs file present, readable, holding that run's ``jobs[run_id]`` rows
        and nothing else."""
        out = []
        for run_id in run_ids:
            path = self.path("runs", run_id)
            if not path.exists():
                continue
            t = _read(path, ["run_id", "status"])
            ids = None if t is None else t["run_id"].to_pylist()
            if ids is None:
                out.append(Damage(run_id, "runs file unreadable"))
            elif ids != [run_id]:
                out.append(Damage(run_id, f"runs file holds run {', '.join(ids) or 'none'}"))
            elif t["status"][0].as_py() == "ok" and run_id in jobs:
                path = self.path("jobs", run_id)
                held = _read_ids(path) if path.exists() else None
                if not path.exists():
                    out.append(Damage(run_id, "jobs file missing"))
                elif held is None:
                    out.append(Damage(run_id, "jobs file unreadable"))
                elif set(held) != {run_id} or len(held) != jobs[run_id]:
                    out.append(Damage(run_id, f"jobs file holds {len(held)} rows of run(s) "
                                              f"{', '.join(sorted(set(held))) or 'none'}, expected {jobs[run_id]} "
                                              f"of {run_id}"))
        return out

    @contextmanager
    def lock(self) -> Iterator[None]:
        """One writer per output root (sweeps share its run files); the OS drops the lock when the process dies,
        even by SIGKILL."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "w") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise RuntimeError(f"{self.root} is being written by another sweep; wait for it to finish") from None
            for table in TABLES:   # temp files of a writer that died mid-write
                for tmp in self.part(table).glob(TMP_PREFIX + "*"):
                    tmp.unlink()
            yield

    def write(self, task: Task, outcome: Outcome, git_commit: str) -> None:
        jobs = job_rows(task, outcome)
        if jobs:
            _write_atomic(to_table(jobs, JOBS_SCHEMA), self.path("jobs", task.run_id))
        if outcome.schedule is not None:
            ident = {"run_id": task.run_id, "policy": task.policy, "seed": task.seed, "point_id": task.point_id}
            cells = len(outcome.schedule["job"])
            columns = {**{k: [v] * cells for k, v in ident.items()}, **outcome.schedule}
            _write_atomic(pa.table(columns, schema=SCHEDULES_SCHEMA), self.path("schedules", task.run_id))
        _write_atomic(to_table([run_row(task, outcome, git_commit)], RUNS_SCHEMA), self.path("runs", task.run_id))

    def read(self, table: str = "runs") -> pa.Table:
        """The sweep's view: the recorded runs its manifest lists, with a ``sweep_id`` column."""
        ids = manifest_of(self)["run_ids"]
        t = read(self.root, table, ids)
        if table == "runs":   # a file holding another run than its name says (status reports it) counts once
            seen: set = set()
            t = t.filter(pa.array([not (r in seen or seen.add(r)) for r in t["run_id"].to_pylist()]))
        return t.append_column("sweep_id", pa.array([self.sweep_id] * len(t), pa.string()))


def read(root: str | Path, table: str = "runs", run_ids: list[str] | None = None) -> pa.Table:
    """Every recorded run under ``root`` (each once), or those of ``run_ids`` that are recorded; files written
    before a column existed read it as null."""
    files = _run_files(Path(root), table)
    if run_ids is not None:
        wanted = set(run_ids)
        files = [f for f in files if f.stem in wanted]
    try:
        t = ds.dataset(files, format="parquet", schema=SCHEMAS[table]).to_table()
    except (OSError, pa.ArrowException):   # a damaged file (`pdors sweep status` names it): read the others
        files = [f for f in files if _read_ids(f) is not None]
        t = ds.dataset(files, format="parquet", schema=SCHEMAS[table]).to_table()
    return t


def manifest_of(store: Store) -> dict:
    path = store.meta / "manifest.json"
    if store.sweep_id is None or not path.exists():
        known = sorted(p.name for p in (store.root / "sweeps").glob("*")) if (store.root / "sweeps").exists() else []
        raise SweepError(f"no sweep {store.sweep_id!r} under {store.root} (known: {', '.join(known) or 'none'})")
    return json.loads(path.read_text())


def recorded_runs(store: Store, manifest: dict) -> tuple[Counts, pd.DataFrame]:
    """Run counts by status and the recorded runs (a DataFrame) in plan order."""
    runs = store.read("runs").to_pandas()
    status = runs["status"].value_counts() if len(runs) else {}
    if len(runs):   # plan order (grid, policy, seed), not file order, for tables and plots
        order = {run_id: k for k, run_id in enumerate(manifest["run_ids"])}
        runs = runs.sort_values("run_id", key=lambda ids: ids.map(order)).reset_index(drop=True)
    return Counts(manifest["tasks"], *(int(status.get(s, 0)) for s in ("ok", "failed", "lost"))), runs
