"""Pollux-style goodput scheduler (Qiao et al., "Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized
Deep Learning", OSDI'21), adapted to this job model.

Every ``interval`` slots PolluxSched re-allocates workers and PSs over all arrived, incomplete jobs J to maximise

    FITNESS_p(A) = (1/|J| sum_j SPEEDUP_j(A_j)^p)^(1/p)                                   (Pollux eq. 15)
    SPEEDUP_j(A_j) = GOODPUT_j(A_j) / GOODPUT_j(a_f)                                        (Pollux eq. 16)

with fairness ``p`` (``fairness``; p = 1 is the mean speedup, p -> -inf the worst job's). Adaptations:

* Goodput is throughput: GOODPUT = THROUGHPUT x EFFICIENCY (Pollux eq. 5), and EFFICIENCY(M) = 1 when the batch
  size M stays at M_0 (Pollux eq. 7). Here the global batch F_i is fixed, so goodput is the paper's eq. (1):
  w / (tau + 2 g gamma / (b F)) samples per slot, with b = b^(i) iff all the job's tasks share one machine (Fact
  1, the counterpart of Pollux's local vs. cross-node T_sync, eq. 10).
* Equal share a_f: 1/|J| of the cluster's total capacity; its goodput uses the fractional number of workers (with
  their amortised PSs, beta / gamma each) that fits in that share, capped at F_j, at the external rate.
* REALLOC_FACTOR_j(delta) = (T_j - R_j delta) / (T_j + delta) multiplies the speedup of a job that has run
  before and whose placement would change: T_j = slots since arrival, R_j = its restarts so far, delta =
  ``restart_loss`` (the restart's length in slots). The same ``restart_loss`` is the fraction of the slot's
  samples the job really loses (the simulator applies it, the validator re-derives it from the schedule).
* PolluxAgent's cap: a job never gets more than twice the most workers it has had; a job that never ran gets
  at most one worker (Pollux starts every job on one GPU).
* A starved job has SPEEDUP 0, which makes FITNESS_p = 0 for p < 0 whatever the others get. Allocations are
  therefore compared by the limit of eq. 15 as the starved jobs' speedup tends to 0: fewer starved jobs first,
  then FITNESS_p over the served jobs (still divided by |J|). With every job served this is eq. 15 exactly.
* Search: Pollux's genetic algorithm over per-job worker counts (binary tournaments, crossover at one job,
  mutation to a random count within the cap, repair to the cluster's aggregate capacity, two elites). The
  placement is decoded, not evolved: a job whose count is unchanged keeps its exact placement (no restart);
  changed jobs, smallest first, go on the single machine that fits them most tightly if there is one (internal
  rate), else round-robin (one worker and PS first, then as many more as fit). The GA starts from the current
  allocation, the equal share, a max-min (water-filling) allocation and the current one with waiting jobs at
  their equal share. The decoded GA winner, the current allocation and the equal share are compared by their
  realised fitness, so the chosen allocation is never worse than the equal share.
* Dropped: batch-size and learning-rate tuning (fixed batch), Pollux's one-distributed-job-per-node rule (this
  model has no network interference) and cluster autoscaling.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..config import JSON, bounded
from ..model import Instance
from ..portable_math import dot, power
from .base import RunShape, SlotAllocation, SlotPolicy, SlotView
from .placement import FIT_ATOL, Placement, keep_unchanged, place_job, ps_count, room, slot_allocation

SEED_STREAM = 0x9011  # keeps the GA's draws independent of the workload generator's stream for the same seed
GROWTH = 2  # PolluxAgent: at most twice the largest allocation a job has had
ELITE = 2  # best individuals carried unchanged into the next generation
SEEDS = 4  # starting allocations of the GA (see _reallocate)


@dataclass(frozen=True, kw_only=True)
class Config:
    fairness: float = -1.0  # p of eq. 15 (Pollux's evaluation uses -1)
    # re-allocate every `interval` slots; in between allocations are kept
    interval: int = bounded(1, 1, 10**6, "slots between re-allocations; past any horizon it means never")
    restart_loss: float = 1 / 30  # slot fraction lost per restart: 120 s of a one-hour slot (Pollux: 15-120 s)
    population: int = bounded(32, 0, 10_000, "allocations per generation; each is simulated per slot")
    generations: int = bounded(30, 0, 10_000, "GA rounds per re-allocation; Pollux uses tens, more never ends")

    def check(self) -> list[str]:
        out = []
        if self.fairness == 0 or self.fairness > 1:
            out.append(
                f"fairness: p must be non-zero and <= 1 (1 = mean speedup, negative = fairer), got {self.fairness}"
            )
        if self.interval < 1:
            out.append(f"interval: must be >= 1 slot, got {self.interval}")
        if not 0 <= self.restart_loss < 1:
            out.append(f"restart_loss: must lie in [0, 1) (a fraction of a slot), got {self.restart_loss}")
        if self.population < SEEDS:
            out.append(f"population: must be >= {SEEDS} (the GA's starting allocations), got {self.population}")
        if self.generations < 0:
            out.append(f"generations: must be >= 0, got {self.generations}")
        return out


def fitness(speedup: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray]:
    """(served jobs, FITNESS_p) per row of ``speedup`` [P, n]; rows compare lexicographically.

    For p < 0 the fitness sums only served jobs (speedup > 0) over all n: the limit of eq. 15 as the starved
    jobs' speedup tends to 0, once the number of starved jobs is fixed. For p > 0 eq. 15 as written (every row
    counts as serving all n).
    """
    n = speedup.shape[-1]
    if p > 0:
        return np.full(speedup.shape[:-1], n), power(np.sum(power(speedup, p), axis=-1) / n, 1 / p)
    count = (speedup > 0).sum(axis=-1)
    powered = power(np.where(speedup > 0, speedup, np.inf), p).sum(axis=-1)  # a starved job adds inf^p = 0
    with np.errstate(divide="ignore"):
        return count, np.where(count > 0, power(powered / n, 1 / p), 0.0)


def best_index(served: np.ndarray, value: np.ndarray) -> int:
    """The first row with the most served jobs and, among those, the highest fitness."""
    top = served == served.max()
    return int(np.flatnonzero(top & (value == value[top].max()))[0])


def equal_share_workers(
    alpha: np.ndarray, beta: np.ndarray, gamma: np.ndarray, batch: np.ndarray, total: np.ndarray, n: int
) -> np.ndarray:
    """Fractional workers each job gets from 1/n of ``total`` capacity (PSs amortised at beta / gamma), <= F."""
    per_worker = alpha + beta / gamma[:, None]
    with np.errstate(divide="ignore"):
        fit = np.where(per_worker > 0, (total / n) / per_worker, np.inf).min(axis=1)
    out: np.ndarray = np.minimum(fit, batch)
    return out


@dataclass(kw_only=True)
class Candidate:
    """One decoded allocation of the active jobs: placements, the round-robin cursor after them, workers lost
    to fragmentation, and its realised (served jobs, FITNESS_p)."""

    placements: dict[int, Placement]
    cursor: int
    shortfall: int
    served: int = 0
    value: float = 0.0


class Pollux(SlotPolicy):
    name = "pollux"

    def __init__(self, config: Config):
        self.config = config
        self.restart_loss = config.restart_loss

    def reset(self, instance: Instance, seed: int) -> None:
        jobs = instance.jobs
        self.rng = np.random.Generator(np.random.PCG64([seed, SEED_STREAM]))
        self.rate_ext = 1.0 / jobs.time_per_sample(False)
        self.rate_int = 1.0 / jobs.time_per_sample(True)
        self.one_machine = _one_machine_workers(instance)
        self.most = np.zeros(instance.num_jobs, dtype=np.int64)  # largest worker count each job has had
        self.restarts = np.zeros(instance.num_jobs, dtype=np.int64)  # R_j
        self.placements: dict[int, Placement] = {}
        self.cursor = 0
        self.stats = {
            "reallocations": 0,
            "restarts": 0,
            "chose_ga": 0,
            "chose_current": 0,
            "chose_equal": 0,
            "placement_shortfall": 0,
            "fitness_mean": 0.0,
        }

    def allocate(self, view: SlotView) -> SlotAllocation:
        inst = view.instance
        previous = {i: p for i, p in self.placements.items() if view.pending[i]}
        active = np.flatnonzero(view.pending)
        if view.t % self.config.interval == 0 and active.size:
            chosen = self._reallocate(view, active, previous)
            n = self.stats["reallocations"]
            self.stats["fitness_mean"] += (chosen.value - self.stats["fitness_mean"]) / (n + 1)
            self.stats["reallocations"] = n + 1
            self.stats["placement_shortfall"] += chosen.shortfall
            self.cursor = chosen.cursor
            placements = chosen.placements
        else:
            placements = previous
        for i, p in placements.items():
            if self.most[i] > 0 and not _same(p, previous.get(i)):
                self.restarts[i] += 1
                self.stats["restarts"] += 1
            self.most[i] = max(self.most[i], int(p.workers.sum()))
        self.placements = placements
        return slot_allocation(inst.num_jobs, inst.num_machines, placements)

    def _reallocate(self, view: SlotView, active: np.ndarray, previous: dict[int, Placement]) -> Candidate:
        jobs, p, t = view.instance.jobs, self.config.fairness, view.t
        free = view.free(t)
        n = active.size
        alpha, beta = jobs.worker_demand[active], jobs.ps_demand[active]
        gamma, batch = jobs.gamma[active], jobs.batch[active]
        cap = np.minimum(batch, np.maximum(1, GROWTH * self.most[active]))
        current = _counts_of(previous, active)
        was_internal = np.array([i in previous and _hosts(previous[i]) == 1 for i in active])
        share = equal_share_workers(alpha, beta, gamma, batch, free.sum(axis=0), n)
        # SPEEDUP per worker (eq. 16) at each rate; 0 for a job no share can serve (a resource the cluster lacks).
        goodput_equal = share * self.rate_ext[active]
        per_ext, per_int = (
            np.divide(r[active], goodput_equal, out=np.zeros(n), where=goodput_equal > 0)
            for r in (self.rate_ext, self.rate_int)
        )
        ran = self.most[active] > 0
        age = (t - jobs.arrival[active]).astype(float)  # >= 1 for every job that ran before
        delta = self.restart_loss
        realloc = np.where(
            ran, np.clip((age - self.restarts[active] * delta) / (np.maximum(age, 1) + delta), 0, 1), 1.0
        )

        def speedups(counts: np.ndarray, internal: np.ndarray, moved: np.ndarray) -> np.ndarray:
            rates = np.where(internal, per_int, per_ext)
            out: np.ndarray = counts * rates * np.where(ran & moved & (counts > 0), realloc, 1.0)
            return out

        def estimate(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            """Fitness of worker counts [P, n]: kept jobs keep their locality, changed ones are internal iff
            they fit on one machine (what the decoder tries first)."""
            kept = (counts == current) & (current > 0)
            one = counts <= self.one_machine[active]
            return fitness(speedups(counts, np.where(kept, was_internal, one), ~kept), p)

        def realised(c: Candidate) -> Candidate:
            got = c.placements
            counts = _counts_of(got, active)
            one = np.array([i in got and _hosts(got[i]) == 1 for i in active])
            moved = np.array([not _same(got.get(i), previous.get(i)) for i in active])
            served, value = fitness(speedups(counts, one, moved), p)  # 0-d arrays, or NumPy scalars for some p
            c.served, c.value = int(served), float(value)
            return c

        repair = _Repair(alpha, beta, gamma, cap, free.sum(axis=0))
        equal = repair(np.floor(share).astype(np.int64))
        seeds = np.stack(
            [repair(current), equal, _water_fill(share, cap, repair), repair(np.where(current > 0, current, equal))]
        )  # keep running jobs, add new ones
        best = self._evolve(seeds, cap, repair, estimate)
        candidates = [
            realised(self._decode(view, active, best, previous)),
            realised(
                Candidate(
                    placements={int(i): previous[i] for i in active if i in previous}, cursor=self.cursor, shortfall=0
                )
            ),
            realised(self._decode(view, active, equal, previous)),
        ]
        k = best_index(np.array([c.served for c in candidates]), np.array([c.value for c in candidates]))
        self.stats[("chose_ga", "chose_current", "chose_equal")[k]] += 1
        return candidates[k]

    def _evolve(
        self,
        seeds: np.ndarray,
        cap: np.ndarray,
        repair: _Repair,
        estimate: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    ) -> np.ndarray:
        """Pollux's genetic algorithm over worker counts; returns the best individual found."""
        cfg, rng = self.config, self.rng
        size, n = cfg.population, seeds.shape[1]
        pick = rng.integers(0, len(seeds), size=size - len(seeds))
        pop = np.concatenate([seeds, repair(_mutate(seeds[pick], cap, rng))])
        served, value = estimate(pop)
        for _ in range(cfg.generations):
            order = np.lexsort((value, served))[::-1]  # best first
            rank = np.empty(size, dtype=np.int64)
            rank[order] = np.arange(size)
            a, b = rng.integers(0, size, size=(2, size - ELITE))
            parents = np.where(rank[a] < rank[b], a, b)  # binary tournaments
            mates = np.roll(parents, 1)
            point = rng.integers(1, max(n, 2), size=(size - ELITE, 1))
            children = np.where(np.arange(n) < point, pop[parents], pop[mates])
            pop = np.concatenate([pop[order[:ELITE]], repair(_mutate(children, cap, rng))])
            served, value = estimate(pop)
        out: np.ndarray = pop[best_index(served, value)]
        return out

    def _decode(
        self, view: SlotView, active: np.ndarray, counts: np.ndarray, previous: dict[int, Placement]
    ) -> Candidate:
        """Placements for worker ``counts``: unchanged jobs keep theirs; changed ones, smallest first, go on the
        tightest single machine that holds them (internal), else get one worker and one PS round-robin; then
        those jobs grow round-robin to as many workers as fit. A fragmented cluster thus costs the big jobs a
        few workers rather than a small job all of them."""
        jobs = view.instance.jobs
        free = view.free(view.t)
        cap_h = view.instance.cluster.capacity
        placements, changed = keep_unchanged(free, jobs, previous, active, counts)
        cursor, shortfall, spread = self.cursor, 0, []
        for i, w in sorted((c for c in changed if c[1] > 0), key=lambda c: (c[1], c[0])):
            alpha, beta, s = jobs.worker_demand[i], jobs.ps_demand[i], int(ps_count(w, jobs.gamma[i]))
            leftover = free - (w * alpha + s * beta)
            fits = np.all(leftover >= -FIT_ATOL, axis=1)
            if fits.any():
                with np.errstate(divide="ignore", invalid="ignore"):
                    slack = np.where(cap_h > 0, leftover / cap_h, 0.0).max(axis=1)
                h = int(np.flatnonzero(fits)[np.argmin(slack[fits])])
                placements[i] = Placement(np.zeros(len(free), dtype=np.int64), np.zeros(len(free), dtype=np.int64))
                placements[i].workers[h], placements[i].servers[h] = w, s
            else:
                got = place_job(free, alpha, beta, 1, 1, cursor)
                if got is None:
                    shortfall += w
                    continue
                placements[i], cursor = got
                spread.append((i, w))
            placements[i].take_from(free, alpha, beta)
        for i, w in spread:
            alpha, beta, gamma = jobs.worker_demand[i], jobs.ps_demand[i], int(jobs.gamma[i])
            extra, cursor = _grow(free, alpha, beta, w - 1, gamma, cursor)
            shortfall += w - 1 - int(extra.workers.sum())
            placements[i] = Placement(placements[i].workers + extra.workers, placements[i].servers + extra.servers)
            extra.take_from(free, alpha, beta)
        return Candidate(placements=placements, cursor=cursor, shortfall=shortfall)

    def summary(self) -> JSON:
        return dict(self.stats)


