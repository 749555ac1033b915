"""Algorithm 4, steps 9-11: the gain G_delta (:func:`rounding_gain`) and the randomised rounding (27)-(28) of a
disaggregated LP point until S feasible integer solutions (:func:`round_external`), with the exact test of whether
any outcome can be feasible (:func:`_roundable`) that saves drawing attempts when none can."""

from __future__ import annotations

import functools
import math
import operator

import numpy as np

from ..portable_math import dot
from .config import GainEquation, RoundingConfig
from .external_lp import unit_price
from .gain import gain_eq29, gain_eq30
from .job import FIT_ATOL, JobShape, Option

UP_W, UP_S = np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1])  # rounding outcome o = dw + 2 ds
KEEP_W, KEEP_S = UP_W == 0, UP_S == 0  # the outcomes that round the worker (PS) count down
ROUNDING_BATCH = 64  # first batch of rounding attempts; batches double up to ROUNDING_BATCH_MAX
ROUNDING_BATCH_MAX = 1024


def rounding_gain(rounding: RoundingConfig, job: JobShape, demand: float, free: np.ndarray) -> float:
    """G_delta of Step 9 for cover ``demand``: the configured gain, else eq. (30) or eq. (29) from delta."""
    if rounding.gain is not None:
        return rounding.gain
    if rounding.theorem == GainEquation.EQ30_W1:
        return gain_eq30(rounding.delta, demand)  # W_1 = V_i[t] (tau + ...)
    usable = free[np.all(free > 0, axis=1)]
    ratios = [float(job.batch)]
    for demand_vec in (job.worker_demand, job.ps_demand):
        pos = demand_vec > 0
        if usable.size and pos.any():
            ratios.append(float((usable[:, pos] / demand_vec[pos]).min()))
    return gain_eq29(rounding.delta, min(ratios), free.shape[1], free.shape[0])  # W_2


