"""One simulation run: build the instance, simulate one policy, validate, summarise.

This is the unit of work of every command: ``pdors simulate`` runs one, a sweep fans out many.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .compact import compact_repr
from .config import JSON, build, to_dict
from .errors import ConfigError, InputError
from .load import fluid_completable, offered_load
from .model import Instance
from .policies import THESIS_POLICIES, policy_config, resolve
from .policies.external import PolicyOrigin
from .premise import of_run as premise_of_run
from .quantiles import median, percentile
from .run_summary import JobOutcome, Latency, RunSummary
from .simulator import SimulationResult, simulate
from .solo import fastest_completion, utility_ceiling
from .validator import Validation, validate
from .version import CODE_VERSION
from .workload import WorkloadConfig, generate


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """Everything that determines a run's outcome (timings aside)."""

    policy: str = "pdors"
    machines: int = 30
    jobs: int = 50
    slots: int = 20
    seed: int = 1
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    params: dict[str, Any] = field(default_factory=dict)
    # An external policy's origin as a sweep planned it (pipeline.spec.grid): the run refuses to go on with other
    # code; None runs whatever the name finds here.
    origin: PolicyOrigin | None = None
    # An instance file (pdors.instance_io JSON) instead of a generated instance; ``instance_digest``: its content's
    # SHA-256 as a sweep planned it (a changed file refuses to run). The seed then drives the policy alone.
    instance_file: str = ""
    instance_digest: str = ""

    def check(self) -> list[str]:
        out = []
        try:
            found = resolve(self.policy)
        except InputError as e:  # "policy: <why>" or "policy <target>: <why>", as one "policy: ..." line
            return [f"policy: {str(e).removeprefix('policy').lstrip(': ')}"]
        if self.origin is not None and self.origin != found.origin:
            here, asked = _origin_words(found.origin), _origin_words(self.origin)
            out.append(f"origin: {self.policy} here is {here}, the run asks for {asked}")
        if self.workload.profile == "thesis" and self.policy not in THESIS_POLICIES:
            out.append(
                f"policy: {self.policy} does not keep the thesis's PS rules (3.4)-(3.5); with "
                f"workload.profile thesis use {' or '.join(THESIS_POLICIES)}"
            )
        for name in ("machines", "jobs", "slots"):
            if getattr(self, name) < 1:
                out.append(f"{name}: must be >= 1, got {getattr(self, name)}")
        if self.seed < 0:
            out.append(f"seed: must be >= 0, got {self.seed}")
        if not out:
            policy_config(self.policy, self.params)  # raises ConfigError naming params.<field>
        return out


def spec_data(spec: RunSpec) -> JSON:
    """``spec`` as plain data; without ``origin`` and the instance file where unset (the runs of built-in policies
    on generated instances keep their ids)."""
    out: JSON = to_dict(spec)
    for key, unset in (("origin", None), ("instance_file", ""), ("instance_digest", "")):
        if out[key] == unset:
            del out[key]
    return out


def _origin_words(origin: PolicyOrigin) -> str:
    return f"{origin.distribution or origin.target} {origin.version} (source {origin.digest or 'built in'})"


@dataclass(kw_only=True)
class RunResult:
    spec: RunSpec
    instance: Instance
    simulation: SimulationResult
    validation: Validation
    summary: RunSummary

    def __repr__(self) -> str:
        s = self.summary
        return compact_repr(self, policy=s.policy, seed=s.seed, total_utility=s.total_utility, ok=self.validation.ok)


def make_instance(spec: RunSpec) -> Instance:
    if spec.instance_file:
        from .instance_io import file_digest, load

        if spec.instance_digest and (now := file_digest(spec.instance_file)) != spec.instance_digest:
            raise InputError(
                f"instance_file: {spec.instance_file} has changed since the sweep was planned (SHA-256 {now}, "
                f"planned {spec.instance_digest})"
            )
        return load(spec.instance_file)
    return generate(spec.workload, spec.machines, spec.jobs, spec.slots, spec.seed)


def run(spec: RunSpec | JSON, instance: Instance | None = None) -> RunResult:
    return run_checked(build(RunSpec, spec), instance)


