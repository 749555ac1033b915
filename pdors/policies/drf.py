"""DRF, the second baseline of the paper's Section V (Dominant Resource Fairness as in YARN/Mesos, paper refs.
[38]-[39]; Ghodsi et al., NSDI'11).

Every slot, from scratch over all arrived, incomplete jobs: progressive filling on dominant shares. The job with
the lowest dominant share (ties to the lowest index) gets one more worker, plus one more PS when ceil(w / gamma)
grows; both are placed round-robin. A job stops growing when it reaches F_i workers (eq. 4) or its next
increment does not fit; filling ends when no job can grow. The dominant share counts the job's workers and PSs
against the whole cluster's capacity [choice: the paper does not say how DRF treats PSs].
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from ..config import JSON
from ..model import Instance
from .base import RunShape, SlotAllocation, SlotPolicy, SlotView
from .placement import Placement, next_machine, slot_allocation


@dataclass(frozen=True)
class Config:
    def check(self) -> list[str]:
        return []


class DRF(SlotPolicy):
    name = "drf"

    def reset(self, instance: Instance, seed: int) -> None:
        self.cursor = 0
        self.total = instance.cluster.capacity.sum(axis=0)
        self.increments = 0

    def allocate(self, view: SlotView) -> SlotAllocation:
        inst, jobs = view.instance, view.instance.jobs
        H = inst.num_machines
        free = view.free(view.t)
        placed = {
            int(i): Placement(np.zeros(H, dtype=np.int64), np.zeros(H, dtype=np.int64))
            for i in np.flatnonzero(view.pending)
        }
        workers = dict.fromkeys(placed, 0)
        servers = dict.fromkeys(placed, 0)
        # Per increment only scalars change: Python floats, the same IEEE operations as numpy's on one element.
        total = self.total.tolist()
        heap = [(0.0, i) for i in placed]
        heapq.heapify(heap)
        while heap:
            _, i = heapq.heappop(heap)
            p, alpha, beta = placed[i], jobs.worker_demand[i], jobs.ps_demand[i]
            w = workers[i] + 1
            if w > jobs.batch[i]:
                continue
            # One task at a time: only the row of the machine that takes it changes, so ``free`` is updated
            # in place (subtracting 0.0 from the other rows would change no bit).
            h = next_machine(free, alpha, self.cursor)
            if h is None:
                continue
            kept = free[h].copy()
            free[h] -= alpha
            s = servers[i]
            if -(-w // jobs.gamma[i]) > s:  # ceil(w / gamma) grew: one more PS
                ps_host = next_machine(free, beta, (h + 1) % H)
                if ps_host is None:
                    free[h] = kept
                    continue
                free[ps_host] -= beta
                p.servers[ps_host] += 1
                s += 1
                self.cursor = (ps_host + 1) % H
            else:
                self.cursor = (h + 1) % H
            p.workers[h] += 1
            workers[i], servers[i] = w, s
            self.increments += 1
            # dominant_share(w alpha + s beta, total), on Python floats
            share = max(
                [0.0]
                + [(w * a + s * b) / c for a, b, c in zip(alpha.tolist(), beta.tolist(), total, strict=False) if c > 0]
            )
            heapq.heappush(heap, (share, i))
        return slot_allocation(inst.num_jobs, H, placed)

    def summary(self) -> JSON:
        return {"increments": self.increments}


def make(config: Config, spec: RunShape) -> DRF:
    return DRF()