def round_external(
    job: JobShape,
    demand: float,
    machines: np.ndarray,
    w_scaled: np.ndarray,
    s_scaled: np.ndarray,
    prices: np.ndarray,
    free: np.ndarray,
    rounding: RoundingConfig,
    rng: np.random.Generator,
    unit_prices: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[int, int, Option | None]:
    """Randomised rounding (27)-(28) until S feasible solutions or the attempt cap; the cheapest wins.

    Each machine's four outcomes (worker count down/up x PS count down/up) are checked against its capacity
    once; an attempt is then a lookup per machine instead of a load computation per resource. When no
    outcome of the draws can be feasible, the attempts are not drawn: the result, ``max_attempts``
    attempts and no solution, is what drawing them would give. That is checked by counting bounds
    (:func:`_count_bounds_allow`, cheap, rules out most) before drawing and, if the first batch finds
    nothing, exactly (:func:`_roundable`). ``unit_prices``: each machine's p^w and p^s, if the caller has them.
    """
    w_floor, s_floor = np.floor(w_scaled), np.floor(s_scaled)
    w_frac, s_frac = w_scaled - w_floor, s_scaled - s_floor
    load = (w_floor[:, None] + UP_W)[:, :, None] * job.worker_demand + (s_floor[:, None] + UP_S)[
        :, :, None
    ] * job.ps_demand  # [m, 4, R]
    fits = (load <= (free[machines] + FIT_ATOL)[:, None, :]).all(axis=2)  # [m, 4], index dw + 2 ds
    base_w, base_s = w_floor.sum(), s_floor.sum()
    possible = fits & (KEEP_W | (w_frac > 0)[:, None]) & (KEEP_S | (s_frac > 0)[:, None])
    if not _count_bounds_allow(job, demand, base_w, base_s, possible):
        return rounding.max_attempts, 0, None
    critical = (~fits.all(axis=1)).nonzero()[0]
    fits_critical, column = fits[critical], np.arange(critical.size)
    p_w, p_s = unit_prices or (
        unit_price(prices[machines], job.worker_demand),
        unit_price(prices[machines], job.ps_demand),
    )
    attempts = feasible = 0
    best_cost, best = np.inf, None
    m = len(machines)
    size = ROUNDING_BATCH
    while feasible < rounding.feasible_solutions and attempts < rounding.max_attempts:
        # Attempt j always uses the j-th block of 2m draws, so the batch size changes no outcome.
        batch = min(size, rounding.max_attempts - attempts)
        size = min(2 * size, ROUNDING_BATCH_MAX)
        draws = rng.random((batch, 2 * m))
        up_w, up_s = draws[:, :m] < w_frac, draws[:, m:] < s_frac
        wsum, ssum = base_w + up_w.sum(axis=1), base_s + up_s.sum(axis=1)
        ok = (wsum <= job.batch) & (wsum >= demand) & (job.gamma * ssum >= wsum) & (ssum > 0)
        ok &= job.servers_allowed(wsum, ssum)
        if job.gamma_internal is not None:  # an outcome on one machine runs internally (Fact 1)
            hosts = ((w_floor + up_w > 0) | (s_floor + up_s > 0)).sum(axis=1)
            ok &= (hosts != 1) | (job.gamma_internal * ssum >= wsum)
        if critical.size:
            outcome = up_w[:, critical] + 2 * up_s[:, critical]
            ok &= fits_critical[column, outcome].all(axis=1)
        idx = ok.nonzero()[0]
        take = idx[: rounding.feasible_solutions - feasible]
        attempts += int(take[-1]) + 1 if take.size == rounding.feasible_solutions - feasible else batch
        feasible += take.size
        if take.size:
            w, s = w_floor + up_w[take], s_floor + up_s[take]
            costs = dot(w, p_w) + dot(s, p_s)  # per row: the same sums as rounded_cost's, row by row
            j = int(costs.argmin())
            if costs[j] < best_cost:
                best_cost, best = float(costs[j]), (w[j], s[j])
        elif attempts == batch < rounding.max_attempts and not _roundable(job, demand, base_w, base_s, possible):
            return rounding.max_attempts, 0, None  # the first batch found nothing, and none can
    if best is None:
        return attempts, 0, None
    w, s = best
    keep = (w > 0) | (s > 0)
    option = Option(
        cost=best_cost,
        machines=machines[keep],
        workers=w[keep].astype(np.int64),
        servers=s[keep].astype(np.int64),
        internal=False,
    )
    return attempts, feasible, option


def _count_bounds_allow(job: JobShape, demand: float, base_w: int, base_s: int, possible: np.ndarray) -> bool:
    """A necessary condition for :func:`_roundable`: every machine has an outcome, and the totals allowed by
    the per-machine bounds on the number rounded up (A workers, B PSs) meet cap (25), cover (26) and the
    ratio, ignoring which (A, B) pairs the machines can reach together."""
    if not possible.any(axis=1).all():
        return False
    up_min = int((~(possible[:, 0] | possible[:, 2])).sum())  # machines whose every outcome rounds w up
    up_max = int((possible[:, 1] | possible[:, 3]).sum())
    ssum_max = base_s + int((possible[:, 2] | possible[:, 3]).sum())
    up = max(up_min, math.ceil(demand - base_w) - 1)
    while base_w + up < demand:  # the fewest meeting the cover, as checked
        up += 1
    return bool(up <= up_max and base_w + up <= job.batch and job.gamma * ssum_max >= base_w + up and ssum_max > 0)


def _roundable(job: JobShape, demand: float, base_w: int, base_s: int, possible: np.ndarray) -> bool:
    """Whether some outcome of (27)-(28) with positive probability is a feasible integer solution.

    ``possible[i, dw + 2 ds]``: machine i can round its worker count up by dw and its PS count by ds (the
    fractional part is > 0 where it is rounded up) and still fit its capacity (24). The sums A (workers
    rounded up) and B (PSs rounded up) that some such choice reaches are collected exactly, as bitsets
    indexed A * stride + B: a reachability DP over the machines where some outcome does not fit, then a
    shift by every (a, b) of the rectangle the others reach freely (each of those chooses dw and ds
    independently). The answer is whether a reached (A, B) meets cap (25), cover (26) and the ratio, the
    checks every attempt makes. Capacity-tight LP optima often admit none (about 30% of the external solves
    at paper scale), and proving it saves the paper's 5000 attempts.
    """
    if not possible.any(axis=1).all():
        return False
    m = len(possible)
    stride = m + 2  # B <= m never carries into the next row
    reach = 1  # {(0, 0)}
    loose = (
        possible.all(axis=1)
        | (possible == [True, True, False, False]).all(axis=1)
        | (possible == [True, False, True, False]).all(axis=1)
        | (possible == [True, False, False, False]).all(axis=1)
    )
    for row in possible[~loose]:
        shifts = [(o & 1) * stride + (o >> 1) for o in np.flatnonzero(row).tolist()]  # o = dw + 2 ds
        reach = functools.reduce(operator.or_, (reach << shift for shift in shifts))
    reach = _dilate(reach, int(possible[loose, 1].sum()), stride)
    reach = _dilate(reach, int(possible[loose, 2].sum()), 1)
    a = np.arange(m + 1)[:, None]
    b = np.arange(stride)[None, :]
    wsum, ssum = base_w + a, base_s + b
    ok = (wsum <= job.batch) & (wsum >= demand) & (job.gamma * ssum >= wsum) & (ssum > 0) & (b <= m)
    ok &= job.servers_allowed(wsum, ssum)
    mask = int.from_bytes(np.packbits(ok.ravel(), bitorder="little").tobytes(), "little")
    return bool(reach & mask)


def _dilate(bits: int, n: int, step: int) -> int:
    """The set ``bits`` shifted by every multiple 0..n of ``step`` (Minkowski sum with an interval)."""
    width = 1
    while n > 0:
        k = min(width, n)
        bits |= bits << (k * step)
        n -= k
        width *= 2
    return bits
