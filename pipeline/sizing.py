"""Memory estimate of one run, checked before anything starts, and the limit it is checked against.

A run holds its schedule (workers and servers per slot, job and machine, [T, I, H]) and the validator's work
arrays of the same shape, over a fixed base (the interpreter, NumPy, the model's imports), so its peak RSS is
modelled as ``base + per_cell x H x I x T``, the same for every policy. The rule that fits the two coefficients
to measured peak RSS (:func:`fit`), stated before measuring: *base is the largest peak at the smallest measured
size; per_cell is the largest (peak - base) / cells over the other sizes*, so the estimate is never below a
size it was fitted on. ``python -m pipeline.sizing`` measures real runs, each in a fresh process, and fits;
the figures behind the constants are in docs/PIPELINE.md.

The default limit per run is derived from the machine: half of its available memory (the rest for the
driver, Ray and everything else running), shared by the runs that execute at once.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

BASE_BYTES = 79.6 * 2**20  # fitted by fit() on the sizes of SIZES (python -m pipeline.sizing, docs/PIPELINE.md)
BYTES_PER_CELL = 13.05
MACHINE_SHARE = 0.5  # of the available memory, for runs; the rest for the driver, Ray and other work
DEFAULT_MAX_TASKS = 1_000_000  # tasks one sweep may plan (``pdors sweep run --max-tasks`` raises it)
# --max-tasks itself: a plan is expanded in memory (about 1 KB per task), so 5,000,000 tasks are about 5 GB
MAX_TASKS_CEILING = 5_000_000
FALLBACK_RUN_GB = 1.0  # per-run limit where the available memory is unknown (not Linux)
PAPER_LARGEST = (100, 100, 80)  # H, I, T of the paper's largest run
SIZES = [(10, 10, 10), (100, 100, 80), (300, 300, 80), (100, 1000, 80), (1000, 100, 80), (100, 100, 800)]


def run_bytes(machines: int, jobs: int, slots: int) -> int:
    """Estimated peak RSS of one run of this size (any policy)."""
    return int(BASE_BYTES + BYTES_PER_CELL * machines * jobs * slots)


@dataclass(frozen=True, kw_only=True)
class Sample:
    policy: str
    machines: int
    jobs: int
    slots: int
    peak_bytes: int

    @property
    def cells(self) -> int:
        return self.machines * self.jobs * self.slots


def measure(policy: str, machines: int, jobs: int, slots: int, seed: int = 1) -> Sample:
    """Peak RSS of ``pdors simulate`` (one run, simulated and validated) in a fresh process: what a user runs,
    with every import of the command line, so a little above a sweep task's own share."""
    pdors = Path(sys.executable).parent / "pdors"
    argv = [str(pdors), "simulate", "--policy", policy, "--machines", str(machines), "--jobs", str(jobs)]
    argv += ["--slots", str(slots), "--seed", str(seed), "--max-run-memory", "1000"]
    # Through a small intermediary: Linux carries a parent's resident size at fork into the child's maximum, so
    # a child forked straight from a large process (a test session) would report at least the parent's size.
    done = subprocess.run([sys.executable, "-c", _PEAK_PROBE, *argv], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr[-500:]}")
    return Sample(
        policy=policy, machines=machines, jobs=jobs, slots=slots, peak_bytes=int(done.stdout.split()[-1]) * 1024
    )  # ru_maxrss: KiB on Linux


_PEAK_PROBE = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).returncode\n"
    "sys.exit(code) if code else print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def fit(samples: Sequence[Sample]) -> tuple[float, float]:
    """(base bytes, bytes per cell) by the rule of the module's docstring; needs two sizes at least."""
    smallest = min(s.cells for s in samples)
    base = max(s.peak_bytes for s in samples if s.cells == smallest)
    per_cell = max((s.peak_bytes - base) / s.cells for s in samples if s.cells > smallest)
    return float(base), max(per_cell, 0.0)


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


def memory_problem(machines: int, jobs: int, slots: int, limit_gb: float | None, parallel: int = 1) -> str | None:
    """Why a run of this size is refused, or None: over ``limit_gb`` per run (default
    :func:`default_limit_bytes` for ``parallel`` runs at once)."""
    need = run_bytes(machines, jobs, slots)
    limit = default_limit_bytes(parallel) if limit_gb is None else limit_gb * 2**30
    if need <= limit:
        return None
    origin = (
        f"--max-run-memory {limit_gb:g}"
        if limit_gb is not None
        else f"{MACHINE_SHARE:.0%} of the {(available_bytes() or 0) / 2**30:.1f} GB available over {parallel} "
        f"run(s) at once; --max-run-memory GB sets it"
    )
    return (
        f"H={machines} I={jobs} T={slots} needs about {need / 2**30:.2f} GB per run, over the limit of "
        f"{limit / 2**30:.2f} GB ({origin}; the paper's largest run needs about "
        f"{run_bytes(*PAPER_LARGEST) / 2**30:.2f} GB)"
    )


def main(policies: Sequence[str] = ("pdors", "fifo")) -> None:
    """Measure every size of ``SIZES`` under each policy, print each against the current estimate, and the fit."""
    samples = []
    for policy in policies:
        for h, i, t in SIZES:
            s = measure(policy, h, i, t)
            samples.append(s)
            print(
                f"{policy:<6} H={h:<5} I={i:<5} T={t:<4} peak {s.peak_bytes / 2**20:7.1f} MiB, estimate "
                f"{run_bytes(h, i, t) / 2**20:7.1f} MiB (x{run_bytes(h, i, t) / s.peak_bytes:.2f})",
                flush=True,
            )
    base, per_cell = fit(samples)
    print(f"fit: base {base / 2**20:.1f} MiB, {per_cell:.2f} bytes per cell")


if __name__ == "__main__":
    main(sys.argv[1:] or ("pdors", "fifo"))
