"""One job's side of Algorithm 4: its constants (:class:`JobShape`), its workload levels and what they need
alone, the same in every slot state (:class:`LevelGrid`), and an allocation for one level (:class:`Option`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..solo import COVER_RTOL, workers_for

FIT_ATOL = 1e-9  # a task fits a machine's room up to this


@dataclass(frozen=True, kw_only=True)
class JobShape:
    """The per-job constants Algorithm 4 needs. ``gamma``: workers per PS; ``gamma_internal``: the thesis's
    workers per PS at the internal rate where it differs (then a rounded external solution that lands on one
    machine must meet it too); ``servers_at_most_workers``: the thesis's (3.5)."""

    per_sample_internal: float
    per_sample_external: float
    batch: int
    gamma: float
    worker_demand: np.ndarray
    ps_demand: np.ndarray
    gamma_internal: float | None = None
    servers_at_most_workers: bool = False

    @property
    def integer_covers(self) -> bool:
        """The thesis's Algorithm 4 step 8: the LP's right-hand sides are the integers m_w = ceil(D) workers and
        m_p = ceil(m_w / gamma) PSs (= ceil(m_w b^(e) / B_i) by (3.4)) instead of D and the ratio row."""
        return self.gamma_internal is not None

    def ps_cover(self, workers: float) -> float:
        """m_p for a cover of ``workers`` (integer covers only)."""
        return float(math.ceil(workers / self.gamma - 1e-12))

    def servers_allowed(self, workers: np.ndarray, servers: np.ndarray) -> np.ndarray | bool:
        """(3.5) where it applies: no more PSs than workers."""
        return servers <= workers if self.servers_at_most_workers else True


@dataclass(kw_only=True)
class Option:
    """One slot's allocation for one level: machine indices with their worker and PS counts."""

    cost: float
    machines: np.ndarray
    workers: np.ndarray
    servers: np.ndarray
    internal: bool


class LevelGrid(NamedTuple):
    """What :func:`slot_costs` needs of a job's workload levels alone, the same in every slot state (so computed
    once per job, :func:`level_grid`): the internal case's workers, PSs (int64) and resources [Q, R] per level,
    which levels it allows at all (w <= F and (3.5), level 0 not), the external cover D per level, and the covers
    and PS counts the separable bound is evaluated at (D, then ceil(D) and its PSs, unless ``reject_on_failure``)."""

    levels: np.ndarray
    workers: np.ndarray
    servers: np.ndarray
    need: np.ndarray
    allowed: np.ndarray
    demand: np.ndarray
    covers: np.ndarray
    cover_servers: np.ndarray
    reject_on_failure: bool


def level_grid(job: JobShape, levels: np.ndarray, reject_on_failure: bool = False) -> LevelGrid:
    """The :class:`LevelGrid` of ``job`` at workload ``levels`` (samples, levels[0] = 0)."""
    w_int = workers_for(levels, job.per_sample_internal)
    s_int = np.ceil(w_int / (job.gamma if job.gamma_internal is None else job.gamma_internal))
    need = w_int[:, None] * job.worker_demand + s_int[:, None] * job.ps_demand  # [Q, R]
    allowed = (w_int <= job.batch) & job.servers_allowed(w_int, s_int)
    allowed[0] = False
    demand = levels * job.per_sample_external * (1.0 - COVER_RTOL)  # the cover D of (26), as workers_for
    if job.integer_covers:
        demand = np.ceil(demand)  # m_w (thesis Algorithm 4 step 8); a rounding needs that many workers anyway
    if reject_on_failure:
        covers, servers = demand, demand / job.gamma
    else:  # a rounding has integral counts: ceil(D) workers and the PSs they need (one bound call for both covers)
        workers = np.ceil(demand)
        covers = np.concatenate([demand, workers])
        servers = np.concatenate([demand / job.gamma, np.ceil(workers / job.gamma - 1e-9)])
    return LevelGrid(
        levels=levels,
        workers=w_int.astype(np.int64),
        servers=s_int.astype(np.int64),
        need=need,
        allowed=allowed,
        demand=demand,
        covers=covers,
        cover_servers=servers,
        reject_on_failure=reject_on_failure,
    )
