"""Per-job constants of the offline DMLRS that every formulation shares: rates, per-machine count bounds and
the slots in which a job can possibly complete.

All bounds are implied by the model of the paper's Section III (eqs. 1-5; docs/MODEL.md); none cuts off a feasible
schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pdors.model import Instance

# A job "can complete by k" when its fastest possible progress reaches V_i (1 - EPS): the same relative
# slack the validator grants a plan summing to exactly V_i in floating point.
EPS = 1e-12


@dataclass(frozen=True)
class MachineClasses:
    """Machines grouped by identical capacity: ``capacity[c]`` (C x R), ``count[c]`` machines of class c,
    ``of_machine[h]`` the class of machine h."""

    capacity: np.ndarray
    count: np.ndarray
    of_machine: np.ndarray


def machine_classes(instance: Instance) -> MachineClasses:
    capacity, of_machine = np.unique(instance.cluster.capacity, axis=0, return_inverse=True)
    return MachineClasses(capacity, np.bincount(of_machine.ravel(), minlength=len(capacity)), of_machine.ravel())


def _fit_count(
    limit: np.ndarray,
    unit: np.ndarray,
    capacity: np.ndarray,
    gamma: np.ndarray | None = None,
    ps: np.ndarray | None = None,
) -> np.ndarray:
    """[I, C] largest n <= limit_i with n unit_i (+ ceil(n / gamma_i) ps_i) <= capacity_c (+1e-9) on every
    resource. Usage grows with n, so the feasible n form a prefix 1..n*: n* is the length of that prefix."""
    n = np.arange(1, int(limit.max(initial=0)) + 1, dtype=float)  # [N]
    use = n[None, :, None] * unit[:, None, :]  # [I, N, R]
    if gamma is not None:
        use = use + np.ceil(n[None, :] / gamma[:, None])[:, :, None] * np.asarray(ps)[:, None, :]
    fits = np.all(use[:, None] <= capacity[None, :, None, :] + 1e-9, axis=3)  # [I, C, N]
    fits &= n[None, None, :] <= limit[:, None, None]
    return np.asarray(np.cumprod(fits, axis=2).sum(axis=2), dtype=np.int64)


# The exact packing of an external allocation is a max-plus convolution over the PSs' count: above this many PSs
# the count stays the pooled one, so the work stays a few hundred array operations per machine class
PACKED_SERVERS_MAX = 64


def _max_plus(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """[J, S] (x * y)[s] = max over k <= s of x[s - k] + y[k]."""
    out = np.full_like(x, -np.inf)
    for k in range(x.shape[1]):
        out[:, k:] = np.maximum(out[:, k:], x[:, : x.shape[1] - k] + y[:, k : k + 1])
    return out


def _packed_count(
    limit: np.ndarray, gamma: np.ndarray, alpha: np.ndarray, beta: np.ndarray, cl: MachineClasses
) -> np.ndarray:
    """[I] most workers W <= limit_i of an allocation whose W workers and ceil(W / gamma_i) PSs each sit whole on one
    machine (alone on the cluster): max over S of min(gamma S, limit, most workers beside S PSs spread over the
    machines). The pooled bound (capacities summed) lets a worker or PS straddle two machines; this does not. Jobs
    that would need more than ``PACKED_SERVERS_MAX`` PSs keep ``limit``."""
    S = -(-limit // gamma)
    todo = S <= PACKED_SERVERS_MAX
    out = limit.astype(np.int64).copy()
    if not todo.any():
        return out
    a, b, f, g = alpha[todo], beta[todo], limit[todo].astype(float), gamma[todo].astype(float)
    s = np.arange(int(S[todo].max()) + 1, dtype=float)
    unit = np.where(s == 0, 0.0, -np.inf)[None, :].repeat(len(f), 0)  # max-plus identity: nothing placed
    best = unit  # most workers with exactly s PSs placed on the classes so far
    for c, n in zip(cl.capacity, cl.count, strict=True):
        room = c[None, None, :] - s[None, :, None] * b[:, None, :] + 1e-9  # [J, S, R] left beside s PSs
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.where(a[:, None, :] > 0, np.floor(room / a[:, None, :]), np.inf).min(axis=2)
        per = np.where((room >= 0).all(axis=2), np.minimum(per, f[:, None]), -np.inf)  # one machine of class c
        carriers = min(int(n), len(s) - 1)  # at most that many machines hold a PS; the others hold ``alone`` workers
        power, e, alone = unit, carriers, per[:, :1]
        while e:  # per convolved ``carriers`` times, by squaring
            if e & 1:
                power = _max_plus(power, per)
            per, e = _max_plus(per, per), e >> 1
        best = _max_plus(best, power) + (int(n) - carriers) * alone
    need = np.minimum(g[:, None] * s[None, :], f[:, None])  # workers S PSs can serve (eq. 2), at most the limit
    out[todo] = np.maximum(np.floor(np.minimum(best, need).max(axis=1)), 0).astype(np.int64)
    return out


@dataclass(frozen=True, kw_only=True)
class CountLimits:
    """Vectorised per-job count bounds (eqs. 2, 4, 5), per machine class: ``w_internal[i, c]`` most workers job i
    runs internally on one machine of class c (with their ceil(w / gamma) PSs), ``w_machine``/``s_machine`` most
    workers / PSs of job i alone on such a machine, ``w_external[i]`` most workers of an external allocation
    (0 on one machine): they fit the per-machine worker limits and, with their PSs, the whole cluster."""

    classes: MachineClasses
    w_internal: np.ndarray
    w_machine: np.ndarray
    s_machine: np.ndarray
    w_external: np.ndarray


def count_limits(instance: Instance) -> CountLimits:
    jobs, cl = instance.jobs, machine_classes(instance)
    F, g = jobs.batch, jobs.gamma.astype(float)
    alpha, beta = jobs.worker_demand, jobs.ps_demand
    w_int = _fit_count(F, alpha, cl.capacity, g, beta)
    w_mac = _fit_count(F, alpha, cl.capacity)
    s_mac = _fit_count(-(-F // jobs.gamma), beta, cl.capacity)
    if instance.num_machines >= 2:
        whole = _fit_count(F, alpha, instance.cluster.capacity.sum(axis=0)[None, :], g, beta)[:, 0]
        w_ext = _packed_count(np.minimum(w_mac @ cl.count, whole), jobs.gamma, alpha, beta, cl)
    else:
        w_ext = np.zeros(len(F), dtype=np.int64)
    return CountLimits(classes=cl, w_internal=w_int, w_machine=w_mac, s_machine=s_mac, w_external=w_ext)


@dataclass(frozen=True, kw_only=True)
class JobBounds:
    """Constants of job ``i`` (eqs. 1-5).

    ``rate_int``/``rate_ext``: samples per worker per slot, 1 / (tau + 2 g gamma / (b F)) with b internal
    or external. ``w_internal[h]``: most workers the job can run internally on machine h (with their
    ceil(w / gamma) PSs on the same machine). ``w_machine[h]``/``s_machine[h]``: most workers / PSs of the
    job that fit on machine h on their own. ``w_external``: most workers an external allocation can hold on
    the whole cluster. ``max_samples``: most samples the job can process in one slot. ``completion``: the
    slots k >= a_i by which the job could finish at ``max_samples`` per slot.
    """

    job: int
    arrival: int
    workload: float
    batch: int
    gamma: int
    rate_int: float
    rate_ext: float
    w_internal: tuple[int, ...]
    w_machine: tuple[int, ...]
    s_machine: tuple[int, ...]
    w_external: int
    max_samples: float
    completion: tuple[int, ...]


def job_bounds(instance: Instance) -> list[JobBounds]:
    jobs, T = instance.jobs, instance.slots
    rate_int = 1.0 / jobs.time_per_sample(True)
    rate_ext = 1.0 / jobs.time_per_sample(False)
    lim = count_limits(instance)
    of = lim.classes.of_machine
    out = []
    for i in range(instance.num_jobs):
        w_int = tuple(int(x) for x in lim.w_internal[i, of])
        max_samples = max(rate_int[i] * max(w_int), rate_ext[i] * int(lim.w_external[i]))
        a, V = int(jobs.arrival[i]), float(jobs.workload[i])
        completion = tuple(k for k in range(a, T) if (k - a + 1) * max_samples >= V * (1.0 - EPS))
        out.append(
            JobBounds(
                job=i,
                arrival=a,
                workload=V,
                batch=int(jobs.batch[i]),
                gamma=int(jobs.gamma[i]),
                rate_int=float(rate_int[i]),
                rate_ext=float(rate_ext[i]),
                w_internal=w_int,
                w_machine=tuple(int(x) for x in lim.w_machine[i, of]),
                s_machine=tuple(int(x) for x in lim.s_machine[i, of]),
                w_external=int(lim.w_external[i]),
                max_samples=float(max_samples),
                completion=completion,
            )
        )
    return out


def identical_machines(instance: Instance) -> bool:
    cap = instance.cluster.capacity
    return bool(np.all(cap == cap[0]))
