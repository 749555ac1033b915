"""The Parquet record of sweeps: the source of truth that MLflow, summaries and plots are derived from.

Layout under the output root::

    runs/sweep_id=<id>/<run_id>.parquet     one row per run (params, metrics, status, provenance)
    jobs/sweep_id=<id>/<run_id>.parquet     one row per job per run
    schedules/sweep_id=<id>/<run_id>.parquet   with ``schedules: true``: one row per (job, machine, slot) used
    sweeps/<id>/                            manifest.json, config.yaml, summary.{csv,md}, plots/

Each file is written under a hidden temp name and moved into place with ``os.replace`` (readers skip hidden
files), the jobs file before the runs file: a run is recorded iff its ``runs`` file exists, and as files are
named by run id a re-run replaces rather than duplicates. Every ``runs`` file of one sweep has the same schema,
derived from the config dataclasses' annotations, so plain pyarrow/pandas/DuckDB reads of a partition work.
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

from pdors.policies import policy_module
from pdors.workload import WorkloadConfig

from .columns import (IDENTITY, JOBS_SCHEMA, SCHEDULES_SCHEMA, JSON_METRICS, JSON_SOURCES, METRICS, PROVENANCE, SUMMARY_IDENTITY,
                      arrow_type)
from .schema import OptConfig
from .tasks import Outcome, Plan, Task

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
PARTITIONING = ds.partitioning(pa.schema([("sweep_id", pa.string())]), flavor="hive")

def _columns(cls, prefix: str) -> list[tuple[str, pa.DataType]]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        name = f"{prefix}.{f.name}"
        tp = hints[f.name]
        out += _columns(tp, name) if dataclasses.is_dataclass(tp) else [(name, arrow_type(tp))]
    return out


def runs_schema(plan: Plan) -> pa.Schema:
    """Identity, instance params, each swept policy's params (``<policy>.<param>``), metrics, provenance."""
    params = [c for p in plan.config.policies for c in _columns(policy_module(p).Config, p)]
    opt = []
    if plan.config.opt is not None:
        opt = [*_columns(OptConfig, "opt"), ("opt.status", pa.string()), ("opt.result", pa.string())]
    return pa.schema([*IDENTITY, *_columns(WorkloadConfig, "workload"), *params, *opt, *METRICS,
                      *[(c, pa.string()) for c in JSON_METRICS], *PROVENANCE])


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
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


class Store:
    """One sweep's files under ``root``."""

    def __init__(self, root: str | Path, sweep_id: str):
        self.root, self.sweep_id = Path(root), sweep_id
        self.meta = self.root / "sweeps" / sweep_id

    def part(self, table: str) -> Path:
        return self.root / table / f"sweep_id={self.sweep_id}"

    def recorded(self) -> dict[str, str]:
        """run_id -> status of every recorded run."""
        if not any(self.part("runs").glob("[!._]*.parquet")):
            return {}
        t = ds.dataset(self.part("runs"), format="parquet").to_table(columns=["run_id", "status"])
        return dict(zip(t["run_id"].to_pylist(), t["status"].to_pylist()))

    @contextmanager
    def lock(self) -> Iterator[None]:
        """One writer per sweep; the OS drops the lock when the process dies, even by SIGKILL."""
        self.meta.mkdir(parents=True, exist_ok=True)
        with open(self.meta / ".lock", "w") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise RuntimeError(f"sweep {self.sweep_id} is being run by another process") from None
            for table in TABLES:   # temp files of a writer that died mid-write
                for tmp in self.part(table).glob(".tmp-*"):
                    tmp.unlink()
            yield

    def write(self, task: Task, outcome: Outcome, schema: pa.Schema, git_commit: str) -> None:
        jobs = job_rows(task, outcome)
        if jobs:
            _write_atomic(to_table(jobs, JOBS_SCHEMA), self.part("jobs") / f"{task.run_id}.parquet")
        if outcome.schedule is not None:
            ident = {"run_id": task.run_id, "policy": task.policy, "seed": task.seed, "point_id": task.point_id}
            cells = len(outcome.schedule["job"])
            columns = {**{k: [v] * cells for k, v in ident.items()}, **outcome.schedule}
            _write_atomic(pa.table(columns, schema=SCHEDULES_SCHEMA),
                          self.part("schedules") / f"{task.run_id}.parquet")
        _write_atomic(to_table([run_row(task, outcome, git_commit)], schema),
                      self.part("runs") / f"{task.run_id}.parquet")

    def read(self, table: str = "runs") -> pa.Table:
        return read(self.root, table, self.sweep_id)


def read(root: str | Path, table: str = "runs", sweep_id: str | None = None) -> pa.Table:
    """A table of one sweep or of all, ``sweep_id`` a string column. Sweeps may differ in their param
    columns (their policies), so the schema is the union of one file's schema per sweep."""
    base = Path(root) / table
    parts = [base / f"sweep_id={sweep_id}"] if sweep_id else sorted(base.glob("sweep_id=*"))
    files = [next(p.glob("[!._]*.parquet"), None) for p in parts]
    schemas = [pq.read_schema(f) for f in files if f is not None]
    if not schemas:
        return pa.table({"sweep_id": pa.array([], pa.string())})
    schema = pa.unify_schemas([*schemas, PARTITIONING.schema])
    dataset = ds.dataset(base, format="parquet", schema=schema, partitioning=PARTITIONING)
    return dataset.to_table(filter=(ds.field("sweep_id") == sweep_id) if sweep_id else None)


def manifest_of(store: Store) -> dict:
    path = store.meta / "manifest.json"
    if not path.exists():
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
