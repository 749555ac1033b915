"""Greedy: each slot, the pending jobs with the least remaining work first, each on the one machine that gives
it the most workers (workers and PSs on one machine train at the internal link rate)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pdors.api import JSON, Instance, RunShape, SlotAllocation, SlotPolicy, SlotView, bounded


@dataclass(frozen=True)
class GreedyConfig:
    max_workers: int = bounded(16, 1, 10_000, "workers per job in a slot")


class Greedy(SlotPolicy):
    name = "greedy"
    Config = GreedyConfig

    def __init__(self, config: GreedyConfig, spec: RunShape) -> None:
        self.config = config
        self.placements = 0

    def reset(self, instance: Instance, seed: int) -> None:
        self.placements = 0

    def allocate(self, view: SlotView) -> SlotAllocation:
        jobs, shape = view.instance.jobs, (view.instance.num_jobs, view.instance.num_machines)
        workers, servers = np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.int64)
        free = view.free(view.t).copy()
        pending = np.flatnonzero(view.pending)
        for i in pending[np.argsort(view.remaining[pending], kind="stable")].tolist():
            for w in range(min(self.config.max_workers, int(jobs.batch[i])), 0, -1):
                ps = -(-w // int(jobs.gamma[i]))  # the fewest PSs for w workers: ceil(w / gamma)
                need = w * jobs.worker_demand[i] + ps * jobs.ps_demand[i]
                fits = np.flatnonzero((need <= free + 1e-9).all(axis=1))
                if fits.size:
                    h = int(fits[0])
                    workers[i, h], servers[i, h] = w, ps
                    free[h] -= need
                    self.placements += 1
                    break
        return SlotAllocation(workers, servers)

    def summary(self) -> JSON:
        return {"placements": self.placements}
