"""The public interface for writing a policy outside this package (docs/WRITE_A_POLICY.md).

A policy is a class, subclass of :class:`PlanningPolicy` (``plan(job, view)``: once per arriving job, a complete
:class:`JobPlan` or ``None`` to reject) or :class:`SlotPolicy` (``allocate(view)``: once per slot, a
:class:`SlotAllocation` for every job). It may declare ``Config``, a dataclass of its parameters (built from the
sweep config's ``policies.<name>`` section and checked like every config: a bad value is reported as
``policies.<name>.<field>``; ``check(self) -> list[str]`` adds value checks), and is constructed once per run as
``Policy(config, spec)`` (``spec``: a :class:`RunShape`). Its lifetime is one run: ``reset(instance, seed)`` comes
first, then the decisions in slot order, then ``summary()`` (its own statistics, JSON-friendly). It reads only what
it is given: the :class:`SlotView` (read-only arrays; ``free(t)`` the residual capacity) and the
:class:`Instance`. The simulator executes what it returns unrepaired and the validator judges every schedule.

Versioning: the names in ``__all__`` are the public interface, at :data:`API_VERSION` (major, minor). A change
that keeps every policy written against it working (a new name, a new optional field or keyword) raises the minor
number; a change that may break one (a name removed or renamed, a signature or an array's shape changed) raises
the major number and is listed in docs/WRITE_A_POLICY.md. Anything else under ``pdors`` may change at any time.
"""

from __future__ import annotations

from .config import JSON, bounded
from .model import Cluster, Instance, Jobs
from .policies.base import JobPlan, PlanningPolicy, Policy, RunShape, SlotAllocation, SlotPolicy, SlotView
from .policies.external import NoConfig
from .workload import WorkloadConfig

API_VERSION: tuple[int, int] = (1, 0)

__all__ = [
    "API_VERSION",
    "JSON",
    "Cluster",
    "Instance",
    "JobPlan",
    "Jobs",
    "NoConfig",
    "PlanningPolicy",
    "Policy",
    "RunShape",
    "SlotAllocation",
    "SlotPolicy",
    "SlotView",
    "WorkloadConfig",
    "bounded",
]
