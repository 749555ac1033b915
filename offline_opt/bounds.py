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
        w_ext = np.minimum(w_mac @ cl.count, whole)
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
