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
from numpy.lib.stride_tricks import as_strided, sliding_window_view

from .model import Instance
from .thesis import ps_ratio
from .validator import WORKLOAD_RTOL

# A plan may fall short of a cover by this relative amount (float noise in k V_i / Q x per-sample time), well
# inside the validator's completion tolerance: an exact integer cover is then never rounded up to the next one.
COVER_RTOL = WORKLOAD_RTOL / 10
# below any sum of two counts (each at most a job's batch F_i): impossible stays negative in :func:`_max_plus`
_IMPOSSIBLE = np.int64(-(1 << 40))
_HUGE = np.iinfo(np.int32).max  # PSs that (3.5) forbids; slots of a job that cannot run


def workers_for(samples: np.ndarray | float, per_sample: float) -> np.ndarray:
    """The fewest workers that process ``samples`` in one slot at ``per_sample`` slots per sample (eq. 1)."""
    return np.ceil(np.asarray(samples) * per_sample * (1.0 - COVER_RTOL))


def _servers(workers: np.ndarray, gamma: float | np.ndarray, at_most_workers: bool) -> np.ndarray:
    """PSs that ``workers`` need (eq. 2 or (3.4)); a huge number where (3.5) forbids it."""
    s = np.ceil(workers / gamma)
    return np.where(at_most_workers & (s > workers) & (workers > 0), _HUGE, s)


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
    capacity = instance.cluster.capacity
    if (capacity == capacity[0]).all():  # identical machines (every generated cluster): all jobs at once
        return _max_samples_identical(instance)
    return max_samples_reference(instance)


def max_samples_reference(instance: Instance) -> np.ndarray:
    """:func:`max_samples_per_slot` job by job, on any cluster: the reference of :func:`_max_samples_identical`
    (tests/test_workload_grid.py compares them)."""
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


# cells ([jobs, workers, resources]) of one block of :func:`_max_samples_identical`: bounds its memory
_BLOCK_CELLS = 1 << 18


