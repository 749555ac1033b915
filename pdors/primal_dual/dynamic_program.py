"""Algorithms 2-3: the best completion slot and the cheapest schedule that finishes the workload by it.

Theta(t, V) = min_v theta(t, v) + Theta(t - 1, V - v) (eq. 21) over a discretised workload axis: level k
stands for at least k V_i / Q samples, so any plan whose levels sum to Q processes at least V_i samples
[choice: the paper enumerates v sample by sample, impossible for V_i up to 1e8; Q is
``workload_levels``]. One forward pass over the slots a_i..T-1 gives Theta(t~, V_i) for every candidate
completion slot t~ at once; Algorithm 2 then keeps the t~ with the largest payoff u_i(t~ - a_i) -
Theta(t~, V_i) (ties to the earliest).

The grid never costs a slot to a job alone (docs/MODEL.md, "The workload grid"): a slot that can process m
samples holds floor(Q m / V_i) levels, so with Q fixed a job whose fastest schedule needs n slots could need
more in the DP. Each job gets its own Q_i, the smallest multiple of n_i (its fastest schedule alone,
:mod:`pdors.solo`) that is >= Q: V_i / n_i samples per slot is then a level, and the fastest schedule a plan.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided


def aligned_levels(levels: int, fastest: np.ndarray, window: np.ndarray) -> np.ndarray:
    """Q_i per job: the smallest multiple of its fastest slot count n_i that is >= ``levels``; ``levels`` where the
    fastest schedule does not fit its ``window`` (slots from a_i to T - 1), so no completion depends on it."""
    fits = (fastest >= 1) & (fastest <= window)
    n = np.where(fits, fastest, 1)
    return np.where(fits, n * -(-levels // n), levels).astype(np.int64)


@dataclass(kw_only=True)
class DPResult:
    completion: int  # index into the slots given (0 = the arrival slot); -1 if nothing is finite
    payoff: float  # u - Theta at that completion (-inf if none)
    levels: np.ndarray  # levels per slot, summing to Q, zero after ``completion``
    totals: np.ndarray  # Theta(t~, V_i) per candidate completion slot (inf where not reached)
    reached: int  # slots whose theta was asked for


def plan_levels(
    theta: np.ndarray | Callable[[int], np.ndarray],
    utility: np.ndarray,
    refine: Callable[[int, int], int | None] | None = None,
    stop_early: bool = True,
) -> DPResult:
    """``theta[j, k]`` (or ``theta(j)[k]``): cost of level k in the j-th slot (theta[:, 0] = 0); ``utility[j]``: u_i(j).

    Slots are visited in order and theta is asked for slot j only while a later completion can still win:
    every Theta is >= 0, so once max_{t >= j} u_i(t) is <= the best payoff so far (or 0, below which the job
    is rejected anyway), no later t~ can beat it (ties go to the earliest) and the rest is not computed. With
    ``theta`` a callable, the far slots, whose theta needs the most external solves, are often never computed.
    ``stop_early=False`` visits every slot (same result).

    With ``refine``, the rows may hold lower bounds of theta: ``refine(j, k)`` makes cell (j, k) exact, updating
    the rows in place, and returns the first slot whose row changed (None if the cell was exact). The pass is
    repeated from that slot until every cell of the chosen schedule is exact. That schedule is the one the
    pass over exact values would choose: every bound is <= its exact value, so every other Theta, and every
    other payoff, is at least as bad in exact values as in bounds, and the ties resolve the same way.
    """
    dp = _ForwardPass(theta, utility, stop_early)
    start = 0
    while True:
        dp.run(start)
        result = dp.result()
        if refine is None or result.completion < 0 or not result.payoff > 0:
            return result
        refined = [refine(j, int(k)) for j, k in enumerate(result.levels) if k]
        changed = [j for j in refined if j is not None]
        if not changed:
            return result
        start = min(changed)


class _ForwardPass:
    """The forward DP over slots, kept per slot so that it can be redone from any slot on."""

    def __init__(self, theta: Callable[[int], np.ndarray] | np.ndarray, utility: np.ndarray, stop_early: bool):
        self.row = theta if callable(theta) else theta.__getitem__
        self.utility = utility
        # max_{t >= j} u_i(t): no completion from slot j on can beat a best payoff at least this large
        self.best_ahead = np.maximum.accumulate(utility[::-1])[::-1] if stop_early else np.full(len(utility), np.inf)
        self.rows: list[np.ndarray] = []  # theta per slot, asked for once
        self.best: list[np.ndarray] = []  # Theta(slot j, k levels) for every k
        self.choice: list[np.ndarray] = []  # levels in slot j behind best[j]
        self.leader: list[float] = []  # best payoff (or 0) up to slot j
        self.top: list[int] = []  # best[j][top + 1:] is all inf

    def run(self, start: int) -> None:
        del self.best[start:], self.choice[start:], self.leader[start:], self.top[start:]
        slots = len(self.utility)
        for j in range(start, slots):
            if self.best_ahead[j] <= (self.leader[-1] if self.leader else 0.0):
                break
            if j == len(self.rows):
                self.rows.append(self.row(j))
            costs = self.rows[j]
            width = len(costs)
            if not self.best:
                self.k = np.arange(width)
                # previous[q - k] for every (q, k) as a strided view of one buffer (no gather), ascending along k (the
                # inner axis, read fastest): Theta(slot j - 1, .) sits reversed at pad[:width], inf after it (k > q)
                self.pad = np.full(2 * width - 1, np.inf)
                self.pad[width - 1] = 0.0  # Theta(a_i - 1, 0)
                step = self.pad.strides[0]  # [q, k] -> pad[width - 1 - q + k]
                self.back = as_strided(self.pad[width - 1 :], shape=(width, width), strides=(-step, step))
            else:
                self.pad[:width] = self.best[-1][::-1]
            # Only the levels up to this slot's last finite one, and only the totals q that a finite level and a
            # finite Theta(slot j - 1, q - k) reach: the rows beyond ``top`` are all inf. An inf entry is never the
            # first minimum of a row unless the whole row is inf, and then level 0 (always finite, theta = 0) is the
            # first index either way. Every entry kept is the same sum as over the full [q, k] grid.
            last = width - 1 - int(np.isinf(costs[::-1]).argmin())  # costs are >= 0 and costs[0] = 0
            top = min(width - 1, last + (self.top[-1] if self.top else 0))  # >= the last finite total
            combined = costs[None, : last + 1] + self.back[: top + 1, : last + 1]
            first_min = combined.argmin(axis=1)
            choice, best = np.zeros(width, dtype=np.int64), np.empty(width)
            best[top + 1 :] = np.inf
            choice[: top + 1] = first_min
            best[: top + 1] = combined[self.k[: top + 1], first_min]
            self.choice.append(choice)
            self.best.append(best)
            self.top.append(top)
            payoff = self.utility[j] - self.best[-1][-1]
            self.leader.append(max(self.leader[-1] if self.leader else 0.0, payoff))

    def result(self) -> DPResult:
        slots, reached = len(self.utility), len(self.best)
        totals = np.full(slots, np.inf)
        totals[:reached] = [b[-1] for b in self.best]
        payoff = self.utility - totals
        levels = np.zeros(slots, dtype=np.int64)
        if not np.isfinite(totals).any():
            return DPResult(completion=-1, payoff=-np.inf, levels=levels, totals=totals, reached=reached)
        done = int(np.argmax(np.where(np.isfinite(payoff), payoff, -np.inf)))
        remaining = len(self.best[0]) - 1
        for j in range(done, -1, -1):
            levels[j] = self.choice[j][remaining]
            remaining -= levels[j]
        assert remaining == 0, "backtracking must consume every level"
        return DPResult(completion=done, payoff=float(payoff[done]), levels=levels, totals=totals, reached=reached)
