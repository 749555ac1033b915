"""Dorm, the third baseline of the paper's Section V (Sun et al., "Towards Distributed Machine Learning in Shared
Clusters: A Dynamically-Partitioned Approach", SMARTCOMP 2017; paper ref. [12]).

Every slot, one MILP over the arrived, incomplete jobs chooses integer worker counts w_i <= F_i (eq. 4) and PS
counts s_i = ceil(w_i / gamma_i) to maximise resource utilisation, the mean over resource types of the fraction
of the cluster's capacity in use, subject to

* capacity: the jobs' total demand fits the cluster's aggregate free capacity (eq. 5 summed over machines);
* fairness: a job whose allocation is set in this slot (started or resized) has dominant share at most
  ``fairness_factor`` times the fair share 1 / n (n = arrived, incomplete jobs);
* adjustment overhead: at most ``max_adjustments`` of the jobs that ran in the previous slot get a different
  allocation (a resize or a stop); starting a waiting job is not an adjustment. Jobs left alone keep their
  previous placement, so the MILP is always feasible (keeping everything is a solution).

It is solved with HiGHS (highspy), single-threaded, within ``node_limit`` branch-and-bound nodes: a bound on
deterministic work, not on wall-clock time, so the result does not depend on the machine's speed or load. On a
hit the incumbent is used, or, if HiGHS has none, every running job keeps its allocation and no job starts; both
are counted in ``summary()``. Changed jobs are then placed round-robin; where per-machine fragmentation leaves a
job short of its count, it gets the most workers that fit (``placement_shortfall`` counts the workers lost)
[choice: the paper places Dorm's tasks by the MILP, a machine-level MILP is far too large per slot at H = 100].
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import highspy
import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse

from ..config import JSON, bounded
from ..highs_lp import highs_lp, new_highs
from ..model import Instance, Jobs
from ..portable_math import dot
from .base import RunShape, SlotAllocation, SlotPolicy, SlotView
from .placement import Placement, keep_unchanged, place_largest, slot_allocation


@dataclass(frozen=True, kw_only=True)
class Config:
    fairness_factor: float = 2.0
    max_adjustments: int = bounded(5, 0, 1_000, "re-solves per slot; each is a MILP")
    node_limit: int = bounded(10_000, 1, 10**7, "branch-and-bound nodes per MILP; more would not end")
    mip_rel_gap: float = 1e-2

    def check(self) -> list[str]:
        out = []
        if self.fairness_factor < 1:
            out.append(f"fairness_factor: must be >= 1 (the fair share must be allowed), got {self.fairness_factor}")
        if self.max_adjustments < 0:
            out.append(f"max_adjustments: must be >= 0, got {self.max_adjustments}")
        if self.node_limit < 1:
            out.append(f"node_limit: must be >= 1 branch-and-bound node, got {self.node_limit}")
        if not 0 <= self.mip_rel_gap < 1:
            out.append(f"mip_rel_gap: must lie in [0, 1), got {self.mip_rel_gap}")
        return out


class Dorm(SlotPolicy):
    name = "dorm"

    def __init__(self, config: Config):
        self.config = config
        self.highs = new_highs()
        self.highs.setOptionValue("mip_max_nodes", config.node_limit)
        self.highs.setOptionValue("mip_rel_gap", config.mip_rel_gap)

    def reset(self, instance: Instance, seed: int) -> None:
        self.total = instance.cluster.capacity.sum(axis=0)
        self.previous: dict[int, Placement] = {}
        self.cursor = 0
        self.stats = {
            "solves": 0,
            "node_limit_hits": 0,
            "no_incumbent": 0,
            "nodes_max": 0,
            "solve_seconds_max": 0.0,
            "solve_seconds_total": 0.0,
            "adjustments_max": 0,
            "placement_shortfall": 0,
        }

    def allocate(self, view: SlotView) -> SlotAllocation:
        inst, jobs = view.instance, view.instance.jobs
        active = np.flatnonzero(view.pending)
        previous = {i: p for i, p in self.previous.items() if view.pending[i]}
        prev_workers = np.array(
            [previous[i].workers.sum() if i in previous else 0 for i in active.tolist()], dtype=np.int64
        )
        free = view.free(view.t)
        target = self._solve(jobs, active, prev_workers, free.sum(axis=0))
        placements, changed = keep_unchanged(free, jobs, previous, active, target)
        for i, w in changed:
            if w == 0:
                continue
            p, self.cursor = place_largest(
                free, jobs.worker_demand[i], jobs.ps_demand[i], w, int(jobs.gamma[i]), self.cursor
            )
            self.stats["placement_shortfall"] += w - int(p.workers.sum())
            if p.workers.sum() > 0:
                placements[i] = p
                p.take_from(free, jobs.worker_demand[i], jobs.ps_demand[i])
        adjusted = sum(1 for i, _ in changed if i in previous)
        self.stats["adjustments_max"] = max(self.stats["adjustments_max"], adjusted)
        self.previous = placements
        return slot_allocation(inst.num_jobs, inst.num_machines, placements)

    def _solve(self, jobs: Jobs, active: np.ndarray, prev: np.ndarray, free_total: np.ndarray) -> np.ndarray:
        """Worker counts for ``active`` from the per-slot MILP over [w (n), s (n), z (one per job that ran)]."""
        n = len(active)
        if n == 0:
            return prev
        cfg = self.config
        alpha, beta = jobs.worker_demand[active], jobs.ps_demand[active]
        gamma, batch = jobs.gamma[active].astype(float), jobs.batch[active].astype(float)
        has = self.total > 0
        ran = np.flatnonzero(prev > 0)
        m = len(ran)
        z_of = np.full(n, -1)
        z_of[ran] = 2 * n + np.arange(m)
        rows: list[sparse.csr_matrix] = []
        lower: list[float] = []
        upper: list[float] = []

        def add(block: np.ndarray, lo: ArrayLike, hi: ArrayLike) -> None:
            rows.append(sparse.csr_matrix(block))
            lower.extend(np.broadcast_to(lo, block.shape[0]))
            upper.extend(np.broadcast_to(hi, block.shape[0]))

        eye = np.eye(n)
        # Capacity (eq. 5 aggregated over machines).
        add(np.hstack([alpha.T, beta.T, np.zeros((len(self.total), m))]), -np.inf, free_total)
        # s = ceil(w / gamma): 0 <= gamma s - w <= gamma - 1.
        add(np.hstack([-eye, eye * gamma, np.zeros((n, m))]), 0.0, gamma - 1.0)
        # Fairness: usage^r <= cap^r = factor / n * C^r, relaxed by M (1 - z) for jobs that may stay unchanged.
        cap = cfg.fairness_factor / n * self.total[has]
        for r, c in zip(np.flatnonzero(has), cap, strict=False):
            big = np.maximum(prev * alpha[:, r] + np.ceil(prev / gamma) * beta[:, r] - c, 0.0)
            z_cols = np.zeros((n, m))
            z_cols[ran, np.arange(m)] = big[ran]
            add(np.hstack([eye * alpha[:, r], eye * beta[:, r], z_cols]), -np.inf, c + np.where(z_of >= 0, big, 0.0))
        if m:
            pick = eye[ran]
            # z = 0 pins w to its previous value: w - F z <= prev and w + prev z >= prev.
            add(np.hstack([pick, np.zeros((m, n)), -np.diag(batch[ran])]), -np.inf, prev[ran])
            add(np.hstack([pick, np.zeros((m, n)), np.diag(prev[ran].astype(float))]), prev[ran], np.inf)
            add(np.hstack([np.zeros((1, 2 * n)), np.ones((1, m))]), -np.inf, float(cfg.max_adjustments))
        a = sparse.vstack(rows).tocsc()
        weight = np.zeros_like(self.total)
        weight[has] = 1.0 / (self.total[has] * has.sum())
        cost = -np.concatenate([dot(alpha, weight), dot(beta, weight), np.zeros(m)])  # maximise utilisation
        lp = highs_lp(
            cost,
            a.shape[0],
            (a.indptr, a.indices, a.data),
            np.array(lower, float),
            np.array(upper, float),
            col_upper=np.concatenate([batch, np.ceil(batch / gamma), np.ones(m)]),
            integer=True,
        )
        self.highs.clearModel()
        self.highs.passModel(lp)
        tick = time.perf_counter()
        self.highs.run()
        elapsed = time.perf_counter() - tick
        self.stats["solves"] += 1
        self.stats["solve_seconds_total"] += elapsed
        self.stats["solve_seconds_max"] = max(self.stats["solve_seconds_max"], elapsed)
        status, info = self.highs.getModelStatus(), self.highs.getInfo()
        self.stats["nodes_max"] = max(self.stats["nodes_max"], int(info.mip_node_count))
        has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
        if status == highspy.HighsModelStatus.kSolutionLimit:  # the node limit
            self.stats["node_limit_hits"] += 1
        elif status != highspy.HighsModelStatus.kOptimal:
            # HiGHS gives up (Unknown, Empty) on coefficients beyond its range (an instance with capacities of
            # 1e-300 or demands of 1e15): no answer, so no change, counted (the key only where it happens, so the
            # summaries of every other run stay as they were)
            self.stats["solver_gave_up"] = int(self.stats.get("solver_gave_up", 0)) + 1
            return prev
        if not has_solution:
            self.stats["no_incumbent"] += 1
            return prev
        out: np.ndarray = np.rint(np.asarray(self.highs.getSolution().col_value)[:n]).astype(np.int64)
        return out

    def summary(self) -> JSON:
        return dict(self.stats)


def make(config: Config, spec: RunShape) -> Dorm:
    return Dorm(config)
