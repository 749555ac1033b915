"""One slot's planned allocations packed onto machines together (the primal schedule's placement,
docs/OFFLINE_OPT.md "Primal").

Internal allocations go first, whole, each on the tightest machine that holds it (largest first); then the external
ones worker by worker and PS by PS over all jobs at once, largest unit first, each unit on a machine chosen by one
of ``RULES``. Packing the units of all jobs together mixes jobs with different resource profiles on a machine, so
the machines fill in every resource; spreading job by job (least room first) filled a machine's memory with one
job's workers and left its CPUs idle, and at Fig. 9 lost several times more planned allocations. Each rule is tried
in turn; the first that places every allocation is kept, else the one that loses the least planned utility.
Everything is counted (units, rules): no clock.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .placement import Placer

# (unit size, machine choice): size "sum" / "max" of a unit's demand over the machines' largest capacities;
# choice "dot" (the room most aligned with the demand), "worst" (the most room), "balance" (the room left most even)
RULES: tuple[tuple[str, str], ...] = (
    ("sum", "dot"),
    ("sum", "worst"),
    ("max", "worst"),
    ("max", "balance"),
    ("sum", "balance"),
)


@dataclass(frozen=True)
class Item:
    """Job ``job``'s planned ``workers`` in one slot: internal on machine class ``klass``, or external (-1);
    ``weight``: the utility lost if it is not placed."""

    job: int
    workers: int
    klass: int
    weight: float


def pack_slot(placer: Placer, t: int, items: list[Item]) -> np.ndarray:
    """Place ``items`` in slot ``t`` of ``placer`` (only what fits: feasible by construction); whether each was
    placed whole."""
    best: tuple[float, int] | None = None
    for r in range(len(RULES)):
        saved = (placer.res[t].copy(), placer.w[t].copy(), placer.s[t].copy())
        ok = _pack(placer, t, items, *RULES[r])
        lost = float(sum(it.weight for it, o in zip(items, ok, strict=True) if not o))
        if lost == 0.0:
            return ok
        if best is None or lost < best[0]:
            best = (lost, r)
        placer.res[t], placer.w[t], placer.s[t] = saved
    assert best is not None
    return _pack(placer, t, items, *RULES[best[1]])


def _score(rows: np.ndarray, d: np.ndarray, scale: np.ndarray, choice: str) -> np.ndarray:
    """Each machine's score (least is chosen) for a unit of demand ``d`` given its room ``rows``."""
    if choice == "dot":
        out: np.ndarray = -((rows / scale) @ (d / scale))
        return out
    left = (rows - d) / scale
    if choice == "worst":
        out = -left.sum(axis=-1)
        return out
    out = left.max(axis=-1) - left.min(axis=-1)
    return out


def _fill(room: np.ndarray, d: np.ndarray, scale: np.ndarray, choice: str, n: int) -> np.ndarray | None:
    """``n`` units of demand ``d`` placed one at a time, each on the fitting machine of least score (ties: the
    lowest index): the units per machine, or None if they do not all fit. Where the score is linear (it rises by
    ``step`` per unit on a machine), the same choice in one go: the n least of each machine's successive scores."""
    need = d > 0
    holds = np.full(len(room), n, dtype=np.int64)
    if need.any():
        holds = np.minimum(np.floor(np.min(room[:, need] / d[need], axis=1)), n).astype(np.int64)
        while (bad := (room - holds[:, None] * d < 0).any(axis=1) & (holds > 0)).any():
            holds[bad] -= 1  # floor of a rounded quotient one too many
    if holds.sum() < n:
        return None
    score = _score(room, d, scale, choice)
    if choice in ("dot", "worst"):
        step = float((d / scale) @ (d / scale)) if choice == "dot" else float((d / scale).sum())
        succ = score[:, None] + np.arange(n)[None, :] * step
        succ = np.where(np.arange(n)[None, :] < holds[:, None], succ, np.inf).ravel()
        return np.bincount(np.argsort(succ, kind="stable")[:n] // n, minlength=len(room))
    out = np.zeros(len(room), dtype=np.int64)
    left = room.copy()
    fit = holds > 0
    for _ in range(n):
        h = int(np.argmin(np.where(fit, score, np.inf)))
        left[h] -= d
        out[h] += 1
        fit[h] = out[h] < holds[h]
        score[h] = _score(left[h], d, scale, choice)
    return out


def _pack(placer: Placer, t: int, items: list[Item], size: str, choice: str) -> np.ndarray:
    """One rule's packing of ``items`` into slot ``t`` (committed): whether each was placed whole; an external
    allocation some unit of which finds no room is taken out whole."""
    jobs = placer.inst.jobs
    scale = placer.scale
    ok = np.ones(len(items), dtype=bool)

    def extent(d: np.ndarray) -> float:
        return float((d / scale).sum() if size == "sum" else (d / scale).max())

    inside = [k for k, it in enumerate(items) if it.klass >= 0]
    uses = {k: placer.servers(items[k].job, np.array([items[k].workers]), True)[0] for k in inside}
    inside.sort(
        key=lambda k: (
            -extent(items[k].workers * jobs.worker_demand[items[k].job] + uses[k] * jobs.ps_demand[items[k].job]),
            k,
        )
    )
    for k in inside:
        it = items[k]
        ok[k] = uses[k] >= 0 and placer.internal_at(
            it.job, t, it.workers, placer.internal_max(it.job, t, it.workers), it.klass
        )
    runs = []  # (-size, item, 0 PSs / 1 workers, count): identical units in a row
    H = placer.inst.num_machines
    for k, it in enumerate(items):
        if it.klass >= 0:
            continue
        S = int(placer.servers(it.job, np.array([it.workers]), False)[0])
        if S < 0:
            ok[k] = False
            continue
        runs += [(-extent(jobs.ps_demand[it.job]), k, 0, S), (-extent(jobs.worker_demand[it.job]), k, 1, it.workers)]
    runs.sort()
    room = placer.res[t].copy()
    got = {k: np.zeros((2, H), dtype=np.int64) for _, k, _, _ in runs}
    for _, k, kind, n in runs:
        if not ok[k] or n == 0:
            continue
        i = items[k].job
        d = jobs.worker_demand[i] if kind else jobs.ps_demand[i]
        m = _fill(room, d, scale, choice, n)
        if m is None:
            ok[k] = False
            room += got[k][0][:, None] * jobs.ps_demand[i] + got[k][1][:, None] * jobs.worker_demand[i]
            continue
        room -= m[:, None] * d
        got[k][kind] += m
    for k, (s, w) in got.items():
        if ok[k]:
            placer.put(items[k].job, t, w, s)
    return ok
