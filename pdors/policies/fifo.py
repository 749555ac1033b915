"""FIFO, the first baseline of the paper's Section V (Hadoop/Spark FIFO, paper ref. [37]).

Jobs start strictly in arrival order (ties by job index): each gets a fixed worker
count drawn uniformly from ``workers`` ("between 1 to 30") and capped at F_i (eq. 4), with ceil(w / gamma_i)
PSs, placed round-robin. The head of the queue waits until it fits and blocks the jobs behind it. A started job
keeps its placement in every slot until it completes (no preemption, no resizing).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import JSON, bounded, range_problem
from ..model import Instance
from .base import RunShape, SlotAllocation, SlotPolicy, SlotView
from .placement import Placement, Usage, place_job, ps_count, slot_allocation

SEED_STREAM = 0xF1F0  # keeps FIFO's draws independent of the workload generator's stream for the same seed


@dataclass(frozen=True)
class Config:
    workers: tuple[int, int] = bounded((1, 30), 0, 10**6, "workers per job; more than any cluster holds")

    def check(self) -> list[str]:
        return range_problem("workers", self.workers, lo=1)


class FIFO(SlotPolicy):
    name = "fifo"

    def __init__(self, config: Config):
        self.config = config

    def reset(self, instance: Instance, seed: int) -> None:
        jobs = instance.jobs
        lo, hi = self.config.workers
        rng = np.random.Generator(np.random.PCG64([seed, SEED_STREAM]))
        self.workers = np.minimum(rng.integers(lo, hi + 1, size=instance.num_jobs), jobs.batch)
        self.servers = ps_count(self.workers, jobs.gamma)
        self.running: dict[int, Placement] = {}
        self.usage: dict[int, Usage] = {}  # what each running placement takes, in ``running``'s order
        self.queue = np.argsort(jobs.arrival, kind="stable")
        self.started = 0  # queue[started] is the head: every job before it has started
        self.cursor = 0
        self.blocked_slots = 0  # slots in which an arrived job waited at the head of the queue

    def allocate(self, view: SlotView) -> SlotAllocation:
        inst, jobs = view.instance, view.instance.jobs
        self.running = {i: p for i, p in self.running.items() if view.completed[i] < 0}
        self.usage = {i: self.usage[i] for i in self.running}
        free = view.free(view.t)
        for usage in self.usage.values():
            usage.take_from(free)
        while self.started < inst.num_jobs and jobs.arrival[self.queue[self.started]] <= view.t:
            i = int(self.queue[self.started])
            got = place_job(
                free, jobs.worker_demand[i], jobs.ps_demand[i], int(self.workers[i]), int(self.servers[i]), self.cursor
            )
            if got is None:
                self.blocked_slots += 1
                break
            placement, self.cursor = got
            self.usage[i] = Usage.of(placement, jobs.worker_demand[i], jobs.ps_demand[i])
            self.usage[i].take_from(free)
            self.running[i] = placement
            self.started += 1
        return slot_allocation(inst.num_jobs, inst.num_machines, self.running)

    def summary(self) -> JSON:
        return {
            "started": self.started,
            "blocked_slots": self.blocked_slots,
            "workers_mean": float(self.workers.mean()) if self.workers.size else 0.0,
        }


def make(config: Config, spec: RunShape) -> FIFO:
    return FIFO(config)
