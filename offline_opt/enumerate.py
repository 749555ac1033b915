"""An exhaustive offline optimum for tiny instances (I <= 3, T <= 3, H <= 2), independent of the MILP.

It shares no code with ``milp.py``/``bounds.py``: it lists every placement of every job in every slot and
searches all combinations. Two exact reductions keep the lists short:

* PSs: exactly ceil(W / gamma) per (job, slot) with W workers. Surplus PSs only consume capacity and can
  only turn an internal placement external; requires b_i^(i) >= b_i^(e) (so internal is never slower),
  which the generator guarantees (bandwidth ratio 40) and ``enumerate_opt`` checks.
* Dominance: the objective only depends on when cumulative samples first reach V_i, and u_i is
  non-increasing, so more samples never hurt. Per slot only Pareto-maximal per-job sample vectors among
  the capacity-feasible joint placements are kept; across slots only Pareto-maximal (cumulative samples,
  utility) states.

A job completes in the first slot where cumulative samples >= V_i (1 - 1e-12), the validator's slack for a
plan summing to exactly V_i in floating point (docs/MODEL.md, completion).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np

from pdors.errors import InputError
from pdors.model import Instance

LIMITS = {"jobs": 3, "slots": 3, "machines": 2}
RTOL = 1e-12


@dataclass(kw_only=True)
class Enumerated:
    value: float
    completion: list[int]  # per job, -1 if it does not complete
    slot_options: list[int]  # Pareto-maximal per-slot sample vectors, per slot
    states: int  # Pareto states kept over the whole search


def _splits(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    """All ways to write ``total`` as an ordered sum of ``parts`` non-negative integers."""
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _splits(total - first, parts - 1):
            yield (first, *rest)


def _job_placements(instance: Instance, i: int) -> list[tuple[float, np.ndarray]]:
    """Every (samples, usage[H, R]) of job i in one slot, idle included, each fitting an empty cluster."""
    j, cap = instance.jobs, instance.cluster.capacity
    H = cap.shape[0]
    alpha, beta, gamma = j.worker_demand[i], j.ps_demand[i], int(j.gamma[i])
    out = [(0.0, np.zeros_like(cap))]
    for W in range(1, int(j.batch[i]) + 1):
        S = -(-W // gamma)
        for w in _splits(W, H):
            for s in _splits(S, H):
                usage = np.outer(w, alpha) + np.outer(s, beta)
                if np.any(usage > cap + 1e-9):
                    continue
                hosts = sum(1 for h in range(H) if w[h] + s[h] > 0)
                bw = j.bw_internal[i] if hosts == 1 else j.bw_external[i]
                per_sample = j.tau[i] + 2.0 * j.grad_mb[i] * gamma / (bw * j.batch[i])
                out.append((W / per_sample, usage))
    # drop a placement when another yields at least as many samples with no more of any resource anywhere
    keep = []
    for a, (sa, ua) in enumerate(out):
        if not any(
            sb >= sa and np.all(ub <= ua) and (sb > sa or np.any(ub < ua) or b < a)
            for b, (sb, ub) in enumerate(out)
            if b != a
        ):
            keep.append((sa, ua))
    return keep


def _pareto(vectors: np.ndarray) -> np.ndarray:
    """Rows not dominated (>= everywhere, > somewhere) by another row; duplicates collapsed."""
    v = np.unique(vectors, axis=0)
    dominated = np.zeros(len(v), dtype=bool)
    for k in range(len(v)):
        if dominated[k]:
            continue
        ge = np.all(v >= v[k], axis=1) & np.any(v > v[k], axis=1)
        if ge.any():
            dominated[k] = True
    return v[~dominated]


def _slot_vectors(
    instance: Instance, present: list[int], placements: list[list[tuple[float, np.ndarray]]]
) -> np.ndarray:
    """Pareto-maximal sample vectors (over all jobs) of the joint placements of ``present`` that fit."""
    cap = instance.cluster.capacity
    I = instance.num_jobs
    found: set[tuple[float, ...]] = set()

    def dfs(k: int, free: np.ndarray, samples: list[float]) -> None:
        if k == len(present):
            found.add(tuple(samples))
            return
        i = present[k]
        for s, usage in placements[i]:
            if np.all(usage <= free + 1e-9):
                samples[i] = s
                dfs(k + 1, free - usage, samples)
        samples[i] = 0.0

    dfs(0, cap.astype(float), [0.0] * I)
    return _pareto(np.array(sorted(found), dtype=float).reshape(-1, I))


# capped cumulative samples per job -> (utility, completion slot per job, -1 while running)
_States: TypeAlias = dict[tuple[float, ...], tuple[float, tuple[int, ...]]]


def enumerate_opt(instance: Instance) -> Enumerated:
    """The optimal total utility of offline DMLRS on a tiny ``instance`` by exhaustive search."""
    I, T, H = instance.num_jobs, instance.slots, instance.num_machines
    for name, value in (("jobs", I), ("slots", T), ("machines", H)):
        if value > LIMITS[name]:
            raise InputError(f"{name}: {value} exceeds the enumerator's limit {LIMITS[name]}")
    j = instance.jobs
    if np.any(j.bw_internal < j.bw_external):
        raise InputError("bw_internal < bw_external: the minimal-PS reduction needs internal >= external")
    V = j.workload
    placements = [_job_placements(instance, i) for i in range(I)]
    cache: dict[tuple[int, ...], np.ndarray] = {}
    # state: capped cumulative samples -> (utility, completion slots)
    states: _States = {tuple([0.0] * I): (0.0, tuple([-1] * I))}
    options, kept = [], 0
    for t in range(T):
        present = tuple(i for i in range(I) if j.arrival[i] <= t)
        if present not in cache:
            cache[present] = _slot_vectors(instance, list(present), placements)
        vectors = cache[present]
        options.append(len(vectors))
        nxt: _States = {}
        for cum, (util, done) in states.items():
            for vec in vectors:
                new_cum, new_util, new_done = list(cum), util, list(done)
                for i in range(I):
                    if done[i] >= 0 or vec[i] == 0.0:
                        continue
                    new_cum[i] = cum[i] + vec[i]
                    if new_cum[i] >= V[i] * (1.0 - RTOL):
                        new_cum[i] = V[i]
                        new_done[i] = t
                        new_util += float(j.utility_of(i, t - j.arrival[i]))
                key = tuple(new_cum)
                if key not in nxt or nxt[key][0] < new_util:
                    nxt[key] = (new_util, tuple(new_done))
        states = _prune(nxt)
        kept += len(states)
    best, done = max(states.values(), key=lambda s: s[0])
    return Enumerated(value=best, completion=list(done), slot_options=options, states=kept)


def _prune(states: _States) -> _States:
    """Drop states another state dominates (more samples of every job and at least the utility)."""
    keys = list(states)
    rows = np.array([[*k, states[k][0]] for k in keys])
    keep = {tuple(r) for r in _pareto(rows)}
    return {k: states[k] for k in keys if (*k, states[k][0]) in keep}
