"""The job and cluster model of the paper's Section III, array-backed.

An :class:`Instance` is everything a scheduler or the offline optimum needs: the jobs (one array entry per
job), the machines' capacities and the horizon ``T``. Arrays are read-only so a policy can be handed the
instance without copying it.

Units: one slot is one hour; ``tau`` is slots per sample; gradient size ``g`` is MB; link rates are MB per
slot; resources are counts (gpu, cpu) or GB (mem, storage).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from . import portable_math
from .compact import compact_repr
from .config import JSON

RESOURCES: tuple[str, ...] = ("gpu", "cpu", "mem", "storage")

# Sensitivity classes of the paper's Section V (theta2 = 0 / in [0.01, 1] / in [4, 6]).
INSENSITIVE, SENSITIVE, CRITICAL = 0, 1, 2


def _frozen(array: ArrayLike, dtype: DTypeLike) -> np.ndarray:
    out = np.array(array, dtype=dtype, copy=True)
    out.flags.writeable = False
    return out


@dataclass(frozen=True, eq=False, kw_only=True)
class Jobs:
    """Per-job parameters, each an array of length I (resource demands are I x R).

    Field names follow the paper's symbols: ``arrival`` a_i, ``epochs`` E_i, ``samples`` K_i,
    ``grad_mb`` g_i, ``tau`` tau_i, ``gamma`` gamma_i (worker:PS ratio), ``batch`` F_i (global batch,
    also the cap on concurrent workers, eq. 4), ``bw_internal`` b_i^(i), ``bw_external`` b_i^(e),
    ``worker_demand`` alpha_i^r, ``ps_demand`` beta_i^r, and the sigmoid utility parameters
    ``theta1..theta3`` of Section V.
    """

    arrival: np.ndarray
    epochs: np.ndarray
    samples: np.ndarray
    grad_mb: np.ndarray
    tau: np.ndarray
    gamma: np.ndarray
    batch: np.ndarray
    bw_internal: np.ndarray
    bw_external: np.ndarray
    worker_demand: np.ndarray
    ps_demand: np.ndarray
    theta1: np.ndarray
    theta2: np.ndarray
    theta3: np.ndarray
    sensitivity: np.ndarray
    # 0: the sigmoid above; 1: the thesis's u_i(d) = theta1 / (1 + d) (Section 4.1, theta1 = 1); not given: all 0
    utility_form: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    _INT_FIELDS = ("arrival", "epochs", "samples", "gamma", "batch", "sensitivity", "utility_form")

    def __repr__(self) -> str:
        return compact_repr(self)

    def __post_init__(self) -> None:
        if np.size(self.utility_form) == 0:
            object.__setattr__(self, "utility_form", np.zeros(np.size(self.arrival), dtype=np.int64))
        for name in _JOB_FIELDS:
            dtype = np.int64 if name in self._INT_FIELDS else np.float64
            object.__setattr__(self, name, _frozen(getattr(self, name), dtype))

    def __len__(self) -> int:
        return int(self.arrival.shape[0])

    @property
    def workload(self) -> np.ndarray:
        """V_i = E_i * K_i, the total samples to process (Section IV-C); read-only."""
        return self._once("_workload", lambda: self.epochs * self.samples)

    def time_per_sample(self, internal: bool | np.ndarray) -> np.ndarray:
        """Slots one worker spends per sample: tau_i + 2 g_i gamma_i / (b F_i) (eqs. 1-2).

        ``b`` is b_i^(i) where ``internal`` holds (Fact 1), else b_i^(e). For ``internal`` True or False the
        read-only array is computed once.
        """
        if isinstance(internal, bool):
            return self._once(f"_time_per_sample_{internal}", lambda: self._time_per_sample(internal))
        return self._time_per_sample(internal)

    def _once(self, name: str, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """``compute()`` as float64, read-only, kept as attribute ``name`` from the first call: it derives from the
        fields, which never change (read-only arrays)."""
        if name not in self.__dict__:
            object.__setattr__(self, name, _frozen(compute(), np.float64))
        out: np.ndarray = self.__dict__[name]
        return out

    def _time_per_sample(self, internal: bool | np.ndarray) -> np.ndarray:
        bw = np.where(internal, self.bw_internal, self.bw_external)
        out: np.ndarray = self.tau + 2.0 * self.grad_mb * self.gamma / (bw * self.batch)
        return out

    def utility(self, duration: ArrayLike) -> np.ndarray:
        """Sigmoid utility u_i(d) = theta1 / (1 + exp(theta2 (d - theta3))) of Section V, or theta1 / (1 + d)
        where ``utility_form`` is 1 (the thesis's).

        ``duration`` broadcasts against the job axis; d = t_done - a_i.
        """
        d = np.asarray(duration, float)
        sigmoid = self.theta1 / (1.0 + portable_math.exp(self.theta2 * (d - self.theta3)))
        out: np.ndarray = np.where(self.utility_form == 1, self.theta1 / (1.0 + np.maximum(d, 0.0)), sigmoid)
        return out

    def utility_of(self, job: int, duration: ArrayLike) -> np.ndarray:
        """u_i(d) for one job, vectorised over ``duration``."""
        d = np.asarray(duration, float)
        out: np.ndarray
        if self.utility_form[job] == 1:
            out = self.theta1[job] / (1.0 + np.maximum(d, 0.0))
        else:
            out = self.theta1[job] / (1.0 + portable_math.exp(self.theta2[job] * (d - self.theta3[job])))
        return out

    def subset(self, index: ArrayLike) -> Jobs:
        return Jobs(**{name: getattr(self, name)[index] for name in _JOB_FIELDS})


_JOB_FIELDS = tuple(f.name for f in fields(Jobs))  # looked up once: every generated instance builds its Jobs


@dataclass(frozen=True, eq=False)
class Cluster:
    """Machines and their capacities C_h^r (H x R)."""

    capacity: np.ndarray
    resources: tuple[str, ...] = RESOURCES

    def __repr__(self) -> str:
        return compact_repr(self)

    def __post_init__(self) -> None:
        object.__setattr__(self, "capacity", _frozen(self.capacity, np.float64))
        object.__setattr__(self, "resources", tuple(self.resources))

    @property
    def machines(self) -> int:
        return int(self.capacity.shape[0])


@dataclass(frozen=True, eq=False, kw_only=True)
class Instance:
    """One scheduling problem: jobs, cluster and horizon T (slots 0..T-1).

    ``ps_bandwidth``: B_i, the rate one PS of job i carries (MB per slot), under the thesis's model
    (:mod:`pdors.thesis`), where it brings constraints (3.4) and (3.5); None under the paper's model."""

    jobs: Jobs
    cluster: Cluster
    slots: int
    meta: JSON = field(default_factory=dict)
    ps_bandwidth: np.ndarray | None = None
    # With ``ps_bandwidth``: whether (3.5) s <= w holds; False is Algorithm 4 as printed, whose internal steps
    # 2-6 and external program (3.22)-(3.25) have no such check (docs/MODEL.md, "The thesis profile")
    ps_at_most_workers: bool = True
    # values derived from this (read-only) instance, by the function that computes them: see :meth:`derived`
    _derived: dict[Callable[[Instance], Any], Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        return compact_repr(self)

    def __post_init__(self) -> None:
        if self.ps_bandwidth is not None:
            object.__setattr__(self, "ps_bandwidth", _frozen(self.ps_bandwidth, np.float64))
        problems = instance_problems(self)
        if problems:
            raise ValueError("invalid instance: " + "; ".join(problems))

    @property
    def num_jobs(self) -> int:
        return len(self.jobs)

    def derived(self, compute: Callable[[Instance], np.ndarray]) -> np.ndarray:
        """``compute(self)``, computed once per instance and returned read-only: for pure functions of the instance
        that several readers need (the policy and the run's summary), which the instance's read-only arrays
        keep valid."""
        if compute not in self._derived:
            value = compute(self)
            self._derived[compute] = _frozen(value, value.dtype)
        out: np.ndarray = self._derived[compute]
        return out

    @property
    def num_machines(self) -> int:
        return self.cluster.machines


def instance_problems(inst: Instance) -> list[str]:
    """Every reason ``inst`` is not a valid instance, each naming the field (empty if valid)."""
    j, c, out = inst.jobs, inst.cluster, []
    n, r = len(j), len(c.resources)
    if not isinstance(inst.slots, (int, np.integer)) or inst.slots < 1:
        out.append(f"slots: must be a positive integer, got {inst.slots!r}")
    if c.capacity.ndim != 2 or c.capacity.shape[1] != r or c.capacity.shape[0] < 1:
        out.append(f"cluster.capacity: must be H x {r} with H >= 1, got shape {c.capacity.shape}")
    elif not np.all(np.isfinite(c.capacity)) or np.any(c.capacity < 0):
        out.append("cluster.capacity: must be finite and >= 0")
    reals = []  # the fields to check for finite values (the integer fields are finite)
    for name in _JOB_FIELDS:
        a = getattr(j, name)
        want = (n, r) if name in ("worker_demand", "ps_demand") else (n,)
        if a.shape != want:
            out.append(f"jobs.{name}: shape {a.shape}, expected {want}")
        elif a.dtype.kind == "f":
            reals.append((name, a))
    if reals and not np.isfinite(np.concatenate([a.ravel() for _, a in reals])).all():  # one test, then which
        out += [f"jobs.{name}: must be finite" for name, a in reals if not np.isfinite(a).all()]
    if inst.ps_bandwidth is not None and (
        inst.ps_bandwidth.shape != (n,) or not np.all(np.isfinite(inst.ps_bandwidth) & (inst.ps_bandwidth > 0))
    ):
        out.append(f"ps_bandwidth: must hold {n} finite values > 0")
    if out:
        return out
    checks = [
        ("arrival", (j.arrival >= 0) & (j.arrival < inst.slots), f"must lie in [0, {inst.slots - 1}]"),
        ("epochs", j.epochs >= 1, "must be >= 1"),
        ("samples", j.samples >= 1, "must be >= 1"),
        ("grad_mb", j.grad_mb >= 0, "must be >= 0"),
        ("tau", j.tau > 0, "must be > 0"),
        ("gamma", j.gamma >= 1, "must be >= 1"),
        ("batch", j.batch >= 1, "must be >= 1"),
        ("bw_internal", j.bw_internal > 0, "must be > 0"),
        ("bw_external", j.bw_external > 0, "must be > 0"),
        ("worker_demand", np.all(j.worker_demand >= 0, axis=1), "must be >= 0"),
        ("ps_demand", np.all(j.ps_demand >= 0, axis=1), "must be >= 0"),
        ("theta1", j.theta1 >= 0, "must be >= 0"),
        ("theta2", j.theta2 >= 0, "must be >= 0 (utility non-increasing in time)"),
        ("sensitivity", (j.sensitivity >= INSENSITIVE) & (j.sensitivity <= CRITICAL), "must be 0, 1 or 2"),
        ("utility_form", (j.utility_form >= 0) & (j.utility_form <= 1), "must be 0 (sigmoid) or 1 (1 / (1 + d))"),
    ]
    if np.concatenate([ok for _, ok, _ in checks]).all():  # the common case: one reduction, not one per check
        return out
    for name, ok, why in checks:
        if ok.all():
            continue
        bad = np.flatnonzero(~ok)
        out.append(f"jobs.{name}: {why} (job {int(bad[0])}{' and others' if bad.size > 1 else ''})")
    return out
