"""The sweep's vocabulary: a task (one run to do), the plan (a sweep's tasks) and a task's outcome.

A leaf module: the grid that makes tasks, the executor that runs them and the storage that records them all
import it, and it imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .schema import SweepConfig

OPT_POLICY = "opt"  # the ``policy`` of offline-optimum rows


@dataclass(slots=True)  # not frozen: a frozen init costs five times more, and a plan may hold a million tasks
class Task:
    run_id: str
    kind: Literal["sim", "opt"]
    policy: str
    point_id: str  # (grid point, policy): runs that differ only in the seed; one MLflow child each
    instance_id: str  # runs on the same generated instance (OPT rows join on it)
    seed: int
    spec: dict  # resolved spec as plain data; for "sim", ``pdors.run.run(spec)`` reproduces the run
    axes: dict  # grid axis -> value for this task (axes of other policies absent)


@dataclass(frozen=True, kw_only=True)
class Plan:
    sweep_id: str
    config: SweepConfig
    axes: list[str]
    tasks: list[Task]


@dataclass(frozen=True)
class Outcome:
    status: str  # ok | failed | lost
    error: str | None
    result: dict | None  # run summary ("sim") or offline_opt result dict ("opt")
    code_version: str | None
    node_id: str | None
    node_ip: str | None
    worker_pid: int | None
    started_at: float
    finished_at: float
    schedule: dict | None = None  # with ``schedules``: the allocations as columns (pdors.schedule_io.rows)
