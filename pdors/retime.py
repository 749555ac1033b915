"""The other reading of eq. (1), measured: a schedule re-timed with the actual worker:PS ratio.

The model's rate uses the nominal gamma_i whatever a job's PS count (docs/MODEL.md, "Three readings" (b)). Eq. (1)
read literally has ``sum_h w / sum_h s`` in its place, which differs wherever ``ceil(w / gamma)`` PSs (or more)
serve ``w`` workers. ``retime`` keeps a validated schedule's allocations (not re-planned: a policy that knew the
other rate would plan differently) and recomputes samples, completions and utilities with the actual ratio, using
the validator's own rate and completion rules; at the nominal gamma it reproduces the validated utility exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import Instance
from .schedule import Schedule
from .validator import Validation, link_rate, outcome, slot_samples


@dataclass(frozen=True, kw_only=True)
class Retiming:
    """Counts over (slot, job) pairs with workers, and total utility under the two readings of eq. (1)."""

    running: int  # (slot, job) pairs with workers
    extra_ps: int  # of them, pairs with more PSs than ceil(sum w / gamma_i)
    extra_ps_jobs: int  # jobs with at least one such pair
    below_gamma: int  # pairs whose actual ratio sum w / sum s is below gamma_i (ceil rounds PSs up)
    utility_nominal: float  # the validator's: the rate with gamma_i (as run)
    utility_actual: float  # the same allocations, the rate with sum w / sum s
    completed_nominal: int
    completed_actual: int


def retime(instance: Instance, schedule: Schedule, check: Validation) -> Retiming:
    """Re-time a feasible ``schedule`` with each (slot, job)'s actual worker:PS ratio; ``check`` is the validator's
    judgement of it (a run's own, not computed again). ValueError if it lists any violation (the rates of an
    infeasible schedule mean nothing)."""
    if check.violations:
        raise ValueError(
            f"schedule: not feasible ({len(check.violations)} violation(s), first: {check.violations[0].kind})"
        )
    gamma = instance.jobs.gamma[None, :]
    wsum, ssum = schedule.workers.sum(axis=2), schedule.servers.sum(axis=2)
    running = wsum > 0
    extra = running & (ssum > -(-wsum // gamma))
    actual = np.where(running, wsum / np.maximum(ssum, 1), gamma)  # no workers: no samples, any ratio does
    samples = slot_samples(
        instance, wsum, link_rate(instance, check.internal), check.restarts, schedule.restart_loss, actual
    )
    completion, utility = outcome(instance, samples, schedule.admitted)
    return Retiming(
        running=int(running.sum()),
        extra_ps=int(extra.sum()),
        extra_ps_jobs=int(extra.any(axis=0).sum()),
        below_gamma=int((running & (wsum < gamma * ssum)).sum()),
        utility_nominal=check.total_utility,
        utility_actual=float(utility.sum()),
        completed_nominal=int(((check.completion >= 0) & schedule.admitted).sum()),
        completed_actual=int(((completion >= 0) & schedule.admitted).sum()),
    )
