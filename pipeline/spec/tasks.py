"""The sweep's vocabulary: a task (one run to do), the plan (a sweep's tasks) and a task's outcome.

A leaf module: the grid that makes tasks, the executor that runs them and the storage that records them all
import it, and it imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Required, TypedDict, cast

if TYPE_CHECKING:  # `sweep status` imports the tasks, not the config schema
    from pipeline.spec.schema import SweepConfig

OPT_POLICY = "opt"  # the ``policy`` of offline-optimum rows


class TaskSpec(TypedDict, total=False):
    """A task's resolved spec as plain data, recorded as JSON in its Parquet row (``spec``). Every task has the
    instance (``machines``, ``jobs``, ``slots``, ``seed``, ``workload``); a simulation also ``policy``, ``params``
    and, for an external policy, ``origin`` (a :class:`pdors.run.RunSpec` as data: ``pdors.run.run(spec)``
    reproduces the run), an OPT task ``opt`` (its :class:`pipeline.spec.schema.OptConfig` settings)."""

    machines: Required[int]
    jobs: Required[int]
    slots: Required[int]
    seed: Required[int]
    workload: Required[dict[str, Any]]
    policy: str
    params: dict[str, Any]
    origin: dict[str, str]  # an external policy's (pdors.policies.external.PolicyOrigin)
    instance_file: str  # the instance read from this file (and its SHA-256), not generated
    instance_digest: str
    opt: dict[str, Any]


def same_but_seed(a: TaskSpec, b: TaskSpec) -> bool:
    """Whether two specs differ in their seed alone (a grid point's runs): what a spec determines apart from the
    seed is then worked out once for all of them (nested values of one point's specs are shared objects, and
    compare at once)."""
    x, y = cast("dict[str, Any]", a), cast("dict[str, Any]", b)
    return x.keys() == y.keys() and all(x[k] == y[k] for k in x if k != "seed")


ResultData = dict[str, Any]  # a run's summary (pdors.run_summary.RunSummary.to_dict) or OPT's result (pipeline.opt)


@dataclass(slots=True, kw_only=True)  # not frozen: a frozen init costs five times more, and a plan may hold 1e6
class Task:
    run_id: str
    kind: Literal["sim", "opt"]
    policy: str
    point_id: str  # (grid point, policy): runs that differ only in the seed; one MLflow child each
    instance_id: str  # runs on the same generated instance (OPT rows join on it)
    seed: int
    spec: TaskSpec
    axes: dict[str, Any]  # grid axis -> value for this task (axes of other policies absent)


@dataclass(frozen=True, kw_only=True)
class Plan:
    sweep_id: str
    config: SweepConfig
    axes: list[str]
    tasks: list[Task]


@dataclass(frozen=True, kw_only=True)
class Outcome:
    status: str  # ok | failed | invalid (the validator rejected its schedule) | lost
    error: str | None
    result: ResultData | None
    code_version: str | None
    node_id: str | None
    node_ip: str | None
    worker_pid: int | None
    started_at: float
    finished_at: float
    # with ``schedules``: the allocations as columns (pdors.schedule_io.rows, as lists)
    schedule: dict[str, list[Any]] | None = None
