"""Per-job constants of the offline DMLRS that every formulation shares: rates, per-machine count bounds and
the slots in which a job can possibly complete.

All bounds are implied by the model of the paper's Section III (eqs. 1-5; docs/MODEL.md); none cuts off a feasible
schedule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pdors.model import Instance

# A job "can complete by k" when its fastest possible progress reaches V_i (1 - EPS): the same relative
# slack the validator grants a plan summing to exactly V_i in floating point.
EPS = 1e-12


def _max_count(
    limit: int, unit: np.ndarray, capacity: np.ndarray, extra: Callable[[int], np.ndarray] | None = None
) -> int:
    """Largest n <= limit with n * unit (+ extra(n)) <= capacity on every resource."""
    best = 0
    for n in range(1, limit + 1):
        use = n * unit + (extra(n) if extra is not None else 0.0)
        if np.any(use > capacity + 1e-9):
            break
        best = n
    return best


@dataclass(frozen=True)
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
    jobs, cap, T = instance.jobs, instance.cluster.capacity, instance.slots
    H = instance.num_machines
    rate_int = 1.0 / jobs.time_per_sample(True)
    rate_ext = 1.0 / jobs.time_per_sample(False)
    out = []
    for i in range(instance.num_jobs):
        F, g = int(jobs.batch[i]), int(jobs.gamma[i])
        alpha, beta = jobs.worker_demand[i], jobs.ps_demand[i]

        def ps_for(n: int, g: int = g, beta: np.ndarray = beta) -> np.ndarray:
            out: np.ndarray = -(-n // g) * beta
            return out  # the ceil(n / gamma) PSs of n workers (eq. 2)

        w_int = tuple(_max_count(F, alpha, cap[h], ps_for) for h in range(H))
        w_mac = tuple(_max_count(F, alpha, cap[h]) for h in range(H))
        s_mac = tuple(_max_count(-(-F // g), beta, cap[h]) for h in range(H))
        # External needs >= 2 machines; its workers and PSs together fit in the whole cluster.
        w_ext = min(sum(w_mac), _max_count(F, alpha, cap.sum(axis=0), ps_for)) if H >= 2 else 0
        max_samples = max(rate_int[i] * max(w_int), rate_ext[i] * w_ext)
        a, V = int(jobs.arrival[i]), float(jobs.workload[i])
        completion = tuple(k for k in range(a, T) if (k - a + 1) * max_samples >= V * (1.0 - EPS))
        out.append(
            JobBounds(
                i,
                a,
                V,
                F,
                g,
                float(rate_int[i]),
                float(rate_ext[i]),
                w_int,
                w_mac,
                s_mac,
                w_ext,
                float(max_samples),
                completion,
            )
        )
    return out


def identical_machines(instance: Instance) -> bool:
    cap = instance.cluster.capacity
    return bool(np.all(cap == cap[0]))
