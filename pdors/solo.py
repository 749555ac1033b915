"""A job alone on the empty cluster: the most samples it can process in one slot, its fastest schedule, and the
instance's utility ceiling (docs/MODEL.md, "The workload grid").

One slot's allocation is either internal (Fact 1: all w workers and s = ceil(w / gamma) PSs on one machine, at
the internal rate) or external (on two machines or more, at the external rate), with w <= F_i (eq. 4), every
machine within its capacity (eq. 24) and, in the thesis profile, gamma from (3.4) and s <= w (3.5). The most
workers are found exactly, over integer placements; the fastest schedule runs at that rate in every slot from
a_i on, so it needs n_i = ceil(V_i / m_i) slots.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .model import Instance
from .thesis import ps_ratio
from .validator import WORKLOAD_RTOL

# A plan may fall short of a cover by this relative amount (float noise in k V_i / Q x per-sample time), well
# inside the validator's completion tolerance: an exact integer cover is then never rounded up to the next one.
COVER_RTOL = WORKLOAD_RTOL / 10
# below any sum of two counts (each at most a job's batch F_i): impossible stays negative in :func:`_max_plus`
_IMPOSSIBLE = np.int64(-(1 << 40))


def workers_for(samples: np.ndarray | float, per_sample: float) -> np.ndarray:
    """The fewest workers that process ``samples`` in one slot at ``per_sample`` slots per sample (eq. 1)."""
    return np.ceil(np.asarray(samples) * per_sample * (1.0 - COVER_RTOL))


def _servers(workers: np.ndarray, gamma: float, at_most_workers: bool) -> np.ndarray:
    """PSs that ``workers`` need (eq. 2 or (3.4)); a huge number where (3.5) forbids it."""
    s = np.ceil(workers / gamma)
    return np.where(at_most_workers & (s > workers) & (workers > 0), np.iinfo(np.int32).max, s)


def _servers_hosted(capacity: np.ndarray, alpha: np.ndarray, beta: np.ndarray, cap: int) -> np.ndarray:
    """For x = 0..cap workers on a machine of ``capacity``: the most PSs it holds beside them (at most ``cap``),
    -1 where the x workers alone do not fit."""
    x = np.arange(cap + 1)
    room = capacity[None, :] - x[:, None] * alpha[None, :]  # [x, R]
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(beta > 0, np.floor((room + 1e-9) / beta), cap)
    y = np.minimum(per.min(axis=1), cap)
    return np.where((room >= -1e-9).all(axis=1), y, -1).astype(np.int64)


def _max_plus(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(a * b)[w] = max over x of a[x] + b[w - x] (-1 = impossible), for w up to len(a) - 1."""
    n = len(a)
    a_or_none = np.where(a >= 0, a, _IMPOSSIBLE)
    padded = np.concatenate([np.full(n - 1, _IMPOSSIBLE), np.where(b >= 0, b, _IMPOSSIBLE)])
    shifted = sliding_window_view(padded, n)[:, ::-1]  # [w, x] = b[w - x], impossible where x > w (a view)
    best = (shifted + a_or_none[None, :]).max(axis=1)
    out: np.ndarray = np.where(best >= 0, np.minimum(best, n - 1), -1)
    return out


def _servers_on_machines(capacity: np.ndarray, alpha: np.ndarray, beta: np.ndarray, cap: int) -> np.ndarray:
    """For w = 0..cap workers spread over all machines: the most PSs the machines hold beside them."""
    rows, counts = np.unique(capacity, axis=0, return_counts=True)
    total = np.full(cap + 1, -1, dtype=np.int64)
    total[0] = 0
    for row, count in zip(rows, counts.tolist(), strict=True):
        power = _servers_hosted(row, alpha, beta, cap)
        while count:  # binary powers of one machine's table
            if count & 1:
                total = _max_plus(total, power)
            count >>= 1
            if count:
                power = _max_plus(power, power)
    return total


