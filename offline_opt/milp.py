"""The offline DMLRS (paper Section III, all arrivals known) as a Pyomo MILP, and its solution as a Schedule.

Per (job i, machine h, slot t >= a_i) the allocation is split by Fact 1's two modes:

* internal: binary ``z[i,h,t]`` pins all of the job's workers ``wi`` and PSs ``si`` to machine h;
* external: binary ``e[i,t]``, counts ``we[i,h,t]``, ``se[i,h,t]`` spread over at least two machines
  (every machine holds at most all-but-one of the job's external workers and PSs), so the placement the
  validator sees is external exactly when the model says so.

At most one mode per (i, t). PSs are exactly ceil(w / gamma) (eq. 2 [choice]: gamma s >= w and
gamma s <= w + gamma - 1, which also gives s > 0 iff w > 0); more PSs only consume capacity, and an external
placement keeps >= 2 hosts when its surplus PSs are dropped, so this loses no schedule. Samples in a slot are
rate_int * sum_h wi + rate_ext * sum_h we (eqs. 1-3), the cap is eq. (4), capacity eq. (5), nothing
before arrival eq. (7). Binary ``c[i,k]`` says job i completes in slot k and earns u_i(k - a_i); admission
x_i = sum_k c[i,k] <= 1 (the DMLRS objective).

Strengthening (each a switch of :class:`Strengthening`, all on by default; all off is the naive big-M
formulation):

* ``tight_bounds``: counts bounded per machine by capacity instead of F; c[i,k] only for slots k by which
  job i can possibly finish;
* ``perspective``: alpha^r wi + beta^r si <= C_h^r z[i,h,t] (an internal job fits on its machine);
* ``disaggregate``: samples of slot t are attributed to the completion slot k >= t they serve,
  S[i,t,k] <= max_samples * c[i,k], sum_{t<=k} S[i,t,k] >= V_i c[i,k]; a job holds resources only up to its
  completion (mode[i,t] <= sum_{k>=t} c[i,k]). Without it: cumulative samples >= V_i sum_{k<=t} c[i,k];
* ``symmetry`` (identical machines only; per slot machines are interchangeable because nothing couples
  placements across slots): machines are numbered in order of first use by internal jobs,
  z[i,h,t] <= sum_{i'<i} z[i',h-1,t]. (Ordering machines by load instead was slower: docs/OFFLINE_OPT.md.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyomo.environ as pyo

from pdors.model import Instance
from pdors.schedule import Schedule

from .bounds import EPS, JobBounds, identical_machines, job_bounds
from .strengthening import Strengthening


@dataclass(kw_only=True)
class Built:
    """A built model and the index data needed to read a schedule back."""

    model: pyo.ConcreteModel
    bounds: list[JobBounds]
    slots: dict[int, list[int]]  # job -> slots it may use
    completion: dict[int, list[int]]  # job -> candidate completion slots
    strengthening: Strengthening


@dataclass(frozen=True, kw_only=True)
class _Index:
    """The model's index sets (the legend of every constraint below).

    ``I``, ``H``, ``T``, ``R``: numbers of jobs, machines, slots and resources (paper Section III);
    ``comp[i]``: candidate completion slots k of job i; ``slots[i]``: the slots it may use, a_i up to its last
    candidate completion; ``IT``: (i, t) with t in slots[i]; ``IHT``: (i, h, t) for every machine h;
    ``IK``: (i, k) with k in comp[i]; ``by_slot[t]``: the jobs that may use slot t; ``THR``: (t, h, r) for
    every slot some job may use; ``external``: whether the external mode exists (H >= 2).
    """

    I: int
    H: int
    T: int
    R: int
    comp: dict[int, list[int]]
    slots: dict[int, list[int]]
    IT: list[tuple[int, int]]
    IHT: list[tuple[int, int, int]]
    IK: list[tuple[int, int]]
    by_slot: dict[int, list[int]]
    THR: list[tuple[int, int, int]]
    external: bool

    @classmethod
    def of(cls, instance: Instance, jb: list[JobBounds], st: Strengthening) -> _Index:
        I, H, T = instance.num_jobs, instance.num_machines, instance.slots
        comp = {i: list(b.completion) if st.tight_bounds else list(range(b.arrival, T)) for i, b in enumerate(jb)}
        slots = {i: list(range(jb[i].arrival, max(comp[i]) + 1)) if comp[i] else [] for i in range(I)}
        IT = [(i, t) for i in range(I) for t in slots[i]]
        by_slot = {t: [i for i in range(I) if t in slots[i]] for t in range(T)}
        R = len(instance.cluster.resources)
        return cls(
            I=I,
            H=H,
            T=T,
            R=R,
            comp=comp,
            slots=slots,
            IT=IT,
            IHT=[(i, h, t) for i, t in IT for h in range(H)],
            IK=[(i, k) for i in range(I) for k in comp[i]],
            by_slot=by_slot,
            THR=[(t, h, r) for t in range(T) if by_slot[t] for h in range(H) for r in range(R)],
            external=H >= 2,
        )


@dataclass(frozen=True, kw_only=True)
class _Terms:
    """Linear expressions of the model per (job, slot) shared by several constraint families."""

    m: pyo.ConcreteModel
    ix: _Index
    jb: list[JobBounds]
    disaggregate: bool

    def WI(self, i: int, t: int) -> Any:
        """Internal workers of job i in slot t."""
        return sum(self.m.wi[i, h, t] for h in range(self.ix.H))

    def WE(self, i: int, t: int) -> Any:
        """External workers."""
        return sum(self.m.we[i, h, t] for h in range(self.ix.H)) if self.ix.external else 0

    def SE(self, i: int, t: int) -> Any:
        """External PSs."""
        return sum(self.m.se[i, h, t] for h in range(self.ix.H)) if self.ix.external else 0

    def mode(self, i: int, t: int) -> Any:
        """1 if job i runs in slot t (internally on one machine or externally), else 0."""
        return sum(self.m.z[i, h, t] for h in range(self.ix.H)) + (self.m.e[i, t] if self.ix.external else 0)

    def samples(self, i: int, t: int) -> Any:
        """Samples processed in slot t (eqs. 1-3)."""
        return self.jb[i].rate_int * self.WI(i, t) + self.jb[i].rate_ext * self.WE(i, t)

    def active(self, i: int, t: int) -> Any:
        """1 while job i is admitted and not yet complete (the disaggregated activity bound)."""
        if self.disaggregate:
            return sum(self.m.c[i, k] for k in self.ix.comp[i] if k >= t)
        return 1


def build(instance: Instance, st: Strengthening = Strengthening()) -> Built:
    """The DMLRS MILP of ``instance`` under strengthening ``st``, one constraint family after another."""
    jb = job_bounds(instance)
    ix = _Index.of(instance, jb, st)
    m = pyo.ConcreteModel("dmlrs")
    _add_variables(m, ix, jb, st)
    terms = _Terms(m=m, ix=ix, jb=jb, disaggregate=st.disaggregate)
    _add_admission(m, ix, terms)
    _add_internal_mode(m, ix, instance, st)
    if ix.external:
        _add_external_mode(m, ix, jb, terms, st)
    _add_capacity(m, ix, instance, terms)
    _add_completion(m, ix, jb, terms, st)
    if st.symmetry and identical_machines(instance) and ix.H >= 2:
        _add_symmetry(m, ix)
    utility = {(i, k): float(instance.jobs.utility_of(i, k - jb[i].arrival)) for i, k in ix.IK}
    m.obj = pyo.Objective(expr=sum(utility[i, k] * m.c[i, k] for i, k in ix.IK), sense=pyo.maximize)
    return Built(model=m, bounds=jb, slots=ix.slots, completion=ix.comp, strengthening=st)


def _add_variables(m: pyo.ConcreteModel, ix: _Index, jb: list[JobBounds], st: Strengthening) -> None:
    """z, wi, si (internal), e, we, se (external, H >= 2), c (completion); counts bounded per machine by
    capacity with ``tight_bounds``, else by F."""

    def ub(kind: str) -> Callable[[pyo.ConcreteModel, int, int, int], tuple[int, int]]:
        def bound(m: pyo.ConcreteModel, i: int, h: int, t: int) -> tuple[int, int]:
            b = jb[i]
            if not st.tight_bounds:
                return (0, b.batch)
            per_machine = {
                "wi": b.w_internal[h],
                "si": -(-b.w_internal[h] // b.gamma),
                "we": b.w_machine[h],
                "se": b.s_machine[h],
            }
            return (0, per_machine[kind])

        return bound

    m.z = pyo.Var(ix.IHT, domain=pyo.Binary)
    m.wi = pyo.Var(ix.IHT, domain=pyo.NonNegativeIntegers, bounds=ub("wi"))
    m.si = pyo.Var(ix.IHT, domain=pyo.NonNegativeIntegers, bounds=ub("si"))
    if ix.external:
        m.e = pyo.Var(ix.IT, domain=pyo.Binary)
        m.we = pyo.Var(ix.IHT, domain=pyo.NonNegativeIntegers, bounds=ub("we"))
        m.se = pyo.Var(ix.IHT, domain=pyo.NonNegativeIntegers, bounds=ub("se"))
    m.c = pyo.Var(ix.IK, domain=pyo.Binary)


def _add_admission(m: pyo.ConcreteModel, ix: _Index, terms: _Terms) -> None:
    """x_i = sum_k c[i,k] <= 1, and at most one mode per (i, t) while the job is active."""
    m.admit = pyo.Constraint(
        range(ix.I),
        rule=lambda m, i: sum(m.c[i, k] for k in ix.comp[i]) <= 1 if ix.comp[i] else pyo.Constraint.Skip,
    )
    m.one_mode = pyo.Constraint(ix.IT, rule=lambda m, i, t: terms.mode(i, t) <= terms.active(i, t))


def _add_internal_mode(m: pyo.ConcreteModel, ix: _Index, instance: Instance, st: Strengthening) -> None:
    """Internal: 1 <= wi <= bound when z = 1, else 0; si = ceil(wi / gamma) (eq. 2); with ``perspective`` the
    job fits on its machine."""
    jobs, cap = instance.jobs, instance.cluster.capacity
    gamma = {i: int(jobs.gamma[i]) for i in range(ix.I)}
    m.int_lo = pyo.Constraint(ix.IHT, rule=lambda m, i, h, t: m.wi[i, h, t] >= m.z[i, h, t])
    m.int_hi = pyo.Constraint(ix.IHT, rule=lambda m, i, h, t: m.wi[i, h, t] <= m.wi[i, h, t].ub * m.z[i, h, t])
    m.int_ps_lo = pyo.Constraint(ix.IHT, rule=lambda m, i, h, t: gamma[i] * m.si[i, h, t] >= m.wi[i, h, t])
    m.int_ps_hi = pyo.Constraint(
        ix.IHT, rule=lambda m, i, h, t: gamma[i] * m.si[i, h, t] <= m.wi[i, h, t] + (gamma[i] - 1) * m.z[i, h, t]
    )
    if st.perspective:
        alpha, beta = jobs.worker_demand, jobs.ps_demand
        IHTR = [(i, h, t, r) for i, h, t in ix.IHT for r in range(ix.R) if alpha[i, r] + beta[i, r] > 0]
        m.int_fit = pyo.Constraint(
            IHTR,
            rule=lambda m, i, h, t, r: (
                alpha[i, r] * m.wi[i, h, t] + beta[i, r] * m.si[i, h, t] <= cap[h, r] * m.z[i, h, t]
            ),
        )


def _add_external_mode(m: pyo.ConcreteModel, ix: _Index, jb: list[JobBounds], terms: _Terms, st: Strengthening) -> None:
    """External: counts only when e = 1, 1 <= WE <= bound, SE = ceil(WE / gamma) (eq. 2), on >= 2 machines
    (Fact 1)."""
    WE, SE = terms.WE, terms.SE
    gamma = {i: jb[i].gamma for i in range(ix.I)}
    w_ext = {i: (min(jb[i].batch, jb[i].w_external) if st.tight_bounds else jb[i].batch) for i in range(ix.I)}
    m.ext_w = pyo.Constraint(ix.IHT, rule=lambda m, i, h, t: m.we[i, h, t] <= m.we[i, h, t].ub * m.e[i, t])
    m.ext_s = pyo.Constraint(ix.IHT, rule=lambda m, i, h, t: m.se[i, h, t] <= m.se[i, h, t].ub * m.e[i, t])
    m.ext_lo = pyo.Constraint(ix.IT, rule=lambda m, i, t: WE(i, t) >= m.e[i, t])
    m.ext_hi = pyo.Constraint(ix.IT, rule=lambda m, i, t: WE(i, t) <= w_ext[i] * m.e[i, t])
    m.ext_ps_lo = pyo.Constraint(ix.IT, rule=lambda m, i, t: gamma[i] * SE(i, t) >= WE(i, t))
    m.ext_ps_hi = pyo.Constraint(
        ix.IT, rule=lambda m, i, t: gamma[i] * SE(i, t) <= WE(i, t) + (gamma[i] - 1) * m.e[i, t]
    )
    # Fact 1: an external allocation has hosts on >= 2 machines.
    m.ext_spread = pyo.Constraint(
        ix.IHT, rule=lambda m, i, h, t: m.we[i, h, t] + m.se[i, h, t] <= WE(i, t) + SE(i, t) - m.e[i, t]
    )


def _add_capacity(m: pyo.ConcreteModel, ix: _Index, instance: Instance, terms: _Terms) -> None:
    """The cap on concurrent workers, eq. (4), and every machine's capacity per slot, eq. (5)."""
    jobs, cap = instance.jobs, instance.cluster.capacity
    alpha, beta = jobs.worker_demand, jobs.ps_demand
    m.cap = pyo.Constraint(ix.IT, rule=lambda m, i, t: terms.WI(i, t) + terms.WE(i, t) <= int(jobs.batch[i]))

    def usage(i: int, h: int, t: int, r: int) -> Any:
        w = m.wi[i, h, t] + (m.we[i, h, t] if ix.external else 0)
        s = m.si[i, h, t] + (m.se[i, h, t] if ix.external else 0)
        return alpha[i, r] * w + beta[i, r] * s

    m.capacity = pyo.Constraint(
        ix.THR, rule=lambda m, t, h, r: sum(usage(i, h, t, r) for i in ix.by_slot[t]) <= cap[h, r]
    )


