"""The paper-scale regression record: PD-ORS's exact utility and schedule digest on pinned instances of the
paper's sizes (``pipeline.nightly.paper.SETTINGS``: H = I = 100, T = 80; Fig. 9's H = 30; Fig. 6's H = 10), under
both readings of a failed rounding (``pdors.on_rounding_failure``).

PD-ORS's decisions are bit-identical on any machine (docs/MODEL.md, ``pdors.portable_math``), so tonight's run
must reproduce the record exactly. Red: a utility more than ``tolerance`` (relative) below its record (a
regression, its size named), or a changed schedule digest with equal or better utility (a change to re-record with
``pdors nightly --record paper`` and a ``MODEL_VERSION`` bump: never passed silently), or a changed instance
(the generator moved). The seeds are a rule that looks at no result: seeds 1 .. N of each setting.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from pdors.config import JSON
from pdors.version import MODEL_VERSION

from . import paper as nightly_paper

READINGS = ("found_solutions", "reject")  # pdors.on_rounding_failure: docs/MODEL.md "Three readings" (a)
SETTINGS = ("paper", "fig09", "fig06")
SEEDS = 2  # pinned seeds per setting: 1 .. SEEDS
TOLERANCE = 1e-9  # relative: the same decisions give the same sum up to its last bits, nothing more


def rule(seeds: int) -> str:
    return (
        f"seeds 1 .. {seeds} of each setting ({', '.join(SETTINGS)}; workload_scale {nightly_paper.WORKLOAD_SCALE}), "
        f"PD-ORS under both readings ({', '.join(READINGS)}); no result is looked at"
    )


def instance_digest(setting: str, seed: int) -> str:
    from pdors.instance_io import to_dict

    blob = json.dumps(to_dict(nightly_paper.draw(seed, setting)), sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """PD-ORS on one pinned instance under one reading."""

    utility: float
    digest: str
    admitted: int


def run_pdors(setting: str, seed: int, reading: str) -> Outcome:
    """PD-ORS under ``reading`` on the instance of ``setting`` and ``seed``, judged by the validator."""
    from pdors.run import run

    size = nightly_paper.SETTINGS[setting]
    spec = {
        "policy": "pdors",
        **size,
        "seed": seed,
        "workload": nightly_paper.WORKLOAD,
        "params": {"on_rounding_failure": reading},
    }
    r = run(spec, nightly_paper.draw(seed, setting))
    return Outcome(utility=r.validation.total_utility, digest=r.summary.schedule_digest, admitted=r.summary.admitted)


def record(seeds: int = SEEDS) -> JSON:
    """The record's ``paper_record`` section: every pinned (setting, seed, reading) with PD-ORS's outcome."""
    rows = []
    for setting in SETTINGS:
        for seed in range(1, seeds + 1):
            digest = instance_digest(setting, seed)
            for reading in READINGS:
                o = run_pdors(setting, seed, reading)
                rows.append(
                    {
                        "setting": setting,
                        "seed": seed,
                        "reading": reading,
                        "instance_digest": digest,
                        "utility": o.utility,
                        "digest": o.digest,
                        "admitted": o.admitted,
                    }
                )
    return {"rule": rule(seeds), "model_version": MODEL_VERSION, "tolerance": TOLERANCE, "rows": rows}


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """One pinned row tonight: ``kind`` is ``pass``, ``regression``, ``changed`` or ``instance``."""

    setting: str
    seed: int
    reading: str
    recorded: float
    utility: float
    kind: str
    reason: str

    @property
    def red(self) -> bool:
        return self.kind != "pass"

    def to_dict(self) -> JSON:
        return dict(self.__dict__)


def judge(row: JSON, now: Outcome, instance: str, model_version: int, tolerance: float) -> Verdict:
    """Tonight's ``now`` against the recorded ``row``. Pure."""
    before = float(row["utility"])
    change = (now.utility - before) / max(abs(before), 1e-12)
    where = f"{row['setting']} seed {row['seed']} {row['reading']}"
    kind, reason = "pass", ""
    if instance != row["instance_digest"]:
        kind = "instance"
        reason = f"{where}: the instance changed (generator): re-record with `pdors nightly --record paper`"
    elif now.utility < before - tolerance * max(1.0, abs(before)):
        kind = "regression"
        reason = (
            f"{where}: PD-ORS utility {now.utility:.4f} is {-change:.2%} below its record {before:.4f} "
            f"(admitted {now.admitted}, recorded {row['admitted']})"
        )
    elif now.digest != row["digest"]:
        kind = "changed"
        reason = (
            f"{where}: schedule digest changed with utility {change:+.2%} ({before:.4f} -> {now.utility:.4f}): "
            f"not a regression, a change to re-record with `pdors nightly --record paper` and a MODEL_VERSION bump "
            f"(recorded at {model_version}, now {MODEL_VERSION})"
        )
    return Verdict(
        setting=row["setting"],
        seed=row["seed"],
        reading=row["reading"],
        recorded=before,
        utility=now.utility,
        kind=kind,
        reason=reason,
    )


def check(section: JSON) -> list[Verdict]:
    """Re-run PD-ORS on every pinned row of the record's ``paper_record`` section."""
    out = []
    digests: dict[tuple[str, int], str] = {}
    for row in section["rows"]:
        key = (row["setting"], row["seed"])
        if key not in digests:
            digests[key] = instance_digest(*key)
        now = run_pdors(row["setting"], row["seed"], row["reading"])
        out.append(judge(row, now, digests[key], section["model_version"], section["tolerance"]))
    return out
