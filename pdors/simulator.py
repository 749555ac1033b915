"""The slot-by-slot simulator: it runs one policy over an instance and records what was allocated.

Per slot t: planning policies decide each job arriving at t (their plans are written into the schedule
and reserve resources in future slots); slot policies allocate slot t. Then slot t runs: every admitted,
not yet complete job progresses by the samples of eq. (1) at the rate its placement earns (Fact 1), less the
policy's ``restart_loss`` fraction in a slot where a job that ran before changes placement, and a job whose
workload is done completes; a plan's later slots are released. The simulator's own bookkeeping becomes the
schedule's claims, which the validator checks independently. The run ends after the last slot in which a job
can still arrive or run (every job arrived and, for slot policies, complete; for planning policies, no admitted
incomplete job holds a later slot of its plan): the later slots would allocate nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .compact import compact_repr
from .config import JSON
from .model import Instance
from .policies.base import JobPlan, PlanningPolicy, Policy, SlotAllocation, SlotPolicy, SlotView
from .portable_math import dot
from .schedule import Schedule


@dataclass(kw_only=True)
class SimulationResult:
    schedule: Schedule
    decision_seconds: np.ndarray  # one entry per decision (per job for planners, per slot otherwise)
    wall_seconds: float
    stats: JSON
    # the same decisions' CPU time of the simulating thread (``time.thread_time``): unlike the wall time, not
    # inflated by other processes sharing the cores
    decision_cpu_seconds: np.ndarray = field(default_factory=lambda: np.zeros(0))
    slots_simulated: int = 0  # slots run before nothing could arrive or run any more (at most T)

    def __repr__(self) -> str:
        return compact_repr(self)


def _read_only(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


@dataclass(kw_only=True)
class _State:
    """What the simulator carries from slot to slot; the arrays are updated in place."""

    instance: Instance
    sched: Schedule
    reserved: np.ndarray  # [T, H, R] resources committed per slot
    remaining: np.ndarray  # [I] samples still to process
    completed: np.ndarray  # [I] completion slot or -1
    ran: np.ndarray  # [I] had workers in some earlier slot
    workload: np.ndarray  # [I] V_i
    per_sample: np.ndarray  # [2, I] slots per sample at the external (0) and internal (1) rate (eqs. 1-2)
    read_only: tuple[np.ndarray, ...]  # reserved, remaining, admitted, completed: the policies' views of them
    planned: int = 0  # 1 + the last slot any plan holds: later slots hold nothing to release

    @classmethod
    def start(cls, instance: Instance, restart_loss: float) -> _State:
        jobs = instance.jobs
        sched = Schedule.empty(instance, restart_loss)
        reserved = np.zeros((instance.slots, instance.num_machines, len(instance.cluster.resources)))
        workload = jobs.workload
        remaining = workload.copy()
        completed = np.full(instance.num_jobs, -1, dtype=np.int64)
        return cls(
            instance=instance,
            sched=sched,
            reserved=reserved,
            remaining=remaining,
            completed=completed,
            ran=np.zeros(instance.num_jobs, dtype=bool),
            workload=workload,
            per_sample=np.stack([jobs.time_per_sample(False), jobs.time_per_sample(True)]),
            read_only=tuple(_read_only(a) for a in (reserved, remaining, sched.admitted, completed)),
        )

    def view(self, t: int) -> SlotView:
        reserved, remaining, admitted, completed = self.read_only
        return SlotView(
            t=t, instance=self.instance, reserved=reserved, remaining=remaining, admitted=admitted, completed=completed
        )


def simulate(instance: Instance, policy: Policy, seed: int = 0) -> SimulationResult:
    start = time.perf_counter()
    jobs, T = instance.jobs, instance.slots
    state = _State.start(instance, policy.restart_loss)
    sched, reserved, completed, view = state.sched, state.reserved, state.completed, state.view
    latencies: list[float] = []
    cpu: list[float] = []
    policy.reset(instance, seed)
    last_arrival = int(jobs.arrival.max())
    planned_until = np.full(instance.num_jobs, -1, dtype=np.int64)  # last slot of each admitted plan

    slots_run = 0
    for t in range(T):
        if isinstance(policy, PlanningPolicy):
            for i in np.flatnonzero(jobs.arrival == t):
                tick, cpu_tick = time.perf_counter(), time.thread_time()
                plan = policy.plan(int(i), view(t))
                latencies.append(time.perf_counter() - tick)
                cpu.append(time.thread_time() - cpu_tick)
                _check_output(policy, plan, JobPlan, (T, instance.num_machines), f"plan for job {i} in slot {t}")
                if plan is not None:  # job i's cells are all zero until now: only its busy slots are written
                    sched.admitted[i] = True
                    busy = np.flatnonzero(plan.workers.any(axis=1) | plan.servers.any(axis=1))
                    sched.workers[busy, i, :] = plan.workers[busy]
                    sched.servers[busy, i, :] = plan.servers[busy]
                    planned_until[i] = busy[-1] if busy.size else -1
                    state.planned = max(state.planned, int(planned_until[i]) + 1)
                    _reserve(reserved, instance, int(i), plan.workers, plan.servers, slice(None))
        elif isinstance(policy, SlotPolicy):
            tick, cpu_tick = time.perf_counter(), time.thread_time()
            alloc: SlotAllocation = policy.allocate(view(t))
            latencies.append(time.perf_counter() - tick)
            cpu.append(time.thread_time() - cpu_tick)
            _check_output(
                policy, alloc, SlotAllocation, (instance.num_jobs, instance.num_machines), f"allocation for slot {t}"
            )
            active = (jobs.arrival <= t) & (completed < 0)
            # Only the jobs given something are written: slot t of the schedule is still all zero.
            rows = np.flatnonzero(active & (alloc.workers.any(axis=1) | alloc.servers.any(axis=1)))
            w, s = alloc.workers[rows], alloc.servers[rows]
            sched.workers[t, rows], sched.servers[t, rows] = w, s
            sched.admitted[rows[w.sum(axis=1) > 0]] = True
            reserved[t] += _slot_usage(instance, rows, w, s)
        else:
            raise TypeError(f"{type(policy).__name__} is neither a PlanningPolicy nor a SlotPolicy")
        _run_slot(state, t)
        slots_run = t + 1
        if t >= last_arrival and _nothing_left(policy, sched.admitted, completed, planned_until, t):
            break  # every later slot would allocate nothing: the schedule's remaining cells stay zero

    sched.claimed_completion[:] = completed
    return SimulationResult(
        schedule=sched,
        decision_seconds=np.array(latencies),
        wall_seconds=time.perf_counter() - start,
        stats=policy.summary(),
        decision_cpu_seconds=np.array(cpu),
        slots_simulated=slots_run,
    )


_INTEGER_KINDS = ("i", "u")  # np.issubdtype(dtype, np.integer), without its cost in every slot


class PolicyOutputError(ValueError):
    """A policy returned something the simulator cannot execute: not its decision type, or arrays of the wrong
    shape or kind (the run fails with this reason; what it can execute, the validator judges)."""


def _check_output(policy: Policy, out: object, kind: type, shape: tuple[int, int], what: str) -> None:
    """``out`` is a ``kind`` (a planner may also return None) with integer ``workers`` and ``servers`` of
    ``shape``: NumPy would otherwise broadcast a wrong shape or truncate fractions without a word."""
    if out is None and kind is JobPlan:
        return
    name = type(policy).__name__
    if not isinstance(out, kind):
        raise PolicyOutputError(f"{name} returned {type(out).__name__} as its {what}, not a {kind.__name__}")
    for field_name in ("workers", "servers"):
        a = getattr(out, field_name)
        if not isinstance(a, np.ndarray) or a.shape != shape or a.dtype.kind not in _INTEGER_KINDS:
            got = f"{a.dtype} array of shape {a.shape}" if isinstance(a, np.ndarray) else type(a).__name__
            raise PolicyOutputError(
                f"{name}'s {what}: {field_name} must be an integer array of shape {shape}, got {got}"
            )


def _nothing_left(
    policy: Policy, admitted: np.ndarray, completed: np.ndarray, planned_until: np.ndarray, t: int
) -> bool:
    """After slot t, with every job arrived: whether no job can run any more. A slot policy may still give any
    incomplete job tasks; a planning policy's jobs run only in their plans' slots, fixed at admission."""
    incomplete = completed < 0
    if isinstance(policy, PlanningPolicy):
        return not (incomplete & admitted & (planned_until > t)).any()
    return not incomplete.any()


def _reserve(
    reserved: np.ndarray,
    instance: Instance,
    i: int,
    workers: np.ndarray,
    servers: np.ndarray,
    slots: slice,
    sign: float = 1.0,
) -> None:
    """Add (``sign`` -1: take back) the resources job i uses by ``workers``, ``servers`` [T', H] to
    ``reserved[slots]``. Only the (slot, machine) cells where it has tasks are touched: elsewhere the usage is
    exactly +-0.0, and adding it would change no bit (``reserved`` never holds -0.0: it starts at +0.0, and taking
    back what was added leaves +0.0)."""
    busy = np.flatnonzero(workers.any(axis=1) | servers.any(axis=1))
    slot, machine = ((workers[busy] != 0) | (servers[busy] != 0)).nonzero()
    slot = busy[slot]
    jobs, target = instance.jobs, reserved[slots]
    w, s = workers[slot, machine, None], servers[slot, machine, None]
    target[slot, machine] += sign * (w * jobs.worker_demand[i] + s * jobs.ps_demand[i])


def _slot_usage(instance: Instance, rows: np.ndarray, w: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Resources [H, R] used by one slot's allocation ``w, s`` [I', H] of the jobs ``rows``. The jobs given
    nothing are left out: their terms are exactly 0.0 in a sum taken in job order, so no bit changes."""
    jobs = instance.jobs
    usage: np.ndarray = dot(w.T, jobs.worker_demand[rows]) + dot(s.T, jobs.ps_demand[rows])
    return usage


def _run_slot(state: _State, t: int) -> None:
    """Run slot t: progress, restarts and completions of ``state``, and release what finished jobs held."""
    instance, sched, reserved, remaining, completed, ran = (
        state.instance,
        state.sched,
        state.reserved,
        state.remaining,
        state.completed,
        state.ran,
    )
    # Every per-job quantity below matters only for the jobs with workers in slot t (the others' cells of slot t
    # stay as they are, zero or unchanged): computed for those rows.
    rows = np.flatnonzero(sched.workers[t].any(axis=1))
    if not rows.size:
        return
    w, s = sched.workers[t, rows], sched.servers[t, rows]
    wsum = w.sum(axis=1)
    running = (completed[rows] < 0) & sched.admitted[rows]
    internal = running & (((w > 0) | (s > 0)).sum(axis=1) == 1)
    sched.claimed_internal[t, rows] = internal
    kept = np.ones(rows.size)
    if t > 0:
        moved = (w != sched.workers[t - 1, rows]).any(axis=1) | (s != sched.servers[t - 1, rows]).any(axis=1)
        restart = ran[rows] & moved
        sched.claimed_restart[t, rows] = restart
        kept[restart] = 1.0 - sched.restart_loss
    ran[rows] = True
    rate = state.per_sample[internal.astype(np.intp), rows]
    progressing = rows[running]
    remaining[progressing] -= (kept * wsum / rate)[running]
    finished = progressing[remaining[progressing] <= state.workload[progressing] * 1e-12]
    completed[finished] = t
    for i in finished.tolist():
        if t + 1 < state.planned:  # release the rest of a plan that finished early
            later = slice(t + 1, state.planned)
            w, s = sched.workers[later, i], sched.servers[later, i]
            _reserve(reserved, instance, int(i), w, s, later, -1.0)
            # Only the slots it holds are cleared: writing zeros over the rest would touch (and so allocate)
            # pages of the [T, I, H] arrays that are still the kernel's untouched zero pages.
            busy = t + 1 + np.flatnonzero(w.any(axis=1) | s.any(axis=1))
            sched.workers[busy, i] = 0
            sched.servers[busy, i] = 0
