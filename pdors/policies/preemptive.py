"""Chunk-level preemptive scheduler of Wang et al., "Preemptive Scheduling for Distributed Machine Learning Jobs
in Edge-Cloud Networks", IEEE JSAC 2022, adapted to one cluster.

* Chunks: job i's V_i samples are split into D_i = F_i equal data chunks, one per worker the job may use
  (Wang's constraint (2c): one chunk per worker; here eq. 4 caps workers at F_i). A chunk runs on one worker of
  its job; it needs p_i = (V_i / D_i) (tau + 2 g gamma / (b^(e) F)) slots at the external rate of eq. (1).
* A_online: in the slot a job arrives, A_greedy dispatches each of its chunks, one by one, to the machine with the
  smallest increase Q of the weighted fractional flow time, and the dispatch is never revised.
* Rate rule: every machine serves its pending chunks by the *highest average processing rate first*; a chunk of
  job i has rate r_i / V_i (one worker's samples per slot over the job's workload, Wang's n_j over the job's
  mini-batches), ties to the earlier-arriving job, then the lower index.
* Preemption: only *pending* chunks are preempted; a newly dispatched chunk goes ahead of every pending chunk of
  a lower rate on its machine. A chunk in progress keeps its worker, on its machine, until it is done.
* CALCULATEQ, adapted: a machine hosts many workers at once, so it is modelled as a fluid server whose
  capacity is shared by dominant share s_{i,h} = max_r (alpha_i^r + beta_i^r / gamma_i) / C_h^r per worker.
  For a chunk of job j on machine h,
      Q_h = (ahead_h + p_j) / D_j + p_j s_{j,h} sum_{pending d' of lower rate on h} 1 / D_{j'},
  ahead_h = sum over chunks in progress on h and pending ones of rate >= r_j of (remaining slots x share):
  the chunk's own average flow time (Wang's second and third terms) plus the delay it causes to the chunks it
  preempts (fourth term). The upload delay (first term) and the cloud tier are dropped.
* Serving: each slot, chunks in progress continue; then pending chunks start in rate order (over all machines)
  wherever one more worker of the job fits on the chunk's machine, a chunk that does not fit is skipped
  (backfilling). A started chunk must also get its job's ceil(w / gamma) PSs.
* A_ps, adapted: a job's PSs stay where they are while it keeps running (Wang: keep the PS across consecutive
  slots); surplus PSs leave machines with the fewest of its workers first; new PSs go round-robin over the
  machines with its workers (one machine can make the job internal, Fact 1), then over those holding its queued
  chunks (whose load Q counts, at beta / gamma per worker), then over all machines, instead of Wang's random
  pick.
  A job with no chunk in progress holds no PS.

Progress bookkeeping uses the rate the allocation earns (Fact 1); the simulator and the validator count the
samples independently, and a job is complete when they say so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import JSON
from ..model import Instance, Jobs
from .base import RunShape, SlotAllocation, SlotPolicy, SlotView
from .placement import FIT_ATOL, Placement, ps_count, room, round_robin, slot_allocation

# A chunk is done at <= this fraction of its size left: below the simulator's completion slack (1e-12 of V_i),
# so a job whose chunks are all done is complete there too.
CHUNK_RTOL = 1e-13


@dataclass(frozen=True)
class Config:
    def check(self) -> list[str]:
        return []


@dataclass(kw_only=True)
class Chunks:
    """The chunks of one dispatched job: machine, samples left, first and last slot of processing (-1: not
    yet), and the job's PSs per machine."""

    machine: np.ndarray
    left: np.ndarray
    start: np.ndarray
    finish: np.ndarray
    servers: np.ndarray

    @property
    def running(self) -> np.ndarray:
        return (self.start >= 0) & (self.finish < 0)

    @property
    def pending(self) -> np.ndarray:
        return self.start < 0


