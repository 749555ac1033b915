"""Memory estimate of one run, checked before anything starts.

A run holds its schedule (workers and servers per slot, job and machine, [T, I, H]) and the validator's work
arrays of the same shape: measured peak RSS of ``pdors simulate`` (FIFO and PD-ORS, T from 400 to 1600, I from
800 to 3200) grows by 28-30 bytes per cell T x I x H over a base of about 120 MB (docs/PIPELINE.md).
"""

from __future__ import annotations

BYTES_PER_CELL = 32
BASE_BYTES = 150 * 2**20
DEFAULT_RUN_GB = 1.0  # the paper's largest run (T = 80, I = 100, H = 100) needs about 0.18 GB


def run_bytes(machines: int, jobs: int, slots: int) -> int:
    return BASE_BYTES + BYTES_PER_CELL * machines * jobs * slots


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


def memory_problem(machines: int, jobs: int, slots: int, limit_gb: float | None, parallel: int = 1) -> str | None:
    """Why a run of this size is refused, or None: over ``limit_gb`` (default ``DEFAULT_RUN_GB``) per run, or
    ``parallel`` such runs over half this machine's available memory."""
    need = run_bytes(machines, jobs, slots)
    limit = (DEFAULT_RUN_GB if limit_gb is None else limit_gb) * 2**30
    size = f"H={machines} I={jobs} T={slots} needs about {need / 2**30:.2f} GB per run"
    if need > limit:
        return (
            f"{size}, over the limit of {limit / 2**30:.2f} GB (--max-run-memory GB raises it; the paper's "
            f"largest run needs about {run_bytes(100, 100, 80) / 2**30:.2f} GB)"
        )
    free = available_bytes()
    if free is not None and need * parallel > free / 2:
        return (
            f"{size}, {parallel} at once need {need * parallel / 2**30:.1f} GB, over half of the "
            f"{free / 2**30:.1f} GB available (lower --max-parallel or --num-cpus)"
        )
    return None