class _Repair:
    """Clip worker counts [P, n] to [0, cap] and shrink each row proportionally until the workers and their
    ceil(w / gamma) PSs fit the cluster's aggregate free capacity."""

    def __init__(self, alpha: np.ndarray, beta: np.ndarray, gamma: np.ndarray, cap: np.ndarray, total: np.ndarray):
        self.alpha, self.beta, self.gamma, self.cap, self.total = alpha, beta, gamma, cap, total

    def usage(self, counts: np.ndarray) -> np.ndarray:
        out: np.ndarray = dot(counts, self.alpha) + dot(ps_count(counts, self.gamma), self.beta)
        return out

    def __call__(self, counts: np.ndarray) -> np.ndarray:
        counts = np.clip(counts, 0, self.cap).astype(np.int64)
        while True:  # each pass strictly lowers every over-capacity row's total, so this ends
            use = self.usage(counts)
            with np.errstate(divide="ignore", invalid="ignore"):
                scale = np.where(use > self.total + FIT_ATOL, self.total / use, 1.0).min(axis=-1)
            if np.all(scale >= 1.0):
                return counts
            counts = np.where((scale < 1.0)[..., None], np.floor(counts * scale[..., None]), counts).astype(np.int64)


def _one_machine_workers(instance: Instance) -> np.ndarray:
    """Per job, the most workers that fit, with their ceil(w / gamma) PSs, on one empty machine (0 if none)."""
    jobs, cap = instance.jobs, instance.cluster.capacity
    out = np.zeros(instance.num_jobs, dtype=np.int64)
    for i in range(instance.num_jobs):
        w = np.arange(1, jobs.batch[i] + 1)
        bundle = w[:, None] * jobs.worker_demand[i] + ps_count(w, jobs.gamma[i])[:, None] * jobs.ps_demand[i]
        out[i] = np.all(bundle[:, None, :] <= cap[None] + FIT_ATOL, axis=2).any(axis=1).sum()  # monotone in w
    return out


