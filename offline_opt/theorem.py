"""Theorems 5-6 checked against the certified bound: a PD-ORS run whose premise (Definition 1, ``pdors.premise``)
holds on every admission and whose certified upper ratio (dual bound / ALG) exceeds 6 G_delta / delta epsilon.

The check reads the upper end of the certified interval (docs/COMPETITIVE_RATIO.md, "The theorem, checked"): the
dual bound may be loose, so a failure says the theorem's ratio is not certified on that run and the instance is
saved for a closer look (``pdors opt --instance``), not that the proof is wrong.
"""

from __future__ import annotations

import math
from pathlib import Path

from pdors.instance_io import save
from pdors.model import Instance
from pdors.premise import theorem_violation
from pdors.run import RunResult

from .certified import Certified

DEFAULT_DIR = "results/theorem_violations"


def upper_ratio(certified: Certified, policy: str) -> float | None:
    """dual bound / ALG of ``policy`` (inf when ALG = 0 < bound; None when the policy is not in ``certified``)."""
    r = next((r for r in certified.ratios if r.policy == policy), None)
    if r is None:
        return None
    if r.high is not None:
        return r.high
    return math.inf if certified.bound.bound > 0 else None


def violations(runs: dict[str, RunResult], certified: Certified) -> list[str]:
    """One message per run (schedules with violations left out) that contradicts Theorems 5-6."""
    out = []
    for name, r in runs.items():
        if not r.validation.ok:
            continue
        why = theorem_violation(r.summary.premise, upper_ratio(certified, name))
        if why is not None:
            out.append(f"{name}: {why}")
    return out


def save_offender(instance: Instance, directory: str | Path, name: str) -> Path:
    """Write ``instance`` to ``<directory>/<name>.json`` (replay: ``pdors opt --instance``)."""
    path = Path(directory) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    save(instance, path)
    return path
