"""How heavy an instance is against its cluster: offered load and the fluid completion bound.

Both are pure functions of the :class:`~pdors.model.Instance` (docs/MODEL.md, "Load"). A job's demand is
counted in resource-slots: processing ``V_i = E_i K_i`` samples at ``p`` slots per sample takes ``V_i p``
worker-slots (eq. 1), and each worker-slot needs ``alpha_i^r`` plus at least ``beta_i^r / gamma_i`` for its
share of the parameter servers (eq. 2: ``s >= ceil(w / gamma) >= w / gamma``).
"""

from __future__ import annotations

import numpy as np

from .model import Instance

# Demands are shrunk and rates raised by this relative slack before any comparison, so float rounding can only
# loosen the bound (it is at least the validator's completion slack, ``validator.WORKLOAD_RTOL``).
SLACK = 1e-9
# The rates of :func:`offered_load`: communication free, at b_i^(i), at b_i^(e).
LOAD_VARIANTS = ("compute", "internal", "external")


def _per_worker(instance: Instance) -> np.ndarray:
    """alpha_i^r + beta_i^r / gamma_i: resources one worker-slot needs with its share of PSs (I x R)."""
    jobs = instance.jobs
    out: np.ndarray = jobs.worker_demand + jobs.ps_demand / jobs.gamma[:, None]
    return out


def _demand(instance: Instance, time_per_sample: np.ndarray) -> np.ndarray:
    """Resource-slots each job needs at ``time_per_sample`` slots per sample (I x R)."""
    out: np.ndarray = (instance.jobs.workload * time_per_sample)[:, None] * _per_worker(instance)
    return out


def _shares(demand: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """demand / capacity per resource; 0 where the demand is 0, inf where only the capacity is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(demand > 0, demand / capacity, 0.0)


def offered_load(instance: Instance) -> dict[str, float]:
    """Sum over jobs of the job's dominant-resource demand, over the cluster's capacity across the horizon.

    ``sum_i max_r D_i^r / (T sum_h C_h^r)`` with ``D_i^r = V_i p_i (alpha_i^r + beta_i^r / gamma_i)``, in
    three variants of ``p_i`` (slots per sample): ``compute`` = tau_i (communication free), ``internal`` and
    ``external`` = tau_i + 2 g_i gamma_i / (b F_i) with b = b_i^(i) or b_i^(e) (eqs. 1-2). With identical
    machines this is dominant-resource machine-slots demanded over the H T machine-slots there are; 1 means
    the jobs exactly fill the cluster.
    """
    jobs, capacity = instance.jobs, instance.cluster.capacity.sum(axis=0) * instance.slots
    rates = (jobs.tau, jobs.time_per_sample(True), jobs.time_per_sample(False))
    return {
        name: float(_shares(_demand(instance, p), capacity).max(axis=1).sum())
        for name, p in zip(LOAD_VARIANTS, rates, strict=False)
    }


def max_samples_per_slot(instance: Instance) -> np.ndarray:
    """An upper bound on the samples job i can process in one slot (eqs. 1, 2, 4, 5), per job.

    Internal (Fact 1): all its workers on one machine h, at most ``min(F_i, min_r C_h^r / (alpha^r + beta^r /
    gamma))`` of them. External (needs H >= 2): at most ``min(F_i, min_r sum_h C_h^r / (alpha^r + beta^r /
    gamma))`` workers at the external rate. Counts are floored; the PS share is the fractional ``w / gamma``,
    which only lets more workers fit.
    """
    jobs, cap = instance.jobs, instance.cluster.capacity
    unit = _per_worker(instance)  # I x R
    fit_int = np.floor(_fit(cap[None, :, :], unit[:, None, :]).max(axis=1) * (1 + SLACK))  # best machine
    fit_ext = np.floor(_fit(cap.sum(axis=0), unit) * (1 + SLACK)) if instance.num_machines >= 2 else 0.0
    workers_int = np.minimum(jobs.batch, fit_int)
    workers_ext = np.minimum(jobs.batch, fit_ext)
    out: np.ndarray = np.maximum(workers_int / jobs.time_per_sample(True), workers_ext / jobs.time_per_sample(False))
    return out


def _fit(capacity: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """min_r capacity^r / unit^r over the last axis (inf where the job needs none of any resource)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out: np.ndarray = np.where(unit > 0, capacity / unit, np.inf).min(axis=-1)
        return out


def alone_completable(instance: Instance) -> np.ndarray:
    """Jobs that could finish by slot T-1 on an otherwise empty cluster at ``max_samples_per_slot`` (bool, I)."""
    window = instance.slots - instance.jobs.arrival
    out: np.ndarray = max_samples_per_slot(instance) * (1 + SLACK) * window >= instance.jobs.workload
    return out


def fluid_completable(instance: Instance) -> int:
    """An upper bound on the number of jobs any feasible schedule completes (docs/MODEL.md, "Load").

    Relaxation: job i may complete only if it can alone (:func:`alone_completable`); completing it uses at
    least ``D_i^r`` resource-slots of each resource r at its cheapest rate ``p_i = min(internal, external)``
    slots per sample, all in slots ``a_i .. T-1``. So a completed set S satisfies, for every resource r and
    slot t, ``sum_{i in S, a_i >= t} D_i^r <= (T - t) sum_h C_h^r``. For one resource this is a single
    machine with deadlines in reversed time (deadline T - a_i, processing D_i^r / sum_h C_h^r), whose
    largest feasible set Moore-Hodgson's rule finds exactly; the bound is the smallest of these maxima.
    """
    jobs = instance.jobs
    fastest = np.minimum(jobs.time_per_sample(True), jobs.time_per_sample(False))
    processing = _shares(_demand(instance, fastest), instance.cluster.capacity.sum(axis=0)) * (1 - SLACK)
    deadline = (instance.slots - jobs.arrival).astype(float)
    candidates = np.flatnonzero(alone_completable(instance))
    # the candidates by deadline, once for every resource; read as Python numbers (the same values)
    order = candidates[np.argsort(deadline[candidates], kind="stable")]
    due = deadline[order].tolist()
    return min(_most_on_time(processing[order, r].tolist(), due) for r in range(processing.shape[1]))


def _most_on_time(processing: list[float], deadline: list[float]) -> int:
    """Moore-Hodgson: the largest number of jobs one unit-rate machine finishes by their deadlines
    (all released at 0, preemption irrelevant), the jobs given in order of their deadlines."""
    kept: list[float] = []
    for p, d in zip(processing, deadline, strict=True):
        kept.append(p)
        if sum(kept) > d:
            kept.remove(max(kept))
    return len(kept)