def run_checked(spec: RunSpec, instance: Instance | None = None) -> RunResult:
    """:func:`run` of a spec that :func:`~pdors.config.build` made (checked), or :func:`reseeded` from one: a
    sweep builds a grid point's spec once for all its seeds."""
    instance = instance if instance is not None else make_instance(spec)
    found = resolve(spec.policy)
    config = build(found.config, spec.params, "params")  # once: the policy and the run's premise read it
    sim = simulate(instance, found.make(config, spec), spec.seed)
    check = validate(instance, sim.schedule)
    return RunResult(
        spec=spec,
        instance=instance,
        simulation=sim,
        validation=check,
        summary=summarise(spec, instance, sim, check, config),
    )


def reseeded(spec: RunSpec, seed: int) -> RunSpec:
    """``spec`` with another ``seed``, checked without building it again: the seed enters no check but its own."""
    if seed < 0:
        raise ConfigError("seed", f"must be >= 0, got {seed}")
    return replace(spec, seed=seed)


def summarise(spec: RunSpec, instance: Instance, sim: SimulationResult, check: Validation, config: Any) -> RunSummary:
    """The run's summary; ``config``: its policy's config (built from ``spec.params``)."""
    jobs, T = instance.jobs, instance.slots
    admitted = sim.schedule.admitted
    complete = (check.completion >= 0) & admitted
    training = np.where(complete, check.completion - jobs.arrival, T)
    capacity = instance.cluster.capacity.sum(axis=0) * T
    used = check.usage[: check.checked].sum(axis=(0, 1))  # the idle tail is zero
    latency_ms = sim.decision_seconds * 1e3
    fastest = fastest_completion(instance)
    return RunSummary(
        policy=spec.policy,
        seed=spec.seed,
        machines=instance.num_machines,
        num_jobs=instance.num_jobs,
        slots=T,
        total_utility=check.total_utility,
        schedule_digest=sim.schedule.digest(),
        admitted=int(admitted.sum()),
        completed=int(complete.sum()),
        rejected=int((~admitted).sum()),
        median_training_time=median(sorted(training.tolist())),
        offered_load=offered_load(instance),
        fluid_completable=fluid_completable(instance),
        utility_ceiling=utility_ceiling(instance, fastest),
        later_than_solo_fastest=int((complete & (check.completion > fastest)).sum()),
        utilisation={
            r: float(u / c) if c > 0 else 0.0
            for r, u, c in zip(instance.cluster.resources, used, capacity, strict=False)
        },
        violations=[v.as_dict() for v in check.violations],
        decision_latency_ms=_latency(latency_ms),
        decision_cpu_ms=_latency(sim.decision_cpu_seconds * 1e3),
        policy_stats=sim.stats,
        wall_s=sim.wall_seconds,
        code_version=CODE_VERSION,
        spec=spec_data(spec),
        jobs=_outcomes(instance, check, admitted, complete),
        premise=premise_of_run(instance, sim.schedule, config, sim.stats),
    )


def _outcomes(instance: Instance, check: Validation, admitted: np.ndarray, complete: np.ndarray) -> list[JobOutcome]:
    """Each job's fate; the per-job values read as Python numbers at once (``tolist``), the same numbers."""
    jobs, ran = instance.jobs, check.samples[: check.checked]
    return [
        JobOutcome(
            job=i,
            arrival=arrival,
            admitted=was_admitted,
            completion=completion if done else None,
            utility=utility,
            workload=workload,
            samples_processed=float(ran[:, i].sum()),  # summed per job as NumPy sums a column
            sensitivity=sensitivity,
        )
        for i, (arrival, was_admitted, done, completion, utility, workload, sensitivity) in enumerate(
            zip(
                jobs.arrival.tolist(),
                admitted.tolist(),
                complete.tolist(),
                check.completion.tolist(),
                check.utility.tolist(),
                jobs.workload.tolist(),
                jobs.sensitivity.tolist(),
                strict=True,
            )
        )
    ]


def _latency(ms: np.ndarray) -> Latency:
    """p50 and p99 of decision times ``ms`` (0 without decisions)."""
    ordered = sorted(ms.tolist())
    p50, p99 = (percentile(ordered, 50), percentile(ordered, 99)) if ordered else (0.0, 0.0)
    return Latency(p50=p50, p99=p99, count=len(ordered))
