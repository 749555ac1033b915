"""Memory estimate of one run, checked before anything starts, and the limit it is checked against.

A run's peak RSS is modelled, the same for every policy, as

    base + per_cell x H I T + per_slot x T + per_job_slot x T I + per_resource_slot x T H R + per_resource x R (H + I)

``base``: the interpreter, NumPy and the model's imports. ``H I T``: the schedule (workers and servers per slot,
job and machine) and the validator's work arrays over it. ``T``: PD-ORS's plan of one job over the slots left
(its work arrays, freed after the decision). ``T I`` and ``T H R``: the per-slot arrays of the simulator,
validator, summary and PD-ORS's plans, one row per slot whatever the jobs' sizes: [T, I] (samples,
locality, restarts, the validator's per-job sums) and [T, H, R] (resources reserved, in use, PD-ORS's replayed
prices), which dominate when T is long and I, H small. ``R (H + I)``: the instance's capacities and demands,
read from an instance file as JSON (generated instances have R = 4). The rule that fits the coefficients to
measured peak RSS (:func:`fit`), stated before measuring: *each measured size belongs to the family of one term
(:data:`TERMS`, in that order; :data:`SIZES`); base is the largest peak in its family; then, in that order, each
term's coefficient is the largest (peak - the estimate of the terms before it) / the term's count over its
family, at least 0*. As every term is >= 0, the estimate is never below a size it was fitted on. ``python -m
pipeline.spec.sizing`` measures real runs, each in a fresh process, and fits; the figures behind the constants are in
docs/PIPELINE.md.

The default limit per run is derived from the machine: half of its available memory (the rest for the
driver, Ray and everything else running), shared by the runs that execute at once.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

MACHINE_SHARE = 0.5  # of the available memory, for runs; the rest for the driver, Ray and other work
DEFAULT_MAX_TASKS = 1_000_000  # tasks one sweep may plan (``pdors sweep run --max-tasks`` raises it)
# --max-tasks itself: a plan is expanded in memory (about 1 KB per task), so 5,000,000 tasks are about 5 GB
MAX_TASKS_CEILING = 5_000_000
FALLBACK_RUN_GB = 1.0  # per-run limit where the available memory is unknown (not Linux)
PAPER_LARGEST = (100, 100, 80)  # H, I, T of the paper's largest run
GENERATED_RESOURCES = 4  # R of a generated instance: len(pdors.model.RESOURCES) (not imported: `--help` needs no NumPy)
# the model's terms, in the order fit() fits them
TERMS = ("base", "cell", "slot", "job_slot", "resource_slot", "resource")


@dataclass(frozen=True, kw_only=True)
class Size:
    """A measured size and the term whose family it belongs to (:func:`fit`)."""

    term: str
    machines: int
    jobs: int
    slots: int
    resources: int = GENERATED_RESOURCES


# cell: H I T dominates; slot: a long horizon with one job and one machine; job_slot: long horizons with one
# machine; resource_slot: many resources over a longer horizon, resource: over a short one (an instance file)
SIZES = [
    Size(term="base", machines=10, jobs=10, slots=10),
    *(Size(term="cell", machines=h, jobs=i, slots=t) for h, i, t in [(300, 300, 80), (100, 1000, 80), (1000, 100, 80)]),
    Size(term="cell", machines=100, jobs=100, slots=800),
    Size(term="slot", machines=1, jobs=1, slots=200_000),
    Size(term="job_slot", machines=1, jobs=10, slots=50_000),
    Size(term="job_slot", machines=1, jobs=100, slots=20_000),
    Size(term="resource_slot", machines=1, jobs=2, slots=1_000, resources=5_000),
    Size(term="resource", machines=1, jobs=1, slots=10, resources=50_000),
]


@dataclass(frozen=True, kw_only=True)
class Model:
    """Peak RSS in bytes: ``base + per_cell H I T + per_slot T + per_job_slot T I + per_resource_slot T H R +
    per_resource R (H + I)``."""

    base: float
    per_cell: float
    per_slot: float
    per_job_slot: float
    per_resource_slot: float
    per_resource: float

    def bytes(self, machines: int, jobs: int, slots: int, resources: int = GENERATED_RESOURCES) -> int:
        return int(
            self.base
            + self.per_cell * machines * jobs * slots
            + self.per_slot * slots
            + self.per_job_slot * slots * jobs
            + self.per_resource_slot * slots * machines * resources
            + self.per_resource * resources * (machines + jobs)
        )


# fitted by fit() on SIZES (python -m pipeline.spec.sizing, docs/PIPELINE.md), rounded up
SHIPPED = Model(
    base=79.05 * 2**20, per_cell=5.59, per_slot=132.61, per_job_slot=84.27, per_resource_slot=20.39, per_resource=868.61
)


def run_bytes(machines: int, jobs: int, slots: int, resources: int = GENERATED_RESOURCES) -> int:
    """Estimated peak RSS of one run of this size (any policy)."""
    return SHIPPED.bytes(machines, jobs, slots, resources)


@dataclass(frozen=True, kw_only=True)
class Sample:
    policy: str
    size: Size
    peak_bytes: int

    def count(self, term: str) -> int:
        """How many of ``term``'s units this size has (1 for base)."""
        h, i, t, r = self.size.machines, self.size.jobs, self.size.slots, self.size.resources
        return {
            "base": 1,
            "cell": h * i * t,
            "slot": t,
            "job_slot": t * i,
            "resource_slot": t * h * r,
            "resource": r * (h + i),
        }[term]


