"""The columns of the sweep record: the run metrics, identity, provenance and per-job columns.

A leaf module: storage writes these columns, the summaries, figures and config checks read their names.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from typing import Any, Literal

import pyarrow as pa

from pdors.load import LOAD_VARIANTS
from pdors.model import RESOURCES
from pdors.run_summary import RunSummary
from pdors.schedule_io import COLUMNS as SCHEDULE_COLUMNS

JSON_METRICS = ("violation_detail", "policy_stats")
# Summary fields that are not metrics: identity (already columns), the spec, the per-job list, the schedule's
# digest (for comparing runs across machines, not a figure).
SUMMARY_IDENTITY = (
    "policy",
    "seed",
    "machines",
    "num_jobs",
    "slots",
    "code_version",
    "spec",
    "jobs",
    "schedule_digest",
)
JSON_SOURCES = ("violations", "policy_stats")  # summary entries kept whole, as JSON text
KEYED = {"utilisation": RESOURCES, "offered_load": LOAD_VARIANTS}  # dict fields: one column per key


def arrow_type(tp: Any) -> pa.DataType:
    """Column type for a config annotation; anything without a natural column type is stored as JSON text."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return arrow_type(next(a for a in args if a is not type(None)))
    if origin is Literal:
        return arrow_type(type(args[0]))
    if isinstance(tp, type) and issubclass(tp, enum.IntEnum):  # a named integer, stored as its number
        return pa.int64()
    if origin in (tuple, list):
        items = {a for a in args if a is not Ellipsis}
        return pa.list_(arrow_type(items.pop())) if len(items) == 1 else pa.string()
    return {bool: pa.bool_(), int: pa.int64(), float: pa.float64(), str: pa.string()}.get(tp, pa.string())


def _metric_columns() -> list[tuple[str, pa.DataType]]:
    """The run metrics as typed columns, from :class:`pdors.run_summary.RunSummary`: nested fields flattened with
    dots, ``utilisation`` one column per resource, ``offered_load`` one per variant, ``violations`` as a count
    (the detail is JSON text)."""
    hints = typing.get_type_hints(RunSummary)
    out: list[tuple[str, pa.DataType]] = []
    for f in dataclasses.fields(RunSummary):
        tp = hints[f.name]
        if f.name in SUMMARY_IDENTITY or f.name == "policy_stats":
            continue
        if f.name == "violations":
            out.append((f.name, pa.int64()))
        elif f.name in KEYED:
            out += [(f"{f.name}.{k}", arrow_type(typing.get_args(tp)[1])) for k in KEYED[f.name]]
        elif dataclasses.is_dataclass(tp):
            inner = typing.get_type_hints(tp)
            out += [(f"{f.name}.{g.name}", arrow_type(inner[g.name])) for g in dataclasses.fields(tp)]
        else:
            out.append((f.name, arrow_type(tp)))
    return out


METRICS = _metric_columns()
# Columns that legitimately differ between two executions of the same run.
TIMING_COLUMNS = (
    "wall_s",
    "decision_latency_ms.p50",
    "decision_latency_ms.p99",
    "decision_cpu_ms.p50",
    "decision_cpu_ms.p99",
    "started_at",
    "finished_at",
    "node_id",
    "node_ip",
    "worker_pid",
)

_TS = pa.timestamp("ms", tz="UTC")
ORIGIN_FIELDS = ("kind", "target", "distribution", "version", "digest")
IDENTITY: list[tuple[str, pa.DataType]] = [
    ("run_id", pa.string()),
    ("kind", pa.string()),
    ("policy", pa.string()),
    ("point_id", pa.string()),
    ("instance_id", pa.string()),
    ("seed", pa.int64()),
    ("machines", pa.int64()),
    ("jobs", pa.int64()),
    ("slots", pa.int64()),
    ("instance_file", pa.string()),  # where the instance was read from (null: generated)
]
PROVENANCE: list[tuple[str, pa.DataType]] = [
    ("status", pa.string()),
    ("error", pa.string()),
    ("code_version", pa.string()),
    ("git_commit", pa.string()),
    ("node_id", pa.string()),
    ("node_ip", pa.string()),
    ("worker_pid", pa.int64()),
    ("started_at", _TS),
    ("finished_at", _TS),
    ("spec", pa.string()),
    ("schedule_digest", pa.string()),  # a simulation's schedule hashed: equal runs on any machine, equal digests
    # where a simulation's policy came from (pdors.policies.external.PolicyOrigin): builtin | entry-point | import
    *[(f"policy_{k}", pa.string()) for k in ORIGIN_FIELDS],
]
SCHEDULES_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("policy", pa.string()),
        ("seed", pa.int64()),
        ("point_id", pa.string()),
        *SCHEDULE_COLUMNS,
    ]
)
JOBS_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("policy", pa.string()),
        ("seed", pa.int64()),
        ("point_id", pa.string()),
        ("instance_id", pa.string()),
        ("job", pa.int64()),
        ("arrival", pa.int64()),
        ("admitted", pa.bool_()),
        ("completion", pa.int64()),
        ("utility", pa.float64()),
        ("workload", pa.float64()),
        ("samples_processed", pa.float64()),
        ("sensitivity", pa.int64()),
    ]
)

# Figure metrics besides the run metrics (METRICS): OPT / ALG with OPT proven, an upper bound on OPT
# (the proven OPT, else the least of the solver's bound and the certified dual bound) / ALG, the best known
# schedule on the instance / ALG (the low end of the certified interval), and numeric entries of a policy's stats.
DERIVED_METRICS = ("ratio", "ratio_bound", "ratio_low")
POLICY_STATS_PREFIX = "policy_stats."
