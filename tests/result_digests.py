"""The pinned result digests (``tests/data/result_digests.json``) and how to regenerate them.

A fixed set of runs: every registered policy on a few small instances, PD-ORS under both readings of a failed
rounding (``on_rounding_failure``). Each run's schedule digest (``RunSummary.schedule_digest``, over the realised
workers and PSs) is pinned with the ``MODEL_VERSION`` it was computed under. ``tests/test_result_digests.py``
fails when a digest changes while ``pdors.version.MODEL_VERSION`` stays the same.

Regenerate after bumping ``MODEL_VERSION`` (it refuses changed digests under an unchanged version)::

    .venv/bin/python tests/result_digests.py
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pdors import POLICIES, run
from pdors.version import MODEL_VERSION

FILE = Path(__file__).parent / "data" / "result_digests.json"
COMMAND = ".venv/bin/python tests/result_digests.py"
# (machines, jobs, slots, seed): small enough for every policy (Dorm's MILP, Pollux's GA) in seconds
INSTANCES = ((4, 6, 8, 1), (4, 6, 8, 2), (6, 10, 12, 3))
PDORS_READINGS = ("found_solutions", "reject")


@dataclass(frozen=True, kw_only=True)
class PinnedRun:
    policy: str
    machines: int
    jobs: int
    slots: int
    seed: int
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        extra = "".join(f" {k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.policy} H={self.machines} I={self.jobs} T={self.slots} seed={self.seed}{extra}"


def pinned_runs() -> list[PinnedRun]:
    out = []
    for machines, jobs, slots, seed in INSTANCES:
        size = {"machines": machines, "jobs": jobs, "slots": slots, "seed": seed}
        for policy in POLICIES:
            if policy == "pdors":
                out += [PinnedRun(policy=policy, **size, params={"on_rounding_failure": r}) for r in PDORS_READINGS]
            else:
                out.append(PinnedRun(policy=policy, **size))
    return out


def digests() -> dict[str, str]:
    """Each pinned run's schedule digest, computed now."""
    out = {}
    for r in pinned_runs():
        spec = {"policy": r.policy, "machines": r.machines, "jobs": r.jobs, "slots": r.slots, "seed": r.seed}
        out[r.key] = run({**spec, "params": r.params}).summary.schedule_digest
    return out


def stored() -> tuple[int, dict[str, str]]:
    data = json.loads(FILE.read_text())
    return int(data["model_version"]), dict(data["digests"])


def main() -> int:
    now = digests()
    if FILE.exists():
        version, before = stored()
        if version == MODEL_VERSION and before != now:
            changed = sorted(k for k in now.keys() | before.keys() if now.get(k) != before.get(k))
            print(
                f"{len(changed)} digest(s) changed (first: {changed[0]}) under MODEL_VERSION {MODEL_VERSION}: bump "
                "pdors.version.MODEL_VERSION first, then run this again",
                file=sys.stderr,
            )
            return 1
    FILE.write_text(json.dumps({"model_version": MODEL_VERSION, "digests": now}, indent=1) + "\n")
    print(f"wrote {len(now)} digests under MODEL_VERSION {MODEL_VERSION} to {FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