def _greedy_fits(rows: np.ndarray, counts: np.ndarray, alpha: np.ndarray, beta: np.ndarray, w: int, s: int) -> bool:
    """Whether filling machines with workers one after another (as many as fit), then PSs into what is left,
    places ``w`` workers and ``s`` PSs: a sufficient test that decides the common case (room to spare) at once."""
    hosted = 0
    for row, count in zip(rows, counts.tolist(), strict=True):
        table = _servers_hosted(row, alpha, beta, w)  # PSs beside x = 0..w workers on one such machine
        most = int(np.flatnonzero(table >= 0)[-1])  # workers one machine holds (capped at w)
        if most == 0:
            hosted += count * int(table[0])
            continue
        full = min(count, w // most)
        w -= full * most
        rest = min(w, most) if full < count else 0
        w -= rest
        hosted += full * int(table[most]) + (int(table[rest]) if full < count else 0)
        hosted += max(count - full - 1, 0) * int(table[0])
    return w == 0 and hosted >= s


def max_samples_per_slot(instance: Instance) -> np.ndarray:
    """The most samples each job can process in one slot of the empty cluster, exactly (module doc); computed
    once per instance (the policy and the run's summary share it), read-only."""
    return instance.derived(_max_samples_per_slot)


def _max_samples_per_slot(instance: Instance) -> np.ndarray:
    jobs, capacity = instance.jobs, instance.cluster.capacity
    thesis = instance.ps_bandwidth is not None and instance.ps_at_most_workers  # (3.5)
    g_int, g_ext = ps_ratio(instance, True), ps_ratio(instance, False)
    rows, counts = np.unique(capacity, axis=0, return_counts=True)
    out = np.zeros(instance.num_jobs)
    per_int, per_ext = jobs.time_per_sample(True), jobs.time_per_sample(False)
    for i in range(instance.num_jobs):
        batch, alpha, beta = int(jobs.batch[i]), jobs.worker_demand[i], jobs.ps_demand[i]
        w = np.arange(batch + 1)
        need = w[:, None] * alpha + _servers(w, g_int[i], thesis)[:, None] * beta  # [w, R]
        fits = (need[None, :, :] <= rows[:, None, :] + 1e-9).all(axis=2).any(axis=0)
        w_int = int(np.flatnonzero(fits)[-1])
        w_ext = 0
        servers = _servers(w, g_ext[i], thesis)
        if w_int / per_int[i] >= batch / per_ext[i]:
            pass  # no external placement (at most F_i workers) beats the internal one: the max below is the same
        elif instance.num_machines >= 2 and _greedy_fits(rows, counts, alpha, beta, batch, int(servers[batch])):
            w_ext = batch  # F_i itself fits: the most there can be
        elif instance.num_machines >= 2:
            hosted = _servers_on_machines(capacity, alpha, beta, batch)
            ok = (hosted >= servers) & (w >= 1)
            w_ext = int(np.flatnonzero(ok)[-1]) if ok.any() else 0
        out[i] = max(w_int / per_int[i], w_ext / per_ext[i])
    return out


def fastest_slots(instance: Instance) -> np.ndarray:
    """n_i: the slots job i needs alone at :func:`max_samples_per_slot` (a huge number if it cannot run)."""
    rate = max_samples_per_slot(instance)
    with np.errstate(divide="ignore"):
        n = np.ceil(instance.jobs.workload / rate * (1.0 - COVER_RTOL))
    return np.where(rate > 0, n, np.iinfo(np.int32).max).astype(np.int64)


def fastest_completion(instance: Instance) -> np.ndarray:
    """The slot in which job i's fastest schedule alone completes, -1 if that is after T - 1."""
    done = instance.jobs.arrival + fastest_slots(instance) - 1
    return np.where(done < instance.slots, done, -1)


def utility_ceiling(instance: Instance, completion: np.ndarray | None = None) -> float:
    """Sum over jobs of u_i at the fastest schedule alone: no schedule earns more (utilities are
    non-increasing in the completion time). ``completion``: :func:`fastest_completion`, if known."""
    done = fastest_completion(instance) if completion is None else completion
    jobs = instance.jobs
    alone = np.flatnonzero(done >= 0).tolist()
    return float(sum(float(jobs.utility_of(i, done[i] - jobs.arrival[i])) for i in alone))
