"""Jobs placed one at a time on the residual capacity of concrete machines (the primal schedule's placement and
its local search): only what fits is placed, so every state is feasible by construction."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from pdors.model import Instance
from pdors.schedule import Schedule
from pdors.validator import validate


class Plan(Protocol):
    """A job's planned workers per slot and their machine class (-1: external)."""

    @property
    def workers(self) -> np.ndarray: ...
    @property
    def klass(self) -> np.ndarray: ...


class Placer:
    """Jobs placed one at a time on the residual capacity of concrete machines."""

    def __init__(self, instance: Instance) -> None:
        self.inst = instance
        jobs = instance.jobs
        T, J, H = instance.slots, instance.num_jobs, instance.num_machines
        self.cap = instance.cluster.capacity
        self.res = np.broadcast_to(self.cap, (T, H, self.cap.shape[1])).copy()
        self.w = np.zeros((T, J, H), dtype=np.int32)
        self.s = np.zeros((T, J, H), dtype=np.int32)
        self.per_sample = {True: jobs.time_per_sample(True), False: jobs.time_per_sample(False)}
        self.scale = np.maximum(self.cap.max(axis=0), 1e-300)
        self.of_machine = np.unique(self.cap, axis=0, return_inverse=True)[1].ravel()

    def servers(self, i: int, w: np.ndarray, internal: bool) -> np.ndarray:
        """PSs for ``w`` workers: ceil(w / gamma), and under the thesis's model enough for their traffic (3.4);
        -1 where (3.5) s <= w cannot hold."""
        jobs = self.inst.jobs
        s = -(-w // int(jobs.gamma[i]))
        bw_all = self.inst.ps_bandwidth
        if bw_all is None:
            return s
        bw = jobs.bw_internal[i] if internal else jobs.bw_external[i]
        s = np.maximum(s, np.ceil(w * bw / bw_all[i]).astype(np.int64))
        return np.where((s > w) & self.inst.ps_at_most_workers, -1, s)

    def internal_max(self, i: int, t: int, cap_w: int) -> np.ndarray:
        """[H, N] whether w = 1..cap_w workers with their PSs fit machine h alone."""
        jobs = self.inst.jobs
        ws = np.arange(1, cap_w + 1)
        ss = self.servers(i, ws, True)
        use = ws[:, None] * jobs.worker_demand[i] + np.maximum(ss, 0)[:, None] * jobs.ps_demand[i]
        out: np.ndarray = (use[None] <= self.res[t][:, None, :]).all(axis=2) & (ss >= 0)[None, :]
        return out

    def spread(self, i: int, t: int, W: int) -> tuple[np.ndarray, np.ndarray] | None:
        """W workers and their PSs over two or more machines: PSs first, then workers, each kind on the machines with
        the least room that is not none (best fit, which keeps the large gaps for later allocations); where that
        fails, workers first (PSs crowded on one machine can leave its workers' resources idle)."""
        S = int(self.servers(i, np.array([W]), False)[0])
        if S < 0:
            return None
        for servers_first in (True, False):
            got = self._pack(i, t, W, S, servers_first)
            if got is not None:
                return got
        return None

    def _pack(self, i: int, t: int, W: int, S: int, servers_first: bool) -> tuple[np.ndarray, np.ndarray] | None:
        jobs = self.inst.jobs
        rr = self.res[t].copy()
        kinds = [("s", S, jobs.ps_demand[i]), ("w", W, jobs.worker_demand[i])]
        placed: dict[str, np.ndarray] = {}
        for kind, count, d in kinds if servers_first else kinds[::-1]:
            need = d > 0
            room = np.floor(np.min(np.where(need, rr / np.where(need, d, 1.0), np.inf), axis=1))
            room = np.minimum(room, count).astype(np.int64)
            room = np.maximum(np.where((room[:, None] * d > rr).any(axis=1), room - 1, room), 0)
            order = np.argsort(np.where(room > 0, room, count + 1), kind="stable")
            ranked = room[order]
            n = np.zeros(len(room), dtype=np.int64)
            n[order] = np.minimum(np.maximum(count - (np.cumsum(ranked) - ranked), 0), ranked)  # least room first
            if n.sum() < count:
                return None
            rr -= n[:, None] * d
            placed[kind] = n
        w, s = placed["w"], placed["s"]
        if ((w + s) > 0).sum() < 2:
            return None
        return w, s

    def put(self, i: int, t: int, w: np.ndarray, s: np.ndarray) -> None:
        jobs = self.inst.jobs
        self.w[t, i], self.s[t, i] = w, s
        self.res[t] -= w[:, None] * jobs.worker_demand[i] + s[:, None] * jobs.ps_demand[i]

    def take(self, i: int, t: int) -> None:
        jobs = self.inst.jobs
        w, s = self.w[t, i].astype(np.int64), self.s[t, i].astype(np.int64)
        self.res[t] += w[:, None] * jobs.worker_demand[i] + s[:, None] * jobs.ps_demand[i]
        self.w[t, i] = 0
        self.s[t, i] = 0

    def internal_at(self, i: int, t: int, W: int, fits: np.ndarray, klass: int) -> bool:
        """W workers internally on the tightest machine (of ``klass`` if one holds them) that holds them."""
        ok = fits[:, W - 1]
        if klass >= 0 and (ok & (self.of_machine == klass)).any():
            ok = ok & (self.of_machine == klass)
        if not ok.any():
            return False
        jobs = self.inst.jobs
        S = int(self.servers(i, np.array([W]), True)[0])
        use = W * jobs.worker_demand[i] + S * jobs.ps_demand[i]
        slack = ((self.res[t] - use) / self.scale).sum(axis=1)
        h = int(np.argmin(np.where(ok, slack, np.inf)))
        w, s = np.zeros(len(ok), dtype=np.int64), np.zeros(len(ok), dtype=np.int64)
        w[h], s[h] = W, S
        self.put(i, t, w, s)
        return True

    def make_room(self, i: int, t: int, W: int) -> bool:
        """Make one machine hold W internal workers of job i (with their PSs) in slot t by moving one job that runs
        internally there, whole, to another machine that holds it (its samples unchanged); False if no such move."""
        jobs = self.inst.jobs
        S = int(self.servers(i, np.array([W]), True)[0])
        if S < 0:
            return False
        use = W * jobs.worker_demand[i] + S * jobs.ps_demand[i]
        if (use > self.cap).any(axis=1).all():
            return False
        on = (self.w[t] > 0) | (self.s[t] > 0)  # [J, H]
        alone = np.flatnonzero(on.sum(axis=1) == 1)
        for h in np.argsort(((use - self.res[t]).clip(0) / self.scale).sum(axis=1), kind="stable"):
            for j in alone[on[alone, h]]:
                moved = self.w[t, j, h] * jobs.worker_demand[j] + self.s[t, j, h] * jobs.ps_demand[j]
                if not (self.res[t, h] + moved >= use).all():
                    continue
                to = (self.res[t] >= moved).all(axis=1)
                to[h] = False
                if not to.any():
                    continue
                h2 = int(np.argmin(np.where(to, ((self.res[t] - moved) / self.scale).sum(axis=1), np.inf)))
                w, s = np.zeros(len(to), dtype=np.int64), np.zeros(len(to), dtype=np.int64)
                w[h2], s[h2] = self.w[t, j, h], self.s[t, j, h]
                self.take(int(j), t)
                self.put(int(j), t, w, s)
                return True
        return False

    def slot(self, i: int, t: int, need: float, want: int, klass: int) -> None:
        """Allocate job i in slot t: ``want`` workers (internal on ``klass``, or external if -1), no more than
        ``need`` samples require; where that does not fit, the most samples that fit, up to the planned ones (0: the
        slot stays idle)."""
        jobs = self.inst.jobs
        if want == 0 and not (self.res[t] >= jobs.worker_demand[i]).all(axis=1).any():
            return  # no machine holds one worker: nothing fits
        cap_w = int(jobs.batch[i])
        if want > 0:  # a plan's slot takes no more than its planned samples: the rest goes to idle slots
            need = min(need, want / self.per_sample[klass >= 0][i])
        n_int = max(1, int(np.ceil(need * self.per_sample[True][i])))
        n_ext = max(1, int(np.ceil(need * self.per_sample[False][i])))
        fits = self.internal_max(i, t, cap_w)
        if want > 0:
            wi = min(want, n_int, cap_w)
            if klass >= 0 and self.internal_at(i, t, wi, fits, klass):
                return
            if klass >= 0 and self.make_room(i, t, wi):
                fits = self.internal_max(i, t, cap_w)
                if self.internal_at(i, t, wi, fits, klass):
                    return
            if klass < 0 and (wd := min(want, n_ext, cap_w)) and (got := self.spread(i, t, wd)) is not None:
                self.put(i, t, *got)
                return
        if n_int <= cap_w and self.internal_at(i, t, n_int, fits, -1):
            return
        if n_ext <= cap_w and (got := self.spread(i, t, n_ext)) is not None:
            self.put(i, t, *got)
            return
        best_int = int(np.where(fits, np.arange(1, cap_w + 1), 0).max(initial=0))
        lo, hi = 0, min(cap_w, n_ext)  # the most external workers that spread: bisection on W
        if best_int > 0 and best_int / self.per_sample[True][i] >= hi / self.per_sample[False][i]:
            lo = hi = 0  # no spread can beat the internal allocation: skip the search
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.spread(i, t, mid) is not None:
                lo = mid
            else:
                hi = mid - 1
        if best_int == 0 and lo == 0:
            return
        if best_int / self.per_sample[True][i] >= lo / self.per_sample[False][i]:
            self.internal_at(i, t, best_int, fits, -1)
        else:
            got = self.spread(i, t, lo)
            assert got is not None
            self.put(i, t, *got)

    def samples(self, i: int) -> np.ndarray:
        """[T] job i's samples per slot, as the validator computes them (restarts free)."""
        w, s = self.w[:, i], self.s[:, i]
        wsum = w.sum(axis=1)
        internal = ((w > 0) | (s > 0)).sum(axis=1) == 1
        per = np.where(internal, self.per_sample[True][i], self.per_sample[False][i])
        out: np.ndarray = 1.0 * wsum / per
        return np.where(wsum > 0, out, 0.0)

    def most_samples(self, i: int) -> float:
        """An upper bound on the samples job i can still get: per slot from its arrival, the most workers one
        machine holds (internal) or all machines hold (external), PSs ignored."""
        jobs = self.inst.jobs
        d = jobs.worker_demand[i]
        res = self.res[int(jobs.arrival[i]) :]
        cap_w = int(jobs.batch[i])
        each = np.floor(np.min(np.where(d > 0, res / np.where(d > 0, d, 1.0), np.inf), axis=2))
        each = np.minimum(each, cap_w)
        inside = each.max(axis=1) / self.per_sample[True][i]
        outside = np.minimum(each.sum(axis=1), cap_w) / self.per_sample[False][i]
        return float(np.maximum(inside, outside).sum())

    def job(self, i: int, plan: Plan | None) -> bool:
        """Place job i: its ``plan``'s slots, then :meth:`complete`. False (and nothing placed) if it cannot
        complete."""
        jobs = self.inst.jobs
        target = float(jobs.workload[i] * (1.0 - 1e-12))
        if self.most_samples(i) < target:
            return False
        done = 0.0
        planned = (
            []
            if plan is None
            else [(int(t), int(plan.workers[t]), int(plan.klass[t])) for t in np.flatnonzero(plan.workers > 0)]
        )
        for t, want, klass in planned:
            if done >= target:
                break
            self.slot(i, t, float(jobs.workload[i]) - done, want, klass)
            done = float(self.samples(i).sum())
        return self.complete(i, plan)

    def complete(self, i: int, plan: Plan | None) -> bool:
        """Complete job i from what it holds: where it falls short, its ``plan``'s slots again with more workers
        (up to the slot's share of what is left; kept only if it gains), then idle slots from its arrival on. False
        (and all of job i taken out) if it cannot complete."""
        jobs, T = self.inst.jobs, self.inst.slots
        target = float(jobs.workload[i] * (1.0 - 1e-12))
        first = [] if plan is None else [int(t) for t in np.flatnonzero(plan.workers > 0)]
        rest = [t for t in range(int(jobs.arrival[i]), T) if t not in set(first)]
        for t in first:  # top up: a planned slot re-placed with the shortfall added
            short = float(jobs.workload[i]) - float(self.samples(i).sum())
            if short <= 0:
                break
            had = float(self.samples(i)[t])
            w, s = self.w[t, i].astype(np.int64), self.s[t, i].astype(np.int64)
            self.take(i, t)
            self.slot(i, t, had + short, 0, -1)
            if float(self.samples(i)[t]) < had:  # never less than before: put the old allocation back
                self.take(i, t)
                self.put(i, t, w, s)
        done = float(self.samples(i).sum())
        for t in rest:
            if done >= target:
                break
            self.slot(i, t, float(jobs.workload[i]) - done, 0, -1)
            done = float(self.samples(i).sum())
        if np.cumsum(self.samples(i))[-1] >= target:
            return True
        for t in range(T):
            if self.w[t, i].any() or self.s[t, i].any():
                self.take(i, t)
        return False

    def schedule(self) -> Schedule:
        """The placed counts with the claims the validator recomputes (locality, completion; restarts are free)."""
        sched = Schedule.empty(self.inst)
        sched.workers[:], sched.servers[:] = self.w, self.s
        sched.admitted[:] = self.w.sum(axis=(0, 2)) > 0
        v = validate(self.inst, sched)
        sched.claimed_internal[:] = v.internal
        sched.claimed_completion[:] = v.completion
        sched.claimed_restart[:] = v.restarts
        return sched
