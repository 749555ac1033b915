"""The policy interface: a policy is one decision method over a read-only view of the cluster state.

Two kinds serve every scheduler in the project:

* :class:`PlanningPolicy` (PD-ORS, OASiS): called once per arriving job, in arrival order; it admits the job
  with a complete future schedule (a :class:`JobPlan`) or rejects it (returns ``None``).
* :class:`SlotPolicy` (FIFO, DRF, Dorm, ...): called once per slot; it returns this slot's allocation for the
  jobs that have arrived and are not complete.

Policies never see the validator; the simulator executes what they return and the validator judges it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..config import JSON
from ..model import Instance
from ..workload import WorkloadConfig


class RunShape(Protocol):
    """What a policy's ``make(config, spec)`` may read of the run it serves: :class:`pdors.run.RunSpec`'s size,
    seed and workload (a protocol, so that the policies need not import the run module that imports them)."""

    @property
    def machines(self) -> int: ...
    @property
    def jobs(self) -> int: ...
    @property
    def slots(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def workload(self) -> WorkloadConfig: ...


@dataclass(frozen=True, kw_only=True)
class SlotView:
    """What a policy may look at in slot ``t`` (arrays are read-only).

    ``reserved[t, h, r]``: resources already committed in slot t (past slots: what ran; future slots: plans
    of admitted jobs). ``remaining[i]``: samples job i still needs, as measured by the simulator.
    ``admitted[i]``, ``completed[i]`` (slot or -1), ``pending``: arrived, admitted or not, not complete.
    """

    t: int
    instance: Instance
    reserved: np.ndarray
    remaining: np.ndarray
    admitted: np.ndarray
    completed: np.ndarray

    @property
    def pending(self) -> np.ndarray:
        return (self.instance.jobs.arrival <= self.t) & (self.completed < 0)

    def free(self, slots: int | slice = slice(None)) -> np.ndarray:
        """Residual capacity C_h^r - rho_h^r[t] per (machine, resource) of slot ``slots`` (an index), or per
        (slot, machine, resource) of a slice of slots: computed for those slots only."""
        free: np.ndarray = self.instance.cluster.capacity - self.reserved[slots]
        return free


@dataclass(kw_only=True)
class JobPlan:
    """A committed schedule for one job: ``workers[t, h]``, ``servers[t, h]`` over the whole horizon."""

    workers: np.ndarray
    servers: np.ndarray
    completion: int
    payoff: float = 0.0


@dataclass
class SlotAllocation:
    """One slot's allocation: ``workers[i, h]``, ``servers[i, h]`` for every job (zeros for idle ones)."""

    workers: np.ndarray
    servers: np.ndarray


class Policy:
    """Common interface of all policies.

    ``restart_loss``: the fraction of a slot's samples a job loses when its placement changes after it has
    run (checkpoint-restart); the simulator applies it and the validator re-derives it from the schedule.
    Only policies that model a restart cost (Pollux) set it; 0 leaves placement changes free.
    """

    name = "policy"
    restart_loss: float = 0.0

    def reset(self, instance: Instance, seed: int) -> None:
        """Prepare for a new run on ``instance``; ``seed`` drives any randomness of the policy."""

    def summary(self) -> JSON:
        """Policy-specific statistics of the run just simulated (JSON-friendly)."""
        return {}


class PlanningPolicy(Policy):
    def plan(self, job: int, view: SlotView) -> JobPlan | None:
        raise NotImplementedError


class SlotPolicy(Policy):
    def allocate(self, view: SlotView) -> SlotAllocation:
        raise NotImplementedError
