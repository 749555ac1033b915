"""Workload profiles for offline-optimum checks.

The generator's jobs (paper Section V settings) need roughly 10^7 samples each: even alone on a 4-machine cluster a job
needs tens of slots, so at I = 10, T = 10 nothing completes and every ratio is 0/0. The profiles shrink the
workload (``workload_scale``, applied to K_i) and keep every other Section V distribution.

Criterion for ``small_profile`` (the paper's Fig. 10 size, H = 4, I = 10, T = 10): the offline optimum
admits between 30% and 90% of the jobs on every seed, so capacity binds (OPT must reject jobs) yet most jobs
can run. Measured on seeds 1-20 with ``pdors study opt ratio`` (docs/COMPETITIVE_RATIO.md): at
``workload_scale = 0.02`` the best schedule HiGHS found admits 4-9 of the 10 jobs (40-90%) on every seed
(15 of the 20 proven optimal within 300 s, 17 with limits up to 2700 s).

``tiny_profile`` serves the exhaustive enumerator (I <= 3, T <= 3, H <= 2): smaller machines
(``capacity_factor`` 4, a few workers per machine) and batch sizes F in [1, 8] keep the number of feasible
per-slot allocations small enough to list, while jobs still need 1-3 slots of a machine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from pdors.model import Instance
from pdors.workload import WorkloadConfig


class InstanceSize(NamedTuple):
    machines: int
    jobs: int
    slots: int


SMALL_SIZE = InstanceSize(machines=4, jobs=10, slots=10)  # the paper's Fig. 10 size


def small_profile() -> WorkloadConfig:
    """The ratio-check profile at I = 10, T = 10, H = 4 (see the module docstring for the criterion)."""
    return WorkloadConfig(workload_scale=0.02)


def tiny_profile() -> WorkloadConfig:
    """Instances the enumerator can solve exhaustively (I <= 3, T <= 3, H <= 2)."""
    return WorkloadConfig(workload_scale=0.0007, capacity_factor=4.0, batch=(1, 8))


@dataclass(frozen=True, kw_only=True)
class InstanceProfile:
    """A named instance family: size (H, I, T) and workload. ``draw(seed)`` is the instance of a seed."""

    name: str
    machines: int
    jobs: int
    slots: int
    workload: Callable[[], WorkloadConfig]

    def draw(self, seed: int) -> Instance:
        from pdors.workload import generate

        return generate(self.workload(), self.machines, self.jobs, self.slots, seed)

    @property
    def size(self) -> dict[str, int]:
        return {"machines": self.machines, "jobs": self.jobs, "slots": self.slots}


# Instance families a check can name (``pdors nightly --profile``); a new load gets a new name, never a changed one.
INSTANCE_PROFILES: dict[str, InstanceProfile] = {
    "small": InstanceProfile(name="small", **SMALL_SIZE._asdict(), workload=small_profile)
}
