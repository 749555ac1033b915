"""Synthetic workloads with the paper's Section V distributions (docs/MODEL.md, Workload).

Every draw comes from one ``numpy.random.Generator(PCG64(seed))`` in a fixed order, so the same config and
seed give bit-identical instances in any process. Jobs are numbered in arrival order (ties by draw order).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from . import thesis
from .config import JSON, MAX_INT, bounded, range_problem
from .errors import InputError
from .model import CRITICAL, INSENSITIVE, RESOURCES, SENSITIVE, Cluster, Instance, Jobs

MBPS_TO_MB_PER_SLOT = 3600.0 / 8.0  # one slot is one hour [choice]


@dataclass(frozen=True, kw_only=True)
class Demand:
    """Integer ranges per resource for one worker or one parameter server."""

    gpu: tuple[int, int]
    cpu: tuple[int, int]
    mem: tuple[int, int]
    storage: tuple[int, int]

    def check(self) -> list[str]:
        return [p for r in RESOURCES for p in range_problem(r, getattr(self, r))]

    def bounds(self) -> np.ndarray:
        return np.array([getattr(self, r) for r in RESOURCES], dtype=np.int64)


@dataclass(frozen=True, kw_only=True)
class TraceConfig:
    """Where ``arrivals: trace`` takes its arrivals (:mod:`pdors.traces`): a snippet of I consecutive
    submissions of the trace at ``path`` (relative paths from the working directory), scaled onto the T slots.

    ``per_seed``: snippet start = ``offset + seed * I`` (each seed its own stretch of the trace, wrapping at
    its end), else ``offset`` for every seed. ``classes``: each job's sensitivity class from the trace's
    scheduling class (Google only) instead of a draw from ``mix``."""

    path: str = ""
    format: Literal["google", "philly"] = "google"
    offset: int = bounded(0, -MAX_INT, 10**9, "submissions skipped; longer than any trace")
    per_seed: bool = True
    classes: bool = False

    def check(self) -> list[str]:
        out = [f"offset: must be >= 0, got {self.offset}"] if self.offset < 0 else []
        if self.classes and self.format == "philly":
            out.append("classes: the Philly format has no scheduling class; use mix")
        return out


# The fields ``profile: thesis`` replaces by the thesis's Section 4.1 (pdors.thesis); they must keep defaults.
PAPER_ONLY = ("epochs", "samples", "grad_mb", "tau", "gamma", "batch", "bw_external_mbps", "worker_demand", "ps_demand")


PAPER_SCALE = 0.1  # the calibrated default of the paper's profile (docs/MODEL.md, "Calibration")
# A job's workload V_i = E_i x round(K_i x scale) is an int64 that the validator and policies sum in float64: it
# must stay exact there (2^53), far below int64's 9.2e18, past which it wrapped negative (issue 47).
MAX_WORKLOAD = 2**53


@dataclass(frozen=True, kw_only=True)
class WorkloadConfig:
    """Generator settings; defaults are the paper's Section V (thesis for bandwidth), with ``K_i`` multiplied by
    ``workload_scale``: by default the paper's regime as calibrated in docs/MODEL.md ("Calibration"); 1 gives the
    literal ranges.

    ``profile``: ``paper`` (the paper's model), or ``thesis``: the thesis's jobs, throughput and PS rules
    (:mod:`pdors.thesis`); the fields in ``PAPER_ONLY`` do not apply to it, the others (bandwidth ratio,
    capacity factor, utilities, mix, arrivals, workload scale) do."""

    # E x K (epochs x samples) must stay exact in float64 (2^53): 10^6 x 10^9 = 10^15 does
    epochs: tuple[int, int] = bounded((50, 200), 0, 10**6, "epochs per job (E); the paper uses 50-200")
    samples: tuple[int, int] = bounded((20000, 500000), 0, 10**9, "samples per epoch (K); paper: 2e4-5e5")
    grad_mb: tuple[float, float] = (30.0, 575.0)
    tau: tuple[float, float] = (1e-5, 1e-4)
    gamma: tuple[int, int] = bounded((1, 10), 0, 10**4, "gamma per job; the paper uses 1-10")
    batch: tuple[int, int] = bounded((1, 200), 0, 10**5, "samples per worker per step; the paper uses 1-200")
    bw_external_mbps: tuple[float, float] = (100.0, 4000.0)
    bandwidth_ratio: float = 40.0
    worker_demand: Demand = field(default_factory=lambda: Demand(gpu=(0, 4), cpu=(1, 10), mem=(2, 32), storage=(5, 10)))
    ps_demand: Demand = field(default_factory=lambda: Demand(gpu=(0, 0), cpu=(1, 10), mem=(2, 32), storage=(5, 10)))
    capacity_factor: float = 18.0
    theta1: tuple[float, float] = (1.0, 100.0)
    theta2_sensitive: tuple[float, float] = (0.01, 1.0)
    theta2_critical: tuple[float, float] = (4.0, 6.0)
    theta3: tuple[float, float] = (1.0, 15.0)
    mix: tuple[float, float, float] = (0.10, 0.55, 0.35)
    arrivals: Literal["alternating", "uniform", "trace"] = "alternating"
    # None: the profile's own default, the calibrated 0.1 for the paper's (docs/MODEL.md, "Calibration") and 1 for
    # the thesis's (its Section 4.1 sizes); 1 = the profile's K_i literally.
    workload_scale: float | None = None
    trace: TraceConfig = field(default_factory=TraceConfig)
    profile: Literal["paper", "thesis"] = "paper"
    # None: the profile's own, the paper's sigmoid (theta1..3, mix) or the thesis's u = 1 / (1 + d) (Section 4.1)
    utility: Literal["sigmoid", "reciprocal"] | None = None
    # thesis profile: ``eq3_5`` keeps (3.5) s <= w, as Problem (3.18) lists it; ``as_printed`` drops it, as
    # Algorithm 4's internal steps 2-6 and its external program (3.22)-(3.25) do
    thesis_ps_rule: Literal["eq3_5", "as_printed"] = "eq3_5"

    def scale(self) -> float:
        """The factor on K_i: ``workload_scale``, else the profile's default."""
        if self.workload_scale is not None:
            return self.workload_scale
        return PAPER_SCALE if self.profile == "paper" else 1.0

    def largest_workload(self) -> tuple[int, int, float]:
        """(E, K, E x round(K x scale)): the largest job workload this config can draw, from its largest E and K."""
        e, k = (
            (thesis.EPOCHS[1], thesis.MINIBATCHES_PER_CHUNK[1] * thesis.CHUNKS[1])
            if self.profile == "thesis"
            else (self.epochs[1], self.samples[1])
        )
        return e, k, float(e) * max(1.0, round(k * self.scale()))

    def utility_form(self) -> str:
        """``utility``, else the profile's default."""
        return self.utility or ("sigmoid" if self.profile == "paper" else "reciprocal")

    def check(self) -> list[str]:
        out = []
        if self.profile != "thesis" and self.thesis_ps_rule != "eq3_5":
            out.append(f"thesis_ps_rule: applies only with profile thesis, got {self.thesis_ps_rule!r}")
        if self.profile == "thesis":
            default = WorkloadConfig()
            out += [
                f"{name}: not used with profile thesis (its Section 4.1 ranges apply)"
                for name in PAPER_ONLY
                if getattr(self, name) != getattr(default, name)
            ]
        for name, lo in (
            ("epochs", 1),
            ("samples", 1),
            ("grad_mb", 0),
            ("tau", 1e-12),
            ("gamma", 1),
            ("batch", 1),
            ("bw_external_mbps", 1e-9),
            ("theta1", 0),
            ("theta2_sensitive", 0),
            ("theta2_critical", 0),
            ("theta3", 0),
        ):
            out += range_problem(name, getattr(self, name), lo)
        if self.bandwidth_ratio <= 0:
            out.append(f"bandwidth_ratio: must be > 0, got {self.bandwidth_ratio}")
        if self.capacity_factor <= 0:
            out.append(f"capacity_factor: must be > 0, got {self.capacity_factor}")
        if self.workload_scale is not None and self.workload_scale <= 0:
            out.append(f"workload_scale: must be > 0, got {self.workload_scale}")
        if any(m < 0 for m in self.mix) or abs(sum(self.mix) - 1.0) > 1e-6:
            out.append(f"mix: three non-negative shares summing to 1, got {list(self.mix)}")
        if not out:
            e, k, v = self.largest_workload()
            if v > MAX_WORKLOAD:
                name = "workload_scale" if self.workload_scale is not None else "samples"
                out.append(
                    f"{name}: the largest job workload E x K x workload_scale = {e:,} x {k:,} x {self.scale():g} = "
                    f"{v:.3g} is over 2^53 ({MAX_WORKLOAD:.3g}), where workloads stop being exact"
                )
        out += [f"worker_demand.{p}" for p in self.worker_demand.check()]
        out += [f"ps_demand.{p}" for p in self.ps_demand.check()]
        if self.arrivals == "trace":
            out += self._trace_problem()
        return out

    def _trace_problem(self) -> list[str]:
        from .traces import TraceError, load

        if not self.trace.path:
            return [
                "trace.path: required with arrivals: trace (a Google job_events directory or a Philly cluster_job_log)"
            ]
        try:
            load(self.trace.path, self.trace.format)
        except TraceError as e:
            return [f"trace.path: {e}"]
        return []

    def capacity(self) -> np.ndarray:
        """C^r = capacity_factor x the midpoint of the worker demand range [choice: "roughly 18 times"]."""
        out: np.ndarray = self.capacity_factor * self.worker_demand.bounds().mean(axis=1)
        return out


def arrival_weights(slots: int, pattern: str) -> np.ndarray:
    """Per-slot arrival probabilities over the horizon.

    ``alternating``: the paper's normalised Google-trace rates, 1/3 in odd and 2/3 in even slots, counting
    slots from 1 as the paper does (so 0-based slot 0 is odd) [choice]. ``trace`` draws (and then discards)
    alternating arrivals, so every other parameter equals the synthetic instance of the same seed.
    """
    w = np.ones(slots) if pattern == "uniform" else np.where(np.arange(slots) % 2 == 0, 1.0 / 3.0, 2.0 / 3.0)
    out: np.ndarray = w / w.sum()
    return out


@dataclass(frozen=True, eq=False, kw_only=True)
class Drawn:
    """An instance as drawn, before its cluster is sized: the cluster's size enters no draw, so the instances of
    one seed on clusters of every size share these jobs (a sweep over cluster sizes draws them once)."""

    jobs: Jobs
    capacity: np.ndarray  # [R]: every machine's
    slots: int
    meta: JSON
    ps_bandwidth: np.ndarray | None
    ps_at_most_workers: bool

    def on(self, machines: int) -> Instance:
        """The instance on ``machines`` machines: what :func:`generate` gives for them."""
        if machines < 1:
            raise InputError(f"machines must be >= 1, got {machines}")
        return Instance(
            jobs=self.jobs,
            cluster=Cluster(capacity=np.tile(self.capacity, (machines, 1))),
            slots=self.slots,
            meta=dict(self.meta),
            ps_bandwidth=self.ps_bandwidth,
            ps_at_most_workers=self.ps_at_most_workers,
        )


def generate(
    config: WorkloadConfig,
    machines: int,
    jobs: int,
    slots: int,
    seed: int,
    arrivals: np.ndarray | None = None,
    sensitivity: np.ndarray | None = None,
) -> Instance:
    """Draw an instance. ``arrivals`` replaces the synthetic arrival slots and ``sensitivity`` the classes
    drawn from ``mix`` (theta2 is then drawn for the given class); with ``config.arrivals == "trace"`` both
    come from the trace snippet of this seed unless given. The draws are the same either way."""
    if machines < 1 or jobs < 1 or slots < 1:
        raise InputError(f"machines, jobs and slots must be >= 1, got {machines}, {jobs}, {slots}")
    return draw(config, jobs, slots, seed, arrivals, sensitivity).on(machines)


def draw(
    config: WorkloadConfig,
    jobs: int,
    slots: int,
    seed: int,
    arrivals: np.ndarray | None = None,
    sensitivity: np.ndarray | None = None,
) -> Drawn:
    """:func:`generate`'s draws, for a cluster of any size."""
    if jobs < 1 or slots < 1:
        raise InputError(f"jobs and slots must be >= 1, got {jobs}, {slots}")
    meta: JSON = {"seed": int(seed), "generator": "synthetic"}
    if config.arrivals == "trace" and arrivals is None:
        from .traces import load, snippet

        tc = config.trace
        cut = snippet(load(tc.path, tc.format), jobs, slots, tc.offset + (seed * jobs if tc.per_seed else 0))
        arrivals = cut.arrival
        if tc.classes and sensitivity is None:
            sensitivity = cut.sensitivity
        meta = {**meta, "generator": "trace", "trace": tc.path, "trace_start": cut.start}
    rng = np.random.Generator(np.random.PCG64(seed))
    c = config

    def ints(bounds: tuple[int, int]) -> np.ndarray:
        return rng.integers(bounds[0], bounds[1] + 1, size=jobs)

    def reals(bounds: tuple[float, float]) -> np.ndarray:
        return rng.uniform(bounds[0], bounds[1], size=jobs)

    synthetic = rng.choice(slots, size=jobs, p=arrival_weights(slots, c.arrivals))
    if arrivals is None:
        arrival = synthetic
    else:
        arrival = np.asarray(arrivals, dtype=np.int64)
        if arrival.shape != (jobs,) or arrival.min() < 0 or arrival.max() >= slots:
            raise InputError(f"arrivals: need {jobs} slots in [0, {slots - 1}]")
    ps_bandwidth, capacity = None, c.capacity()
    if c.profile == "thesis":
        arrays, ps_bandwidth = thesis.draw_jobs(rng, jobs, c.bandwidth_ratio)
        capacity = thesis.capacity(c.capacity_factor)
    else:
        epochs, samples = ints(c.epochs), ints(c.samples)
        grad, tau, gamma, batch = reals(c.grad_mb), reals(c.tau), ints(c.gamma), ints(c.batch)
        bw_ext = reals(c.bw_external_mbps) * MBPS_TO_MB_PER_SLOT
        wd, pd = c.worker_demand.bounds(), c.ps_demand.bounds()
        worker = rng.integers(wd[:, 0], wd[:, 1] + 1, size=(jobs, len(RESOURCES)))
        ps = rng.integers(pd[:, 0], pd[:, 1] + 1, size=(jobs, len(RESOURCES)))
        arrays = dict(
            epochs=epochs,
            samples=samples,
            grad_mb=grad,
            tau=tau,
            gamma=gamma,
            batch=batch,
            bw_internal=bw_ext * c.bandwidth_ratio,
            bw_external=bw_ext,
            worker_demand=worker,
            ps_demand=ps,
        )
    arrays["samples"] = np.maximum(1, np.round(arrays["samples"] * c.scale())).astype(np.int64)
    theta1, theta3 = reals(c.theta1), reals(c.theta3)
    cls = rng.choice(3, size=jobs, p=np.array(c.mix) / sum(c.mix))
    if sensitivity is not None:
        cls = np.asarray(sensitivity, dtype=np.int64)
        if cls.shape != (jobs,) or not np.isin(cls, (INSENSITIVE, SENSITIVE, CRITICAL)).all():
            raise InputError(f"sensitivity: need {jobs} classes in {{{INSENSITIVE}, {SENSITIVE}, {CRITICAL}}}")
    sensitive, critical = reals(c.theta2_sensitive), reals(c.theta2_critical)
    theta2 = np.where(cls == SENSITIVE, sensitive, np.where(cls == CRITICAL, critical, 0.0))  # 0: INSENSITIVE
    form = np.zeros(jobs, dtype=np.int64)
    if c.utility_form() == "reciprocal":  # every draw above is kept, so the other parameters do not move
        form[:] = 1
        theta1 = np.ones(jobs)
    order = np.argsort(arrival, kind="stable")
    drawn = dict(arrival=arrival, **arrays, theta1=theta1, theta2=theta2, theta3=theta3, sensitivity=cls)
    job_arrays = Jobs(**{name: np.asarray(a)[order] for name, a in drawn.items()}, utility_form=form[order])
    if ps_bandwidth is not None:
        ps_bandwidth = ps_bandwidth[order]
        meta = {**meta, "profile": "thesis"}
    at_most = c.thesis_ps_rule == "eq3_5"
    return Drawn(
        jobs=job_arrays,
        capacity=np.asarray(capacity, dtype=np.float64),
        slots=int(slots),
        meta=meta,
        ps_bandwidth=ps_bandwidth,
        ps_at_most_workers=at_most,
    )
