"""The feasibility validator of the paper's model (Section III, eqs. 1-5; docs/MODEL.md): the only judge of a schedule.

It recomputes everything from the integer counts and the instance alone (it shares no code with any policy
or with the simulator's bookkeeping): capacity (eq. 5), the worker cap F (eq. 4), the worker:PS ratio
(eq. 2, read as s >= ceil(w / gamma) and s > 0 iff w > 0), no allocation before arrival (eq. 7) or to a job
that was not admitted, the locality of every (job, slot) (Fact 1) and the samples it yields (eqs. 1-3),
restarts (a job that ran before changes placement; it loses ``schedule.restart_loss`` of that slot's samples),
completion slots, and utilities. Reported utility always comes from here.

Under the thesis's model (``instance.ps_bandwidth`` set) two more rules of the thesis (docs/MODEL.md): the
PSs carry their workers' traffic, w b <= B_i s with b the rate of the placement (3.4), and s <= w (3.5) unless
``instance.ps_at_most_workers`` is False (Algorithm 4 as printed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from .compact import compact_repr
from .config import JSON
from .model import Instance
from .portable_math import dot
from .schedule import Schedule

# Relative slack on the workload test: a plan that processes exactly V_i samples in several slots may sum
# to V_i (1 - 1e-15 * slots) in floating point; a real shortfall is at least one sample.
WORKLOAD_RTOL = 1e-12
CAPACITY_ATOL = 1e-9
PS_BANDWIDTH_RTOL = 1e-9  # (3.4) compares products of reals: w b vs s B


@dataclass(frozen=True, kw_only=True)
class Violation:
    kind: str
    detail: str
    slot: int | None = None
    job: int | None = None
    machine: int | None = None

    def as_dict(self) -> JSON:
        return {"kind": self.kind, "slot": self.slot, "job": self.job, "machine": self.machine, "detail": self.detail}


@dataclass(kw_only=True)
class Validation:
    violations: list[Violation]
    samples: np.ndarray  # [T, I] samples processed per slot
    internal: np.ndarray  # [T, I] allocation is internal (Fact 1)
    restarts: np.ndarray  # [T, I] placement changed after the job had run (costs restart_loss)
    completion: np.ndarray  # [I] first slot with cumulative samples >= V_i, -1 if never
    utility: np.ndarray  # [I] u_i(completion - a_i) for admitted complete jobs, else 0
    usage: np.ndarray  # [T, H, R] resources in use
    checked: int  # slots checked: every per-slot value from this slot on is zero (the schedule's idle tail)
    total_utility: float = field(init=False)

    def __repr__(self) -> str:
        return compact_repr(self, ok=self.ok)

    def __post_init__(self) -> None:
        self.total_utility = float(self.utility.sum())

    @property
    def ok(self) -> bool:
        return not self.violations


def _cells(mask: ArrayLike) -> list[tuple[int, ...]]:
    return [tuple(int(x) for x in idx) for idx in np.argwhere(mask)]


# Up to this many (slot, machine, job, resource) products :func:`_usage` forms them all at once. With one
# resource the sum over jobs would run along the contiguous axis, pairwise, in another order: never at once then.
USAGE_AT_ONCE = 1 << 16


def _usage(w: np.ndarray, s: np.ndarray, alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Resources in use [T, H, R]: per slot, the sum over jobs (in job order, by
    :func:`~pdors.portable_math.dot`) of their counts times their demands. Jobs with no task in a slot add
    exactly 0.0 there, so they are left out, or (a small schedule, all slots at once) kept."""
    T, _, H = w.shape
    if w.size * alpha.shape[1] <= USAGE_AT_ONCE and alpha.shape[1] > 1:
        at_once: np.ndarray = dot(w.transpose(0, 2, 1), alpha) + dot(s.transpose(0, 2, 1), beta)
        return at_once
    usage = np.zeros((T, H, alpha.shape[1]))
    busy = np.asarray(w.any(axis=2) | s.any(axis=2))
    for t in np.flatnonzero(busy.any(axis=1)).tolist():  # a slot without tasks uses exactly nothing
        rows = np.flatnonzero(busy[t])
        usage[t] = dot(w[t, rows].T, alpha[rows]) + dot(s[t, rows].T, beta[rows])
    return usage