def _add_completion(m: pyo.ConcreteModel, ix: _Index, jb: list[JobBounds], terms: _Terms, st: Strengthening) -> None:
    """c[i,k] = 1 only if job i's samples reach V_i by slot k: attributed per completion slot with
    ``disaggregate`` (S[i,t,k]), else cumulatively."""
    slots, comp, samples = ix.slots, ix.comp, terms.samples
    if st.disaggregate:
        ITK = [(i, t, k) for i, k in ix.IK for t in slots[i] if t <= k]
        m.S = pyo.Var(ITK, domain=pyo.NonNegativeReals, bounds=lambda m, i, t, k: (0, jb[i].max_samples))
        m.attribute = pyo.Constraint(
            ix.IT, rule=lambda m, i, t: sum(m.S[i, t, k] for k in comp[i] if k >= t) == samples(i, t)
        )
        m.serve = pyo.Constraint(ITK, rule=lambda m, i, t, k: m.S[i, t, k] <= m.S[i, t, k].ub * m.c[i, k])
        m.done = pyo.Constraint(
            ix.IK, rule=lambda m, i, k: sum(m.S[i, t, k] for t in slots[i] if t <= k) >= jb[i].workload * m.c[i, k]
        )
    else:
        m.done = pyo.Constraint(
            ix.IT,
            rule=lambda m, i, t: (
                sum(samples(i, u) for u in slots[i] if u <= t)
                >= jb[i].workload * sum(m.c[i, k] for k in comp[i] if k <= t)
            ),
        )


