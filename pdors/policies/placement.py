"""Helpers shared by the baselines of the paper's Section V: PS counts, dominant shares and round-robin
placement ("workers and parameter servers are placed in a round-robin fashion on available machines").

Round-robin is the classic one-task-at-a-time scan: a cursor walks the machines cyclically and each task goes
to the next machine (from the cursor) with room for it. For ``count`` identical tasks this equals full passes
over the machines that still have room plus one partial pass, which :func:`round_robin` computes in closed
form instead of task by task.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..model import Jobs
from .base import SlotAllocation

FIT_ATOL = 1e-9


def ps_count(workers: ArrayLike, gamma: ArrayLike) -> Any:
    """Fewest PSs for ``workers`` at ratio ``gamma``: ceil(w / gamma), hence 0 iff w = 0
    (eq. 2 as docs/MODEL.md reads it)."""
    return -(-np.asarray(workers) // np.asarray(gamma))


def dominant_share(usage: np.ndarray, total: np.ndarray) -> np.ndarray:
    """DRF's dominant share max_r usage^r / total^r over resources the cluster has (usage [..., R])."""
    has = total > 0
    out: np.ndarray = (usage[..., has] / total[has]).max(axis=-1, initial=0.0)
    return out


def room(free: np.ndarray, demand: np.ndarray, limit: int) -> np.ndarray:
    """How many tasks of ``demand`` fit on each machine of ``free`` [H, R], capped at ``limit``."""
    need = demand > 0
    if not need.any():
        return np.full(free.shape[0], limit, dtype=np.int64)
    fit = np.floor((free[:, need] + FIT_ATOL) / demand[need]).min(axis=1)
    out: np.ndarray = np.minimum(np.maximum(fit, 0), limit).astype(np.int64)  # np.clip's values, without its overhead
    return out


def round_robin(free: np.ndarray, demand: np.ndarray, count: int, cursor: int) -> tuple[np.ndarray, int] | None:
    """Place ``count`` tasks of ``demand`` round-robin from machine ``cursor``.

    Returns (tasks per machine, the cursor after the last task) or ``None`` if they do not all fit.
    """
    H = free.shape[0]
    if count <= 0:
        return np.zeros(H, dtype=np.int64), cursor
    if count == 1:
        h = next_machine(free, demand, cursor)
        if h is None:
            return None
        placed = np.zeros(H, dtype=np.int64)
        placed[h] = 1
        return placed, (h + 1) % H
    if H <= FEW_MACHINES:
        return _passes_few(room(free, demand, count).tolist(), count, cursor)
    return round_robin_passes(free, demand, count, cursor)


# Up to this many machines :func:`_passes_few` finds the passes with Python's list operations, which cost less
# there than NumPy's per-call overhead; beyond, :func:`round_robin_passes` does with arrays.
FEW_MACHINES = 64


def _passes_few(room: list[int], count: int, cursor: int) -> tuple[np.ndarray, int] | None:
    """:func:`round_robin_passes` from each machine's ``room`` (count >= 2), the same placement: the full
    passes m in closed form over the sorted rooms (the largest m with sum(min(k, m)) <= count), not by bisection."""
    H = len(room)
    k = room[cursor:] + room[:cursor]  # in round-robin order from the cursor
    first = []  # the common case: one pass, a task on each of the first ``count`` machines with room
    for j, x in enumerate(k):
        if x > 0:
            first.append(j)
            if len(first) == count:
                placed = np.zeros(H, dtype=np.int64)
                placed[[(cursor + j) % H for j in first]] = 1
                return placed, (cursor + first[-1] + 1) % H
    if sum(k) < count:
        return None
    passes, before = max(k), 0  # as many full passes as the roomiest machine takes, unless a sorted room says less
    for j, b in enumerate(sorted(k)):  # sum(min(k, m)) = before + m (H - j) for m between the j-th rooms
        if before + b * (H - j) > count:
            passes = (count - before) // (H - j)
            break
        before += b
    take = [x if x < passes else passes for x in k]  # min(x, passes)
    rest = count - sum(take)
    if rest:
        partial = [j for j, x in enumerate(k) if x > passes][:rest]
        for j in partial:
            take[j] += 1
        last = partial[-1]
    else:
        last = max(j for j, x in enumerate(k) if x >= passes)
    placed = np.array(take[H - cursor :] + take[: H - cursor], dtype=np.int64)  # back to machine order
    return placed, (cursor + last + 1) % H


def round_robin_passes(free: np.ndarray, demand: np.ndarray, count: int, cursor: int) -> tuple[np.ndarray, int] | None:
    """:func:`round_robin` of ``count`` >= 2 tasks in full passes over the machines with room plus one partial
    pass, with arrays: the reference of :func:`_passes_few` (tests/test_tiny_runs.py compares them)."""
    H = free.shape[0]
    placed = np.zeros(H, dtype=np.int64)
    order = (cursor + np.arange(H)) % H
    k = room(free, demand, count)[order]
    if k.sum() < count:
        return None
    # Full passes m: the largest m with sum(min(k, m)) <= count (sum is non-decreasing in m).
    lo, hi = 0, int(k.max())
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if np.minimum(k, mid).sum() <= count:
            lo = mid
        else:
            hi = mid - 1
    take = np.minimum(k, lo)
    rest = count - int(take.sum())
    if rest:
        partial = np.flatnonzero(k > lo)[:rest]
        take[partial] += 1
        last = partial[-1]
    else:
        last = np.flatnonzero(k >= lo)[-1]
    placed[order] = take
    return placed, int((order[last] + 1) % H)


