"""Algorithms 2-3: the best completion slot and the cheapest schedule that finishes the workload by it.

Theta(t, V) = min_v theta(t, v) + Theta(t - 1, V - v) (eq. 21) over a discretised workload axis: level k
stands for at least k V_i / Q samples, so any plan whose levels sum to Q processes at least V_i samples
[choice: the paper enumerates v sample by sample, impossible for V_i up to 1e8; Q is
``workload_levels``]. One forward pass over the slots a_i..T-1 gives Theta(t~, V_i) for every candidate
completion slot t~ at once; Algorithm 2 then keeps the t~ with the largest payoff u_i(t~ - a_i) -
Theta(t~, V_i) (ties to the earliest).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class DPResult:
    completion: int          # index into the slots given (0 = the arrival slot); -1 if nothing is finite
    payoff: float            # u - Theta at that completion (-inf if none)
    levels: np.ndarray       # levels per slot, summing to Q, zero after ``completion``
    totals: np.ndarray       # Theta(t~, V_i) per candidate completion slot


def plan_levels(theta: np.ndarray, utility: np.ndarray) -> DPResult:
    """``theta[j, k]``: cost of level k in the j-th slot (theta[:, 0] = 0); ``utility[j]``: u_i(j)."""
    slots, width = theta.shape
    q = width - 1
    k = np.arange(width)
    back = q_minus_k = k[:, None] - k[None, :]                     # [q, k] -> q - k
    valid = q_minus_k >= 0
    back = np.where(valid, q_minus_k, 0)
    best = np.full(width, np.inf)
    best[0] = 0.0                                                  # Theta(a_i - 1, .)
    choice = np.zeros((slots, width), dtype=np.int64)
    totals = np.empty(slots)
    for j in range(slots):
        combined = np.where(valid, theta[j][None, :] + best[back], np.inf)
        choice[j] = np.argmin(combined, axis=1)
        best = combined[k, choice[j]]
        totals[j] = best[q]
    payoff = utility - totals
    levels = np.zeros(slots, dtype=np.int64)
    if not np.isfinite(totals).any():
        return DPResult(-1, -np.inf, levels, totals)
    done = int(np.argmax(np.where(np.isfinite(payoff), payoff, -np.inf)))
    remaining = q
    for j in range(done, -1, -1):
        levels[j] = choice[j, remaining]
        remaining -= levels[j]
    assert remaining == 0, "backtracking must consume every level"
    return DPResult(done, float(payoff[done]), levels, totals)