def validate(instance: Instance, schedule: Schedule, limit: int = 50) -> Validation:
    """Check ``schedule`` against ``instance``; at most ``limit`` violations of each kind are listed."""
    jobs, cap = instance.jobs, instance.cluster.capacity
    w, s = schedule.workers, schedule.servers  # int32: every count and sum below is exact without a copy
    T, I, H = w.shape
    if (instance.slots, instance.num_jobs, instance.num_machines) != (T, I, H) or s.shape != w.shape:
        raise ValueError(f"schedule shape {w.shape} does not match instance {(instance.slots, I, H)}")
    # Every cell after the schedule's horizon is zero: its checks pass and it yields nothing, so the checks run
    # on the slots before it and the per-slot results are those values followed by zeros (a long horizon's idle
    # tail costs neither time nor a different bit).
    S = min(T, max(schedule.horizon(), 1))  # at least one slot: a completion is looked for in it
    w, s = w[:S], s[:S]
    loss = schedule.restart_loss
    if not 0.0 <= loss < 1.0:
        raise ValueError(f"schedule.restart_loss: must lie in [0, 1), got {loss}")
    out: list[Violation] = []

    def report(kind: str, mask: np.ndarray | np.bool_, describe: Callable[..., Violation]) -> None:
        if not mask.any():
            return
        for idx in _cells(mask)[:limit]:
            out.append(describe(kind, *idx))

    if min(w.min(initial=0), s.min(initial=0)) < 0:  # the full mask only when there is something to list
        report(
            "negative",
            (w < 0) | (s < 0),
            lambda k, t, i, h: Violation(
                kind=k, detail=f"negative count w={w[t, i, h]} s={s[t, i, h]}", slot=t, job=i, machine=h
            ),
        )
    usage = _usage(w, s, jobs.worker_demand, jobs.ps_demand)
    over = usage > cap[None, :, :] + CAPACITY_ATOL
    report(
        "capacity",
        over.any(axis=2),
        lambda k, t, h: Violation(
            kind=k,
            detail=f"usage {usage[t, h].tolist()} exceeds capacity {cap[h].tolist()}",
            slot=t,
            job=None,
            machine=h,
        ),
    )
    wsum, ssum = w.sum(axis=2), s.sum(axis=2)
    report(
        "cap",
        wsum > jobs.batch[None, :],
        lambda k, t, i: Violation(kind=k, detail=f"{wsum[t, i]} workers exceed F_i = {jobs.batch[i]}", slot=t, job=i),
    )
    need_ps = -(-wsum // jobs.gamma[None, :])
    bad_ratio = (ssum < need_ps) | ((ssum > 0) & (wsum == 0))
    report(
        "ratio",
        bad_ratio,
        lambda k, t, i: Violation(
            kind=k,
            detail=f"{ssum[t, i]} PSs for {wsum[t, i]} workers at gamma {jobs.gamma[i]} (need >= {need_ps[t, i]}, "
            f"and none without workers)",
            slot=t,
            job=i,
        ),
    )
    busy = (wsum > 0) | (ssum > 0)
    early = busy & (np.arange(S)[:, None] < jobs.arrival[None, :])
    report(
        "before_arrival",
        early,
        lambda k, t, i: Violation(
            kind=k, detail=f"allocated in slot {t} before arrival {jobs.arrival[i]}", slot=t, job=i
        ),
    )
    report(
        "not_admitted",
        busy & ~schedule.admitted[None, :],
        lambda k, t, i: Violation(kind=k, detail="resources allocated to a job that was not admitted", slot=t, job=i),
    )

    # Fact 1: internal iff all workers and PSs of the job sit on one single machine. Locality and restarts
    # matter only where the job has workers: computed for those (slot, job) cells.
    run_t, run_i = np.nonzero(wsum > 0)
    hosts = np.zeros_like(wsum)
    hosts[run_t, run_i] = ((w[run_t, run_i] > 0) | (s[run_t, run_i] > 0)).sum(axis=1)
    internal = (hosts == 1) & (wsum > 0)
    bw = link_rate(instance, internal)
    ps_bandwidth = instance.ps_bandwidth
    if ps_bandwidth is not None:
        traffic, carried = wsum * bw, ssum * ps_bandwidth[None, :]
        report(
            "ps_bandwidth",
            traffic > carried * (1.0 + PS_BANDWIDTH_RTOL),
            lambda k, t, i: Violation(
                kind=k,
                detail=f"{wsum[t, i]} workers at rate {bw[t, i]:.6g} exceed what {ssum[t, i]} PSs carry at "
                f"B_i = {ps_bandwidth[i]:.6g} (3.4)",
                slot=t,
                job=i,
            ),
        )
        report(
            "ps_over_workers",
            (ssum > wsum) & instance.ps_at_most_workers,
            lambda k, t, i: Violation(kind=k, detail=f"{ssum[t, i]} PSs for {wsum[t, i]} workers (3.5)", slot=t, job=i),
        )
    claimed = schedule.claimed_internal[:S] & (wsum > 0)
    report(
        "locality",
        claimed != internal,
        lambda k, t, i: Violation(
            kind=k,
            detail=f"claimed {'internal' if claimed[t, i] else 'external'} rate, allocation is "
            f"{'internal' if internal[t, i] else 'external'}",
            slot=t,
            job=i,
        ),
    )

    # Restart: workers now, workers in some earlier slot, and any per-machine count differs from slot t - 1.
    ran_before = np.zeros_like(busy)
    ran_before[1:] = np.cumsum(wsum > 0, axis=0)[:-1] > 0
    moved = np.zeros_like(busy)
    later = run_t > 0
    lt, li = run_t[later], run_i[later]
    moved[lt, li] = ((w[lt, li] != w[lt - 1, li]) | (s[lt, li] != s[lt - 1, li])).any(axis=1)
    restarts = (wsum > 0) & ran_before & moved
    if loss > 0:  # with a free restart the claim changes no sample, so it is not checked
        report(
            "restart",
            schedule.claimed_restart[:S] != restarts,
            lambda k, t, i: Violation(
                kind=k,
                detail=f"claimed {'a' if schedule.claimed_restart[t, i] else 'no'} restart, placement "
                f"{'changed' if restarts[t, i] else 'did not change'} after the job had run",
                slot=t,
                job=i,
            ),
        )
    samples = _padded(slot_samples(instance, wsum, bw, restarts, loss, jobs.gamma[None, :]), T)
    completion, utility = outcome(instance, samples[:S], schedule.admitted)  # the cumulative sum is flat after S
    for i in np.flatnonzero(schedule.claimed_completion != completion)[:limit]:
        c = int(schedule.claimed_completion[i])
        out.append(
            Violation(
                kind="completion",
                detail=f"claimed completion slot {c}, recomputed "
                f"{int(completion[i])} ({samples[:, i].sum():.6g} of {jobs.workload[i]:.6g} samples)",
                slot=c if c >= 0 else None,
                job=int(i),
            )
        )
    return Validation(
        violations=out,
        samples=samples,
        internal=_padded(internal, T),
        restarts=_padded(restarts, T),
        completion=completion,
        utility=utility,
        usage=_padded(usage, T),
        checked=S,
    )


def _padded(a: np.ndarray, slots: int) -> np.ndarray:
    """``a`` [S, ...] followed by zeros up to ``slots`` rows (``a`` itself when S = slots)."""
    if len(a) == slots:
        return a
    out = np.zeros((slots, *a.shape[1:]), dtype=a.dtype)
    out[: len(a)] = a
    return out


def link_rate(instance: Instance, internal: np.ndarray) -> np.ndarray:
    """[T, I] the bandwidth each (slot, job) runs at: b^(i) where the allocation is internal (Fact 1), else b^(e)."""
    return np.where(internal, instance.jobs.bw_internal[None, :], instance.jobs.bw_external[None, :])


def slot_samples(
    instance: Instance, wsum: np.ndarray, rate: np.ndarray, restarts: np.ndarray, loss: float, ratio: np.ndarray
) -> np.ndarray:
    """[T, I] samples processed per slot, eqs. (1)-(3): ``sum_h w / (tau + 2 g ratio / (b F))``, less ``loss`` of
    them in a restart slot. ``ratio`` is the worker:PS ratio the rate assumes: the model's is the nominal gamma_i
    (docs/MODEL.md, "Three readings" (b)); :mod:`pdors.retime` passes the actual ``sum w / sum s``."""
    jobs = instance.jobs
    per_sample = jobs.tau[None, :] + 2.0 * jobs.grad_mb[None, :] * ratio / (rate * jobs.batch[None, :])
    out: np.ndarray = np.where(restarts, 1.0 - loss, 1.0) * wsum / per_sample
    return out


def outcome(instance: Instance, samples: np.ndarray, admitted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each job's completion slot (first with cumulative samples >= V_i, -1 if never) and utility
    (u_i(completion - a_i) for an admitted complete job, else 0) from its [T, I] samples per slot."""
    jobs = instance.jobs
    done = np.cumsum(samples, axis=0) >= (jobs.workload * (1.0 - WORKLOAD_RTOL))[None, :]
    completion = np.where(done.any(axis=0), done.argmax(axis=0), -1)
    complete = (completion >= 0) & admitted
    utility = np.where(complete, jobs.utility(np.maximum(completion - jobs.arrival, 0)), 0.0)
    return completion, utility