def _grow(
    free: np.ndarray, alpha: np.ndarray, beta: np.ndarray, upto: int, gamma: int, cursor: int
) -> tuple[Placement, int]:
    """The most extra workers x <= ``upto`` (with the ceil((1 + x) / gamma) - 1 extra PSs a job that already
    has one worker and one PS needs) that fit round-robin; fitting is monotone in x, so bisect below the
    number of workers that fit at all."""

    def place(x: int) -> tuple[Placement, int] | None:
        return place_job(free, alpha, beta, x, int(ps_count(1 + x, gamma)) - 1, cursor)

    hi = min(upto, int(room(free, alpha, upto).sum()))
    got = place(hi)
    if got is not None:
        return got
    lo, hi = 0, hi - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if place(mid) is None:
            hi = mid - 1
        else:
            lo = mid
    got = place(lo)
    assert got is not None  # x = 0 adds nothing to the worker and PS the job has
    return got


def _water_fill(share: np.ndarray, cap: np.ndarray, repair: _Repair) -> np.ndarray:
    """Max-min counts min(cap, floor(lam * share)) with the largest lam that fits (equal speedups at the
    external rate), found by bisection."""

    def counts(lam: float) -> np.ndarray:
        out: np.ndarray = np.minimum(cap, np.floor(lam * share)).astype(np.int64)
        return out

    lo, hi = 0.0, float(np.max(cap / np.maximum(share, 1e-12))) + 1.0
    for _ in range(24):  # precise enough for a starting point of the GA
        mid = (lo + hi) / 2
        if np.array_equal(repair(counts(mid)), counts(mid)):
            lo = mid
        else:
            hi = mid
    return counts(lo)


def _mutate(counts: np.ndarray, cap: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each gene with probability 1/n becomes a uniform count in [0, cap] (Pollux's mutation)."""
    n = counts.shape[-1]
    hit = rng.random(counts.shape) < 1.0 / n
    return np.where(hit, rng.integers(0, cap + 1, size=counts.shape), counts)


def _hosts(p: Placement) -> int:
    return int(((p.workers > 0) | (p.servers > 0)).sum())


def _same(a: Placement | None, b: Placement | None) -> bool:
    if a is None or b is None:
        return a is b
    return np.array_equal(a.workers, b.workers) and np.array_equal(a.servers, b.servers)


def _counts_of(placements: dict[int, Placement], active: np.ndarray) -> np.ndarray:
    return np.array([placements[i].workers.sum() if i in placements else 0 for i in active], dtype=np.int64)


def make(config: Config, spec: RunShape) -> Pollux:
    return Pollux(config)