def _add_symmetry(m: pyo.ConcreteModel, ix: _Index) -> None:
    """Identical machines, numbered per slot in order of first use by internal jobs."""
    IHT1 = [(i, h, t) for i, h, t in ix.IHT if h >= 1]
    m.sym = pyo.Constraint(
        IHT1, rule=lambda m, i, h, t: m.z[i, h, t] <= sum(m.z[j, h - 1, t] for j in ix.by_slot[t] if j < i)
    )


def _value(var: Any) -> int:
    v = var.value
    return 0 if v is None else round(v)


def schedule_of(built: Built, instance: Instance) -> Schedule:
    """The MILP's solution as a Schedule carrying the MILP's beliefs as claims.

    ``claimed_internal`` is the model's mode; ``claimed_completion`` the first slot where the model's own
    sample accounting reaches V_i (never later than its completion indicator). Allocations of jobs the
    model does not complete, and after a job's completion, earn nothing and are dropped.
    """
    m, jb = built.model, built.bounds
    sched = Schedule.empty(instance)
    H, external = instance.num_machines, hasattr(built.model, "e")
    for i, b in enumerate(jb):
        done = [k for k in built.completion[i] if _value(m.c[i, k]) == 1]
        if not done:
            continue
        sched.admitted[i] = True
        progress = 0.0
        for t in built.slots[i]:
            if t > done[0]:
                break
            wi = [_value(m.wi[i, h, t]) for h in range(H)]
            si = [_value(m.si[i, h, t]) for h in range(H)]
            we = [_value(m.we[i, h, t]) if external else 0 for h in range(H)]
            se = [_value(m.se[i, h, t]) if external else 0 for h in range(H)]
            sched.workers[t, i] = np.add(wi, we)
            sched.servers[t, i] = np.add(si, se)
            sched.claimed_internal[t, i] = sum(wi) > 0
            progress += b.rate_int * sum(wi) + b.rate_ext * sum(we)
            if progress >= b.workload * (1.0 - EPS) or t == done[0]:
                sched.claimed_completion[i] = t
                break
    return sched


