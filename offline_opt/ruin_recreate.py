"""A ruin-and-recreate local search on a placed schedule (the primal schedule's last step, docs/OFFLINE_OPT.md).

Each round removes a few jobs that run at the same time as a randomly drawn one (the ruin), then places the removed
jobs and a few not yet placed ones again, one at a time in a shuffled order of value, each on its planned column
if it has one, else as early as it fits (the recreate). The round is kept if the total utility does not fall, else
undone. The rounds are counted (work, never seconds) and drawn from a seeded generator, so the result is the same
on any machine and any load.
"""

from __future__ import annotations

import numpy as np

from .placement import Placer, Plan

RUIN_MAX = 4  # jobs removed per round: 1..RUIN_MAX
RETRY_MAX = 3  # jobs not placed offered per round, besides the removed ones


def _completion(placer: Placer, i: int) -> int:
    """Job i's completion slot as placed (-1: not placed)."""
    target = float(placer.inst.jobs.workload[i] * (1.0 - 1e-12))
    done = np.flatnonzero(np.cumsum(placer.samples(i)) >= target)
    return int(done[0]) if done.size else -1


def ruin_recreate(placer: Placer, plans: dict[int, Plan], rounds: int, seed: int) -> int:
    """Improve ``placer``'s schedule in place over ``rounds`` rounds; ``plans``: a planned column per job (from the
    master) tried before the earliest placement. Returns the rounds kept."""
    inst = placer.inst
    jobs, T, J = inst.jobs, inst.slots, inst.num_jobs
    slots = np.arange(T)
    value = jobs.utility(np.maximum(slots[:, None] - jobs.arrival[None, :], 0)).T  # [J, T]
    value = np.where(slots[None, :] >= jobs.arrival[:, None], value, 0.0)
    done = np.array([_completion(placer, i) for i in range(J)])
    rng = np.random.default_rng(seed)
    kept = 0

    def total() -> float:
        on = done >= 0
        return float(value[np.flatnonzero(on), done[on]].sum())

    def place(i: int) -> None:
        for plan in ([plans[i]] if i in plans else []) + [None]:
            if placer.job(i, plan):
                done[i] = _completion(placer, i)
                return

    current = total()
    for _ in range(rounds):
        placed = np.flatnonzero(done >= 0)
        if placed.size == 0:
            break
        centre = int(rng.choice(placed))
        active = (placer.w[:, placed].sum(axis=2) + placer.s[:, placed].sum(axis=2)) > 0  # [T, n]
        overlap = (active & active[:, placed == centre]).sum(axis=0) + rng.random(placed.size)
        ruined = placed[np.argsort(-overlap, kind="stable")[: int(rng.integers(1, RUIN_MAX + 1))]]
        waiting = np.flatnonzero(done < 0)
        retry = rng.choice(waiting, size=min(RETRY_MAX, waiting.size), replace=False) if waiting.size else waiting
        saved = (placer.res.copy(), placer.w.copy(), placer.s.copy(), done.copy())
        for i in ruined:
            for t in np.flatnonzero((placer.w[:, i] > 0).any(axis=1) | (placer.s[:, i] > 0).any(axis=1)):
                placer.take(int(i), int(t))
            done[i] = -1
        todo = np.concatenate([ruined, retry])
        best = value[todo].max(axis=1) * rng.uniform(0.5, 1.5, todo.size)
        for i in todo[np.argsort(-best, kind="stable")]:
            place(int(i))
        new = total()
        if new >= current:
            kept += new > current
            current = new
        else:
            placer.res, placer.w, placer.s, done = saved
    return kept