def instance_file(size: Size, directory: Path, seed: int = 1) -> Path:
    """A generated instance of ``size`` with resources beyond the generated ones added (capacity 1, demanded by
    no job), as JSON in ``directory``."""
    from pdors import instance_io
    from pdors.workload import WorkloadConfig, generate

    data = instance_io.to_dict(generate(WorkloadConfig(), size.machines, size.jobs, size.slots, seed))
    extra = size.resources - len(data["resources"])
    data["resources"] += [f"r{k}" for k in range(extra)]
    data["capacity"] = [row + [1.0] * extra for row in data["capacity"]]
    for name in ("worker_demand", "ps_demand"):
        data["jobs"][name] = [row + [0] * extra for row in data["jobs"][name]]
    path = directory / f"instance-{size.machines}-{size.jobs}-{size.slots}-{size.resources}.json"
    path.write_text(json.dumps(data))
    return path


def measure(policy: str, size: Size, seed: int = 1) -> Sample:
    """Peak RSS of ``pdors simulate`` (one run, simulated and validated) in a fresh process: what a user runs,
    with every import of the command line, so a little above a sweep task's own share. A size with other than
    the generated resources runs from an instance file (:func:`instance_file`)."""
    pdors = Path(sys.executable).parent / "pdors"
    argv = [str(pdors), "simulate", "--policy", policy, "--seed", str(seed), "--max-run-memory", "1000"]
    with tempfile.TemporaryDirectory(prefix="pdors-sizing-") as tmp:
        if size.resources != GENERATED_RESOURCES:
            argv += ["--instance", str(instance_file(size, Path(tmp), seed))]
        else:
            argv += ["--machines", str(size.machines), "--jobs", str(size.jobs), "--slots", str(size.slots)]
        # Through a small intermediary: Linux carries a parent's resident size at fork into the child's maximum,
        # so a child forked straight from a large process (a test session) would report at least the parent's.
        done = subprocess.run([sys.executable, "-c", _PEAK_PROBE, *argv], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr[-500:]}")
    return Sample(policy=policy, size=size, peak_bytes=int(done.stdout.split()[-1]) * 1024)  # ru_maxrss: KiB