def next_machine(free: np.ndarray, demand: np.ndarray, cursor: int) -> int | None:
    """The machine one task of ``demand`` goes to round-robin from ``cursor``: the first with room for it,
    cyclically (``None`` if none has)."""
    if all(
        x + FIT_ATOL >= d for x, d in zip(free[cursor].tolist(), demand.tolist(), strict=False)
    ):  # fast path: the cursor's
        return cursor  # machine has room
    order = (cursor + np.arange(free.shape[0])) % free.shape[0]
    fits = np.flatnonzero(room(free, demand, 1)[order])
    return int(order[fits[0]]) if fits.size else None


@dataclass
class Placement:
    """One job's tasks per machine in one slot."""

    workers: np.ndarray
    servers: np.ndarray

    def take_from(self, free: np.ndarray, worker_demand: np.ndarray, ps_demand: np.ndarray) -> None:
        """Subtract the resources [H, R] this placement takes from ``free``, in place. Only the machines it
        uses are touched: elsewhere the usage is exactly 0.0, and subtracting it would change no bit."""
        Usage.of(self, worker_demand, ps_demand).take_from(free)


@dataclass(frozen=True)
class Usage:
    """What a fixed :class:`Placement` takes per slot: its machines and their resources, computed once (FIFO
    subtracts a running job's every slot); :meth:`Placement.take_from` subtracts it as computed."""

    machines: np.ndarray
    resources: np.ndarray  # [machines, R]

    @classmethod
    def of(cls, placement: Placement, worker_demand: np.ndarray, ps_demand: np.ndarray) -> Usage:
        used = np.flatnonzero(placement.workers | placement.servers)
        return cls(used, placement.workers[used, None] * worker_demand + placement.servers[used, None] * ps_demand)

    def take_from(self, free: np.ndarray) -> None:
        free[self.machines] -= self.resources


def reserve(free: np.ndarray, jobs: Jobs, placements: dict[int, Placement]) -> None:
    """Take the resources of ``placements`` (job -> placement) out of ``free`` [H, R], in place, in dict order."""
    for i, p in placements.items():
        p.take_from(free, jobs.worker_demand[i], jobs.ps_demand[i])


def keep_unchanged(
    free: np.ndarray, jobs: Jobs, previous: dict[int, Placement], active: np.ndarray, counts: np.ndarray
) -> tuple[dict[int, Placement], list[tuple[int, int]]]:
    """Jobs of ``active`` whose new worker count (``counts``) equals their previous placement's keep that
    placement (no restart), and its resources leave ``free`` (in place). Returns the kept placements and the
    changed jobs as (job, count) in ``active`` order, stops (count 0 of a job that had a placement) included."""
    kept: dict[int, Placement] = {}
    changed: list[tuple[int, int]] = []
    for i, w in zip(active, counts, strict=False):
        i, w = int(i), int(w)
        old = previous.get(i)
        if old is not None and old.workers.sum() == w:
            kept[i] = old
            reserve(free, jobs, {i: old})
        elif w > 0 or old is not None:
            changed.append((i, w))
    return kept, changed


def place_job(
    free: np.ndarray, worker_demand: np.ndarray, ps_demand: np.ndarray, workers: int, servers: int, cursor: int
) -> tuple[Placement, int] | None:
    """Workers, then PSs, round-robin from ``cursor`` on ``free`` [H, R]; ``None`` if not all fit."""
    w = round_robin(free, worker_demand, workers, cursor)
    if w is None:
        return None
    after = free - w[0][:, None] * worker_demand
    s = round_robin(after, ps_demand, servers, w[1])
    if s is None:
        return None
    return Placement(w[0], s[0]), s[1]


def place_largest(
    free: np.ndarray, worker_demand: np.ndarray, ps_demand: np.ndarray, workers: int, gamma: int, cursor: int
) -> tuple[Placement, int]:
    """The most workers <= ``workers`` (with ceil(w / gamma) PSs) that round-robin placement fits.

    Used where counts come from aggregate capacity (Dorm): per-machine fragmentation can leave a job a few
    tasks short. Returns an empty placement if not even one worker fits.
    """
    for w in range(workers, 0, -1):
        got = place_job(free, worker_demand, ps_demand, w, int(ps_count(w, gamma)), cursor)
        if got is not None:
            return got
    H = free.shape[0]
    return Placement(np.zeros(H, dtype=np.int64), np.zeros(H, dtype=np.int64)), cursor


def slot_allocation(num_jobs: int, machines: int, placements: dict[int, Placement]) -> SlotAllocation:
    """The :class:`SlotAllocation` holding ``placements`` (job -> placement); other jobs get nothing."""
    workers = np.zeros((num_jobs, machines), dtype=np.int64)
    servers = np.zeros((num_jobs, machines), dtype=np.int64)
    for i, p in placements.items():
        workers[i], servers[i] = p.workers, p.servers
    return SlotAllocation(workers, servers)
