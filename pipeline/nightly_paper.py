"""The nightly's paper-scale part: fresh instances at the paper's size, every policy's certified ratio interval.

The MILP cannot prove OPT at H = 100, I = 100, T = 80, but the dual bound (``offline_opt.dual_bound``) certifies an
upper bound in well under a second, so every policy's OPT / ALG lies in [best known / ALG, bound / ALG]. A night
fails when a policy's validated utility exceeds the bound (a bug in the model, the validator or the bound) or a
schedule violates the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from offline_opt.certified import Certified
    from pdors.model import Instance

# The paper's Fig. 9 / Fig. 12 size at H = 100, in the calibrated regime (workload_scale 0.1: configs/fig09.yaml).
SIZE = {"machines": 100, "jobs": 100, "slots": 80}
WORKLOAD_SCALE = 0.1
WORKLOAD = {"workload_scale": WORKLOAD_SCALE}
SEED_OFFSET = 50  # paper-scale seeds follow the small fresh ones: S + 50 .. (the small part uses S .. S + M - 1)


@dataclass
class PaperScale:
    """One fresh paper-scale instance: the certified intervals (``offline_opt.certified.Certified``), each policy's
    validator violations, and what failed."""

    seed: int
    certified: Certified
    violations: dict[str, int]
    offences: list[str]

    def to_dict(self) -> dict:
        return {
            "seed": self.seed,
            "size": SIZE,
            "workload": WORKLOAD,
            "violations": self.violations,
            "offences": self.offences,
            "certified": self.certified.to_dict(),
        }


def draw(seed: int) -> Instance:
    from pdors.workload import WorkloadConfig, generate

    return generate(WorkloadConfig(workload_scale=WORKLOAD_SCALE), SIZE["machines"], SIZE["jobs"], SIZE["slots"], seed)


def check_one(seed: int) -> PaperScale:
    from offline_opt.certified import certify
    from offline_opt.compare import policy_schedules, run_policies, valid_utilities

    instance = draw(seed)
    runs = run_policies(instance, seed, WORKLOAD)
    violations = {name: len(r.validation.violations) for name, r in runs.items()}
    c = certify(instance, valid_utilities(runs), schedules=policy_schedules(runs))
    offences = [f"{name} schedule has {n} validator violation(s)" for name, n in violations.items() if n]
    if c.primal is not None and c.primal.violations:
        offences.append(f"the primal schedule has {c.primal.violations} validator violation(s)")
    return PaperScale(seed, c, violations, offences + c.errors)


def markdown(results: list[PaperScale]) -> list[str]:
    """The summary's section: per instance the bound, the best known schedule, each policy's interval."""
    if not results:
        return []
    policies = [r.policy for r in results[0].certified.ratios]
    size = ", ".join(f"{k} {v}" for k, v in SIZE.items())
    lines = [
        "",
        f"## Paper-scale instances ({size}, workload_scale {WORKLOAD['workload_scale']}; certified dual bound)",
        "",
        "Each policy's OPT / ALG lies in [best known / ALG, bound / ALG] (proven); a policy above the bound fails.",
        "",
        "| seed | bound | best known | rounds | bound s | " + " | ".join(policies) + " | verdict |",
        "| --- | --- | --- | --- | --- | " + " | ".join("---" for _ in policies) + " | --- |",
    ]
    for r in results:
        c = r.certified
        cells = [
            f"[{x.low:.4f}, {x.high:.4f}]" if x.low is not None and x.high is not None else "n/a" for x in c.ratios
        ]
        b = c.bound
        lines.append(
            f"| {r.seed} | {b.bound:.4f} | {c.opt_lower:.4f} | {b.rounds} | {b.wall_s:.3f} | "
            + " | ".join(cells)
            + f" | {'FAIL: ' + '; '.join(r.offences) if r.offences else 'pass'} |"
        )
    return lines