def _symmetric_order(built: Built, instance: Instance, workers: np.ndarray, servers: np.ndarray, t: int) -> np.ndarray:
    """Machine order of slot t satisfying the symmetry breaking: first use by internal jobs, then the rest."""
    H = instance.num_machines
    if not built.strengthening.symmetry or H < 2 or not identical_machines(instance):
        return np.arange(H)
    first = []
    for i in range(instance.num_jobs):
        hosts = np.flatnonzero((workers[t, i] > 0) | (servers[t, i] > 0))
        if len(hosts) == 1 and workers[t, i].sum() > 0 and hosts[0] not in first:
            first.append(int(hosts[0]))
    return np.array(first + [h for h in range(H) if h not in first])


def warm_start(built: Built, instance: Instance, schedule: Schedule, completion: np.ndarray) -> bool:
    """Set the model's variables to a validated schedule (e.g. the best online policy's), machines relabelled
    per slot to respect symmetry breaking; False (values meaningless) if the schedule is not representable
    (surplus PSs, or a completion slot the bounds exclude, which would be a bounds bug)."""
    m, jb = built.model, built.bounds
    H = instance.num_machines
    order = [_symmetric_order(built, instance, schedule.workers, schedule.servers, t) for t in range(instance.slots)]
    for v in m.component_data_objects(pyo.Var):
        v.set_value(0, skip_validation=True)
    for i, b in enumerate(jb):
        k = int(completion[i])
        if k < 0:
            continue
        if k not in built.completion[i]:
            return False
        m.c[i, k].set_value(1)
        for t in built.slots[i]:
            if t > k:
                break
            w = schedule.workers[t, i, order[t]].astype(int)
            s = schedule.servers[t, i, order[t]].astype(int)
            if w.sum() == 0:
                continue
            if s.sum() != -(-w.sum() // b.gamma):
                return False
            hosts = np.flatnonzero((w > 0) | (s > 0))
            if len(hosts) == 1:
                m.z[i, hosts[0], t].set_value(1)
                m.wi[i, hosts[0], t].set_value(int(w[hosts[0]]))
                m.si[i, hosts[0], t].set_value(int(s[hosts[0]]))
            else:
                m.e[i, t].set_value(1)
                for h in range(H):
                    m.we[i, h, t].set_value(int(w[h]))
                    m.se[i, h, t].set_value(int(s[h]))
            if hasattr(m, "S"):
                m.S[i, t, k].set_value(b.rate_int * w.sum() if len(hosts) == 1 else b.rate_ext * w.sum())
    return True