class Preemptive(SlotPolicy):
    name = "preemptive"

    def reset(self, instance: Instance, seed: int) -> None:
        jobs, cap = instance.jobs, instance.cluster.capacity
        self.rate_ext = 1.0 / jobs.time_per_sample(False)
        self.rate_int = 1.0 / jobs.time_per_sample(True)
        self.size = jobs.workload / jobs.batch  # samples per chunk, D_i = F_i
        self.slots_per_chunk = self.size / self.rate_ext  # p_i
        self.priority = self.rate_ext / jobs.workload  # average processing rate of a chunk
        per_worker = jobs.worker_demand + jobs.ps_demand / jobs.gamma[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = per_worker[:, None, :] / cap[None]  # a demand on a zero capacity: inf
        self.share = np.where(per_worker[:, None, :] > 0, ratio, 0.0).max(axis=2)  # s_{i,h}  [I, H]
        self.fits = np.all(jobs.worker_demand[:, None, :] <= cap[None] + FIT_ATOL, axis=2)  # one worker fits h
        self.order = np.lexsort((np.arange(instance.num_jobs), jobs.arrival, -self.priority))  # rate order
        self.chunks: dict[int, Chunks] = {}
        self.cursor = 0
        self.stats = {
            "dispatched_chunks": 0,
            "undispatchable_jobs": 0,
            "preempted_pending": 0,
            "chunks_started": 0,
            "chunks_finished": 0,
            "ps_shortfall_skips": 0,
        }

    def allocate(self, view: SlotView) -> SlotAllocation:
        inst, jobs, t = view.instance, view.instance.jobs, view.t
        self.chunks = {i: c for i, c in self.chunks.items() if view.completed[i] < 0}
        for arriving in np.flatnonzero(jobs.arrival == t):
            self._dispatch(int(arriving), inst)
        free = view.free(t)
        workers = {i: np.bincount(c.machine[c.running], minlength=inst.num_machines) for i, c in self.chunks.items()}
        for i, c in self.chunks.items():  # chunks in progress keep their workers; surplus PSs leave
            c.servers = _trim_servers(c.servers, workers[i], int(ps_count(workers[i].sum(), jobs.gamma[i])))
            free -= workers[i][:, None] * jobs.worker_demand[i] + c.servers[:, None] * jobs.ps_demand[i]
        for j in self.order:
            chunk = self.chunks.get(int(j))
            if chunk is not None and chunk.pending.any():
                free = self._start(int(j), chunk, workers, free, jobs, t)
        placements = {
            i: Placement(workers[i], c.servers.copy()) for i, c in self.chunks.items() if workers[i].sum() > 0
        }
        for i, p in placements.items():
            self._progress(i, p, t)
        return slot_allocation(inst.num_jobs, inst.num_machines, placements)

    def _dispatch(self, j: int, inst: Instance) -> None:
        """A_greedy: each chunk of job j, in turn, to the machine with the smallest Q (ties: lowest index). A job
        none of whose workers fits any machine is never dispatched."""
        H, D = inst.num_machines, int(inst.jobs.batch[j])
        if not self.fits[j].any():
            self.stats["undispatchable_jobs"] += 1
            return
        ahead, delayed, behind = self._load_ahead(j, H, inst.jobs.batch)
        p, s = self.slots_per_chunk[j], self.share[j]
        q = np.where(self.fits[j], (ahead + p) / D + p * s * delayed, np.inf)
        machine = np.empty(D, dtype=np.int64)
        for d in range(D):
            h = int(np.argmin(q))
            machine[d] = h
            self.stats["preempted_pending"] += int(behind[h])
            q[h] += p * s[h] / D  # this chunk now runs ahead of the job's next ones
        self.stats["dispatched_chunks"] += D
        self.chunks[j] = Chunks(
            machine=machine,
            left=np.full(D, self.size[j]),
            start=np.full(D, -1),
            finish=np.full(D, -1),
            servers=np.zeros(H, dtype=np.int64),
        )

    def _load_ahead(self, j: int, H: int, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per machine, over the dispatched jobs: the remaining work (slots x share) of the chunks that run before
        a chunk of job j (in progress, or pending at a rate >= j's), and the pending chunks it would run ahead of,
        as sum 1 / D_{j'} and as a count. Each job's own sums are taken first, then added up in dispatch order
        (one bincount over (job, machine) keys and a cumulative sum over jobs: the same additions, in the same
        order, as a loop of per-job bincounts; ``sum(axis=0)`` would switch to pairwise summation when H = 1)."""
        jobs = np.fromiter(self.chunks, dtype=np.int64, count=len(self.chunks))
        if not jobs.size:
            return np.zeros(H), np.zeros(H), np.zeros(H, dtype=np.int64)
        parts = self.chunks.values()
        machine = np.concatenate([c.machine for c in parts])
        left = np.concatenate([c.left for c in parts])
        start = np.concatenate([c.start for c in parts])
        finish = np.concatenate([c.finish for c in parts])
        owner = np.repeat(np.arange(jobs.size), [len(c.machine) for c in parts])
        job = jobs[owner]
        running, pending = (start >= 0) & (finish < 0), start < 0
        first = running | (pending & (self.priority[job] >= self.priority[j]))
        rem = left / self.rate_ext[job] * self.share[job, machine]
        key = owner * H + machine
        later = pending & ~first
        ahead = np.bincount(key[first], weights=rem[first], minlength=jobs.size * H).reshape(jobs.size, H)
        count = np.bincount(key[later], minlength=jobs.size * H).reshape(jobs.size, H)
        return (np.cumsum(ahead, axis=0)[-1], np.cumsum(count / batch[jobs][:, None], axis=0)[-1], count.sum(axis=0))

    def _start(
        self, i: int, c: Chunks, workers: dict[int, np.ndarray], free: np.ndarray, jobs: Jobs, t: int
    ) -> np.ndarray:
        """Start job i's pending chunks where a worker fits on their machine, as many as the PSs they add can be
        placed for (machines in index order); returns the free capacity left."""
        H = free.shape[0]
        alpha, beta, gamma = jobs.worker_demand[i], jobs.ps_demand[i], int(jobs.gamma[i])
        waiting = np.bincount(c.machine[c.pending], minlength=H)
        fit = np.minimum(waiting, room(free, alpha, int(waiting.max(initial=0))))
        running, held = int(workers[i].sum()), int(c.servers.sum())
        queued = np.bincount(c.machine, minlength=H)

        def attempt(k: int) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, int] | None]:
            new = _first(fit, k)
            after = free - new[:, None] * alpha
            return (
                new,
                after,
                _place_servers(
                    after, beta, int(ps_count(running + k, gamma)) - held, workers[i] + new, queued, self.cursor
                ),
            )

        new, after, placed = attempt(int(fit.sum()))
        if placed is None:  # too few PS slots: the most chunks whose PSs fit (k = 0 always does)
            self.stats["ps_shortfall_skips"] += 1
            lo, hi = 0, int(fit.sum()) - 1
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if attempt(mid)[2] is not None else (lo, mid - 1)
            new, after, placed = attempt(lo)
        assert placed is not None  # k = 0 adds no PS beyond those held
        servers, self.cursor = placed
        for h in np.flatnonzero(new):
            idle = np.flatnonzero(c.pending & (c.machine == h))[: new[h]]
            c.start[idle] = t
        self.stats["chunks_started"] += int(new.sum())
        workers[i] = workers[i] + new
        c.servers = c.servers + servers
        out: np.ndarray = after - servers[:, None] * beta
        return out

    def _progress(self, i: int, p: Placement, t: int) -> None:
        """Every chunk in progress processes one worker's samples of this slot at the rate the placement earns."""
        c = self.chunks[i]
        internal = ((p.workers > 0) | (p.servers > 0)).sum() == 1
        c.left[c.running] -= self.rate_int[i] if internal else self.rate_ext[i]
        done = c.running & (c.left <= self.size[i] * CHUNK_RTOL)
        c.finish[done] = t
        self.stats["chunks_finished"] += int(done.sum())

    def summary(self) -> JSON:
        return dict(self.stats)


def _trim_servers(servers: np.ndarray, workers: np.ndarray, need: int) -> np.ndarray:
    """Keep at most ``need`` of the job's PSs, removing them first from machines with the fewest of its
    workers (ties: the highest index)."""
    out = servers.copy()
    surplus = int(out.sum()) - need
    for h in np.lexsort((-np.arange(len(out)), workers)):
        if surplus <= 0:
            break
        k = min(surplus, int(out[h]))
        out[h] -= k
        surplus -= k
    return out


def _place_servers(
    free: np.ndarray, beta: np.ndarray, count: int, workers: np.ndarray, queued: np.ndarray, cursor: int
) -> tuple[np.ndarray, int] | None:
    """``count`` PSs, round-robin over the machines hosting the job's workers (most workers first), then over
    the other machines holding its queued chunks, then over all machines from ``cursor``; returns (PSs per
    machine, new cursor) or ``None`` if they do not fit. Spreading them this way keeps each machine's PS load
    near the beta / gamma per worker that Q counts."""
    H = free.shape[0]
    placed = np.zeros(H, dtype=np.int64)
    hosts = np.flatnonzero(workers)
    others = np.flatnonzero((queued > 0) & (workers == 0))
    stages = (hosts[np.argsort(-workers[hosts], kind="stable")], others[np.argsort(-queued[others], kind="stable")])
    for stage in stages:
        left = count - int(placed.sum())
        k = min(left, int(room(free[stage], beta, max(left, 0)).sum()))
        if k > 0:
            spread = round_robin(free[stage], beta, k, 0)
            assert spread is not None  # k tasks fit: room() counted them
            placed[stage] += spread[0]
    left = count - int(placed.sum())
    if left <= 0:
        return placed, cursor
    got = round_robin(free - placed[:, None] * beta, beta, left, cursor)
    if got is None:
        return None
    return placed + got[0], got[1]


def _first(counts: np.ndarray, k: int) -> np.ndarray:
    """The first ``k`` of ``counts`` tasks, taking machines in index order."""
    out: np.ndarray = np.minimum(counts, np.maximum(k - (np.cumsum(counts) - counts), 0))
    return out


def make(config: Config, spec: RunShape) -> Preemptive:
    return Preemptive()
