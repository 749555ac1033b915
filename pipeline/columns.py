"""The columns of the sweep record: the run metrics, identity, provenance and per-job columns.

A leaf module: storage writes these columns, the summaries, figures and config checks read their names.
"""
from __future__ import annotations

import pyarrow as pa

from pdors.model import RESOURCES

# Summary metrics (pdors.run.summarise) as typed columns; nested keys are flattened with dots.
METRICS: list[tuple[str, pa.DataType]] = [
    ("total_utility", pa.float64()), ("admitted", pa.int64()), ("completed", pa.int64()),
    ("rejected", pa.int64()), ("median_training_time", pa.float64()),
    *[(f"utilisation.{r}", pa.float64()) for r in RESOURCES],
    ("violations", pa.int64()), ("decision_latency_ms.p50", pa.float64()),
    ("decision_latency_ms.p99", pa.float64()), ("decision_latency_ms.count", pa.int64()),
    ("rounding.attempts_mean", pa.float64()), ("rounding.infeasible_solves", pa.int64()),
    ("wall_s", pa.float64()),
]
JSON_METRICS = ("violation_detail", "policy_stats")
# Summary keys that are not metrics: identity (already columns), the spec, the per-job list.
SUMMARY_IDENTITY = ("policy", "seed", "machines", "num_jobs", "slots", "code_version", "spec", "jobs")
JSON_SOURCES = ("violations", "policy_stats")   # summary entries kept whole, as JSON text
# Columns that legitimately differ between two executions of the same run.
TIMING_COLUMNS = ("wall_s", "decision_latency_ms.p50", "decision_latency_ms.p99", "started_at", "finished_at",
                  "node_id", "node_ip", "worker_pid")

_TS = pa.timestamp("ms", tz="UTC")
IDENTITY: list[tuple[str, pa.DataType]] = [
    ("run_id", pa.string()), ("kind", pa.string()), ("policy", pa.string()), ("point_id", pa.string()),
    ("instance_id", pa.string()), ("seed", pa.int64()), ("machines", pa.int64()), ("jobs", pa.int64()),
    ("slots", pa.int64()),
]
PROVENANCE: list[tuple[str, pa.DataType]] = [
    ("status", pa.string()), ("error", pa.string()), ("code_version", pa.string()), ("git_commit", pa.string()),
    ("node_id", pa.string()), ("node_ip", pa.string()), ("worker_pid", pa.int64()), ("started_at", _TS),
    ("finished_at", _TS), ("spec", pa.string()),
]
JOBS_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("policy", pa.string()), ("seed", pa.int64()), ("point_id", pa.string()),
    ("instance_id", pa.string()), ("job", pa.int64()), ("arrival", pa.int64()), ("admitted", pa.bool_()),
    ("completion", pa.int64()), ("utility", pa.float64()), ("workload", pa.float64()),
    ("samples_processed", pa.float64()), ("sensitivity", pa.int64()),
])

# Figure metrics besides the run metrics (METRICS): OPT / ALG with OPT proven, an upper bound on OPT
# (the proven OPT, else the solver's bound) / ALG, and numeric entries of a policy's own stats.
DERIVED_METRICS = ("ratio", "ratio_bound")
POLICY_STATS_PREFIX = "policy_stats."