def _max_samples_identical(instance: Instance) -> np.ndarray:
    """:func:`max_samples_reference` on H identical machines, the same numbers by the same float operations: the
    internal count and :func:`_greedy_fits` for all jobs of a block at once, over w = 0..max F_i (cells beyond a
    job's F_i are masked); the exact packing only for the jobs the greedy test leaves open."""
    jobs, H = instance.jobs, instance.num_machines
    row = instance.cluster.capacity[0]
    thesis = instance.ps_bandwidth is not None and instance.ps_at_most_workers  # (3.5)
    g_int, g_ext = ps_ratio(instance, True), ps_ratio(instance, False)
    per_int, per_ext = jobs.time_per_sample(True), jobs.time_per_sample(False)
    batch = jobs.batch
    width = int(batch.max()) + 1
    w = np.arange(width)
    w_int = np.zeros(instance.num_jobs, dtype=np.int64)
    greedy = np.zeros(instance.num_jobs, dtype=bool)
    step = max(1, _BLOCK_CELLS // (width * len(row)))
    for lo in range(0, instance.num_jobs, step):
        b = slice(lo, lo + step)
        alpha, beta, f = jobs.worker_demand[b, None, :], jobs.ps_demand[b, None, :], batch[b]
        valid = w[None, :] <= f[:, None]
        need = w[None, :, None] * alpha + _servers(w[None, :], g_int[b, None], thesis)[:, :, None] * beta
        w_int[b] = _last((need <= row + 1e-9).all(axis=2) & valid)
        greedy[b] = _greedy_fits_identical(row, H, alpha, beta, f, w, valid, _servers(f, g_ext[b], thesis))
    # external placements only where one could beat the internal one (at most F_i workers) and H >= 2
    external = (w_int / per_int < batch / per_ext) & (H >= 2)
    w_ext = np.where(external & greedy, batch, 0)
    for i in np.flatnonzero(external & ~greedy).tolist():
        cap = int(batch[i])
        hosted = _servers_on_identical(row, H, jobs.worker_demand[i], jobs.ps_demand[i], cap)
        ok = (hosted >= _servers(w[: cap + 1], g_ext[i], thesis)) & (w[: cap + 1] >= 1)
        w_ext[i] = int(np.flatnonzero(ok)[-1]) if ok.any() else 0
    out: np.ndarray = np.maximum(w_int / per_int, w_ext / per_ext)
    return out


def _servers_on_identical(row: np.ndarray, count: int, alpha: np.ndarray, beta: np.ndarray, cap: int) -> np.ndarray:
    """:func:`_servers_on_machines` on ``count`` machines of capacity ``row``, the same binary powers of
    :func:`_max_plus` on each table's possible part alone: x workers fit on k machines only up to k times the
    most on one, and beyond that both tables are impossible (-1), as are their products."""
    one = _servers_hosted(row, alpha, beta, cap)
    power = one[: int(np.flatnonzero(one >= 0)[-1]) + 1]  # x = 0 always fits on an empty machine
    total = np.zeros(1, dtype=np.int64)
    while count:
        if count & 1:
            total = _max_plus_upto(total, power, cap)
        count >>= 1
        if count:
            power = _max_plus_upto(power, power, cap)
    out = np.full(cap + 1, -1, dtype=np.int64)
    out[: len(total)] = total
    return out


def _max_plus_upto(a: np.ndarray, b: np.ndarray, cap: int) -> np.ndarray:
    """:func:`_max_plus` of two tables with no impossible entry, of any lengths, for w up to ``cap``: every
    sum of one entry of each is possible, and the results are capped at ``cap`` as there."""
    n = min(len(a) + len(b) - 1, cap + 1)
    padded = np.full(n + len(a) - 1, _IMPOSSIBLE)
    padded[len(a) - 1 : len(a) - 1 + min(len(b), n)] = b[:n]
    window = as_strided(padded, shape=(n, len(a)), strides=(padded.strides[0],) * 2, writeable=False)
    out: np.ndarray = np.minimum((window + a[::-1]).max(axis=1), cap)  # window[w, j] + a[len(a) - 1 - j]
    return out


def _last(mask: np.ndarray) -> np.ndarray:
    """Per row, the last index where ``mask`` holds (each row holds at index 0)."""
    out: np.ndarray = mask.shape[1] - 1 - mask[:, ::-1].argmax(axis=1)
    return out


def _greedy_fits_identical(
    row: np.ndarray,
    count: int,
    alpha: np.ndarray,
    beta: np.ndarray,
    f: np.ndarray,
    w: np.ndarray,
    valid: np.ndarray,
    servers: np.ndarray,
) -> np.ndarray:
    """:func:`_greedy_fits` of F_i workers and ``servers`` PSs, per job of a block, on ``count`` machines of
    capacity ``row``: :func:`_servers_hosted`'s tables for x = 0..F_i (``valid``) of all jobs at once."""
    room = row - w[None, :, None] * alpha  # [job, x, R]
    held = (room >= -1e-9).all(axis=2) & valid
    most = _last(held)  # workers one machine holds (capped at F_i)
    room, held = room[:, : int(most.max()) + 1], held[:, : int(most.max()) + 1]  # the entries read below
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(beta > 0, np.floor((room + 1e-9) / beta), f[:, None, None])
    table = np.where(held, np.minimum(per.min(axis=2), f[:, None]), -1).astype(np.int64)
    full = np.minimum(count, f // np.maximum(most, 1))
    left = f - full * most
    rest = np.where(full < count, np.minimum(left, most), 0)
    left -= rest
    jobs = np.arange(len(f))
    hosted = full * table[jobs, most] + np.where(full < count, table[jobs, rest], 0)
    hosted += np.maximum(count - full - 1, 0) * table[:, 0]
    out: np.ndarray = (most > 0) & (left == 0) & (hosted >= servers)
    return out


def fastest_slots(instance: Instance) -> np.ndarray:
    """n_i: the slots job i needs alone at :func:`max_samples_per_slot` (a huge number if it cannot run)."""
    rate = max_samples_per_slot(instance)
    with np.errstate(divide="ignore"):
        n = np.ceil(instance.jobs.workload / rate * (1.0 - COVER_RTOL))
    return np.where(rate > 0, n, _HUGE).astype(np.int64)


def fastest_completion(instance: Instance) -> np.ndarray:
    """The slot in which job i's fastest schedule alone completes, -1 if that is after T - 1."""
    done = instance.jobs.arrival + fastest_slots(instance) - 1
    return np.where(done < instance.slots, done, -1)


def utility_ceiling(instance: Instance, completion: np.ndarray | None = None) -> float:
    """Sum over jobs of u_i at the fastest schedule alone: no schedule earns more (utilities are
    non-increasing in the completion time). ``completion``: :func:`fastest_completion`, if known."""
    done = fastest_completion(instance) if completion is None else completion
    jobs = instance.jobs
    utility = jobs.utility(done - jobs.arrival)  # each job's u_i(d) by the same operations as ``utility_of``
    return float(sum(utility[done >= 0].tolist()))  # summed in job order, as Python adds
