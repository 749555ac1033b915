"""The nightly's paper-scale part: fresh instances in the paper's regime, every policy's certified ratio interval,
and PD-ORS's competitive-ratio premise and theorem (``pdors.premise``, ``offline_opt.theorem``).

Two settings, both calibrated (workload_scale 0.1): ``paper`` (H = 100, I = 100, T = 80) and ``fig09`` (the paper's
Fig. 9: H = 30, I = 100, T = 80). The MILP cannot prove OPT there, but the dual bound (``offline_opt.dual_bound``)
certifies an upper bound in about a second, so every policy's OPT / ALG lies in [best known / ALG, bound / ALG].
A night fails when a policy's validated utility exceeds the bound (a bug in the model, the validator or the bound),
a schedule violates the model, or PD-ORS contradicts Theorems 5-6 (Definition 1 holds on all its admissions and
bound / ALG exceeds 6 G_delta / delta epsilon); a failing instance is saved under ``offenders/``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pdors.config import JSON

if TYPE_CHECKING:
    from offline_opt.certified import Certified
    from pdors.model import Instance
    from pdors.premise import Premise

# setting -> instance size: the paper's H = 100, the Fig. 9 and Fig. 6 sizes, all in the calibrated regime
# (workload_scale 0.1: configs/fig09.yaml)
SETTINGS = {
    "paper": {"machines": 100, "jobs": 100, "slots": 80},
    "fig09": {"machines": 30, "jobs": 100, "slots": 80},
    "fig06": {"machines": 10, "jobs": 50, "slots": 20},  # Fig. 6's smallest H (configs/fig06.yaml): pinned only
}
SIZE = SETTINGS["paper"]
WORKLOAD_SCALE = 0.1
WORKLOAD = {"workload_scale": WORKLOAD_SCALE}
SEED_OFFSET = 50  # paper-scale seeds follow the small fresh ones: S + 50 .. (the small part uses S .. S + M - 1)
FIG09_SEED_OFFSET = 70  # Fig. 9 seeds: S + 70 ..


@dataclass(kw_only=True)
class PaperScale:
    """One fresh instance of a setting: the certified intervals (``offline_opt.certified.Certified``), each policy's
    validator violations, PD-ORS's premise (``pdors.premise.Premise``), what failed and where it was saved."""

    seed: int
    certified: Certified
    violations: dict[str, int]
    offences: list[str]
    premise: Premise | None = None
    setting: str = "paper"
    saved: Path | None = None
    theorem: list[str] = field(default_factory=list)

    def to_dict(self) -> JSON:
        return {
            "seed": self.seed,
            "setting": self.setting,
            "size": SETTINGS[self.setting],
            "workload": WORKLOAD,
            "violations": self.violations,
            "offences": self.offences,
            "premise": asdict(self.premise) if self.premise is not None else None,
            "saved": str(self.saved) if self.saved else None,
            "certified": self.certified.to_dict(),
        }


def draw(seed: int, setting: str = "paper") -> Instance:
    from pdors.workload import WorkloadConfig, generate

    size = SETTINGS[setting]
    return generate(WorkloadConfig(workload_scale=WORKLOAD_SCALE), size["machines"], size["jobs"], size["slots"], seed)


def check_one(seed: int, setting: str = "paper", offenders: Path | None = None) -> PaperScale:
    """Every policy on a fresh instance of ``setting``; a failing instance is saved under ``offenders``."""
    from offline_opt.certified import certify
    from offline_opt.compare import policy_schedules, run_policies, valid_utilities
    from offline_opt.theorem import save_offender
    from offline_opt.theorem import violations as theorem_violations

    instance = draw(seed, setting)
    runs = run_policies(instance, seed, WORKLOAD)
    violations = {name: len(r.validation.violations) for name, r in runs.items()}
    c = certify(instance, valid_utilities(runs), schedules=policy_schedules(runs))
    theorem = theorem_violations(runs, c)
    offences = [f"{name} schedule has {n} validator violation(s)" for name, n in violations.items() if n]
    if c.primal is not None and c.primal.violations:
        offences.append(f"the primal schedule has {c.primal.violations} validator violation(s)")
    premise = runs["pdors"].summary.premise if "pdors" in runs else None
    out = PaperScale(
        seed=seed,
        certified=c,
        violations=violations,
        offences=offences + c.errors + theorem,
        premise=premise,
        setting=setting,
        theorem=theorem,
    )
    if out.offences and offenders is not None:
        out.saved = save_offender(instance, offenders, f"{setting}-seed-{seed}")
    return out


def markdown(results: list[PaperScale]) -> list[str]:
    """The summary's section: per instance the bound, the best known schedule, each policy's interval, PD-ORS's
    premise share and theorem bound."""
    if not results:
        return []
    policies = [r.policy for r in results[0].certified.ratios]
    lines = [
        "",
        f"## Paper-scale instances (workload_scale {WORKLOAD['workload_scale']}; certified dual bound)",
        "",
        "Each policy's OPT / ALG lies in [best known / ALG, bound / ALG] (proven); a policy above the bound fails. "
        "Premise: the share of PD-ORS's admissions on which the paper's Definition 1 holds (Theorems 5-6 apply to "
        "the run only at 100%), with the largest share of a machine's capacity one job takes in one slot; theorem "
        "bound: 6 G_delta / delta max_r(1, ln U^r / L) (Theorem 5: G_delta <= 1; 6: G_delta > 1); a run whose "
        "premise holds and whose bound / ALG exceeds it fails.",
        "",
        "| setting | seed | H | bound | best known | rounds | bound s | "
        + " | ".join(policies)
        + " | premise share | job cell share max / median | theorem bound | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | "
        + " | ".join("---" for _ in policies)
        + " | --- | --- | --- | --- |",
    ]
    for r in results:
        c = r.certified
        cells = [
            f"[{x.low:.4f}, {x.high:.4f}]" if x.low is not None and x.high is not None else "n/a" for x in c.ratios
        ]
        b, p = c.bound, r.premise
        premise = [
            f"{p.premise_share:.0%} of {p.admissions}" if p and p.premise_share is not None else "n/a",
            f"{p.cell_share_max:.3f} / {p.cell_share_median:.3f}"
            if p and p.cell_share_max is not None and p.cell_share_median is not None
            else "n/a",
            f"{p.competitive_bound:.1f} (Thm {p.theorem})" if p and p.competitive_bound is not None else "n/a",
        ]
        lines.append(
            f"| {r.setting} | {r.seed} | {SETTINGS[r.setting]['machines']} | {b.bound:.4f} | {c.opt_lower:.4f} | "
            f"{b.rounds} | {b.wall_s:.3f} | "
            + " | ".join(cells + premise)
            + f" | {'FAIL: ' + '; '.join(r.offences) if r.offences else 'pass'} |"
        )
    return lines