_PEAK_PROBE = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).returncode\n"
    "sys.exit(code) if code else print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def fit(samples: Sequence[Sample]) -> Model:
    """The model by the rule of the module's docstring; needs a sample in the base family."""
    coefficient: dict[str, float] = {}
    for term in TERMS:
        family = [s for s in samples if s.size.term == term]
        before = [t for t in TERMS if t in coefficient]
        rests = [(s.peak_bytes - sum(coefficient[t] * s.count(t) for t in before)) / s.count(term) for s in family]
        coefficient[term] = max([0.0, *rests])
    return Model(
        base=coefficient["base"],
        per_cell=coefficient["cell"],
        per_slot=coefficient["slot"],
        per_job_slot=coefficient["job_slot"],
        per_resource_slot=coefficient["resource_slot"],
        per_resource=coefficient["resource"],
    )


def available_bytes() -> int | None:
    """MemAvailable of this machine (Linux), else None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def default_limit_bytes(parallel: int) -> float:
    """The per-run limit when none is given: ``MACHINE_SHARE`` of the available memory over ``parallel`` runs."""
    free = available_bytes()
    return FALLBACK_RUN_GB * 2**30 if free is None else MACHINE_SHARE * free / max(parallel, 1)


def memory_problem(
    machines: int,
    jobs: int,
    slots: int,
    limit_gb: float | None,
    parallel: int = 1,
    resources: int = GENERATED_RESOURCES,
) -> str | None:
    """Why a run of this size is refused, or None: over ``limit_gb`` per run (default
    :func:`default_limit_bytes` for ``parallel`` runs at once)."""
    need = run_bytes(machines, jobs, slots, resources)
    limit = default_limit_bytes(parallel) if limit_gb is None else limit_gb * 2**30
    if need <= limit:
        return None
    origin = (
        f"--max-run-memory {limit_gb:g}"
        if limit_gb is not None
        else f"{MACHINE_SHARE:.0%} of the {(available_bytes() or 0) / 2**30:.1f} GB available over {parallel} "
        f"run(s) at once; --max-run-memory GB sets it"
    )
    shape = f"H={machines} I={jobs} T={slots}" + (f" R={resources}" if resources != GENERATED_RESOURCES else "")
    return (
        f"{shape} needs about {need / 2**30:.2f} GB per run, over the limit of "
        f"{limit / 2**30:.2f} GB ({origin}; the paper's largest run needs about "
        f"{run_bytes(*PAPER_LARGEST) / 2**30:.2f} GB)"
    )


def main(policies: Sequence[str] = ("pdors", "fifo")) -> None:
    """Measure every size of ``SIZES`` under each policy, print each against the current estimate, and the fit."""
    samples = []
    for policy in policies:
        for size in SIZES:
            s = measure(policy, size)
            samples.append(s)
            h, i, t, r = size.machines, size.jobs, size.slots, size.resources
            print(
                f"{policy:<6} {size.term:<8} H={h:<5} I={i:<5} T={t:<6} R={r:<6} peak {s.peak_bytes / 2**20:7.1f} "
                f"MiB, estimate {run_bytes(h, i, t, r) / 2**20:7.1f} MiB (x{run_bytes(h, i, t, r) / s.peak_bytes:.2f})",
                flush=True,
            )
    m = fit(samples)
    print(
        f"fit: base {m.base / 2**20:.1f} MiB, {m.per_cell:.2f} B per cell, {m.per_slot:.2f} B x T, "
        f"{m.per_job_slot:.2f} B x T I, "
        f"{m.per_resource_slot:.2f} B x T H R, {m.per_resource:.2f} B x R (H + I)"
    )
    for s in samples:
        print(f"  {s.policy:<6} {s.size}: peak / fitted estimate {s.peak_bytes / m.bytes(**_args(s.size)):.2f}")


def _args(size: Size) -> dict[str, int]:
    return {"machines": size.machines, "jobs": size.jobs, "slots": size.slots, "resources": size.resources}


if __name__ == "__main__":
    main(sys.argv[1:] or ("pdors", "fifo"))
