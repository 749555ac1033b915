"""The run summary: what one run reports, read by the CLI, the comparisons, the sweep record and its
summaries. Every total comes from the validator. Storage derives its metric columns from these fields
(``pipeline.spec.columns``), so a metric added here gets a typed column there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .compact import compact_repr
from .config import JSON, to_dict
from .premise import Premise


@dataclass(frozen=True)
class Latency:
    """Decision latency in milliseconds: one decision per job (planning policies) or per slot (slot policies)."""

    p50: float
    p99: float
    count: int


@dataclass(frozen=True, kw_only=True)
class JobOutcome:
    """One job's fate under the validator; ``completion`` None for a job that did not finish."""

    job: int
    arrival: int
    admitted: bool
    completion: int | None
    utility: float
    workload: float
    samples_processed: float
    sensitivity: int


@dataclass(frozen=True, kw_only=True)
class RunSummary:
    """Identity (``policy`` .. ``slots``), the validator's totals, timings, the policy's own statistics (its
    ``summary()``, kept whole under ``policy_stats``), provenance and the per-job outcomes."""

    policy: str
    seed: int
    machines: int
    num_jobs: int
    slots: int
    total_utility: float
    schedule_digest: str  # hash of the realised allocations: equal runs, equal digest
    admitted: int
    completed: int
    rejected: int
    median_training_time: float  # slots; an incomplete job counts as T (paper Fig. 9)
    offered_load: dict[str, float]  # demand / capacity over the horizon (pdors.load.LOAD_VARIANTS)
    fluid_completable: int  # an upper bound on the jobs any schedule completes (pdors.load)
    utility_ceiling: float  # sum of u_i at each job's fastest schedule alone: no schedule earns more (pdors.solo)
    later_than_solo_fastest: int  # completed jobs that finished after their fastest schedule alone would
    utilisation: dict[str, float]  # resource -> used / (capacity x T)
    violations: list[dict[str, Any]]  # the validator's findings, ``Violation.as_dict()``
    decision_latency_ms: Latency  # wall clock: includes waiting for a core on a loaded machine
    decision_cpu_ms: Latency  # the same decisions in the thread's CPU time: comparable across machine loads
    policy_stats: dict[str, Any]
    wall_s: float
    code_version: str
    spec: dict[str, Any]  # the resolved RunSpec: ``run(spec)`` reproduces the run
    jobs: list[JobOutcome] = field(default_factory=list)
    # Definition 1 replayed on the run and Theorems 5-6's bound (pdors.premise; all None for non-PD-ORS policies)
    premise: Premise = field(default_factory=Premise)

    def __repr__(self) -> str:
        return compact_repr(self)

    def to_dict(self) -> JSON:
        """Plain JSON-friendly data (``pdors simulate --json``, the sweep's task results): what
        ``dataclasses.asdict`` gives (tests/test_run_summary_dict.py), in a quarter of its time (no deep copies;
        every value here is a scalar, a list, a dict or a dataclass)."""
        plain: JSON = to_dict(self)
        return plain
