"""``compare()``: OPT and every registered policy on one instance, and the competitive ratios OPT / ALG.

Every policy in ``pdors.policies.POLICIES`` runs through ``pdors.run.run`` on the same instance; its utility
is the validator's. The best online schedule warm-starts the MILP (CBC). A ratio is reported only against
a proven optimum (``ratio_kind = "opt"``); otherwise ``bound / ALG`` is given as an upper limit
(``ratio_kind = "upper"``). ALG = 0 gives ``ratio = None`` with ``ratio_note`` saying why (x / 0).

OPT is exact only to its gap target (``OptResult.ceiling``): ALG above a proven OPT but within the gap is
"equal to OPT within the gap", ratio 1; ALG above the ceiling (or above an unproven OPT's bound) is
``ratio_kind = "error"``, a bug in the model or the validator, which every command fails on
(:attr:`Comparison.errors`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from pdors.config import JSON
from pdors.model import Instance
from pdors.policies import POLICIES
from pdors.run import RunResult, run
from pdors.schedule import Schedule
from pdors.validator import Validation

from .certified import Certified, certify
from .solve import DEFAULT_GAP, OptResult, ceiling, solve
from .strengthening import Strengthening
from .theorem import violations as theorem_violations


@dataclass(kw_only=True)
class PolicyRatio:
    policy: str
    utility: float
    admitted: int
    completed: int
    violations: int
    ratio: float | None
    ratio_kind: str  # "opt" | "upper" | "none" | "error" (ALG above what OPT allows)
    ratio_note: str = ""
    competitive_bound: float | None = None  # PD-ORS's 6 G_delta / delta max_r(1, ln U^r / L)
    wall_s: float = 0.0
    premise_share: float | None = None  # PD-ORS: share of admissions where Definition 1 holds (pdors.premise)

    def to_dict(self) -> JSON:
        return dict(self.__dict__)


@dataclass(kw_only=True)
class Comparison:
    instance_meta: JSON
    size: dict[str, int]
    opt: OptResult
    policies: list[PolicyRatio] = field(default_factory=list)
    certified: Certified | None = None  # the dual bound and each policy's certified ratio interval
    theorem: list[str] = field(default_factory=list)  # runs contradicting Theorems 5-6 (offline_opt.theorem)

    def ratio(self, policy: str) -> float | None:
        return next(p.ratio for p in self.policies if p.policy == policy)

    @property
    def errors(self) -> list[str]:
        """Policies whose utility OPT's result rules out (each a model or validator bug), and runs contradicting
        Theorems 5-6."""
        out = [f"{p.policy}: {p.ratio_note}" for p in self.policies if p.ratio_kind == "error"]
        return out + (self.certified.errors if self.certified is not None else []) + self.theorem

    def to_dict(self) -> JSON:
        return {
            "instance": self.instance_meta,
            "size": self.size,
            "opt": self.opt.to_dict(),
            "policies": [p.to_dict() for p in self.policies],
            "certified": self.certified.to_dict() if self.certified is not None else None,
            "theorem": self.theorem,
        }


def judge(
    utility: float, objective: float | None, bound: float | None, proven: bool, mip_gap: float, status: str
) -> tuple[float | None, str, str]:
    """(ratio, ratio_kind, ratio_note) of ALG = ``utility`` against an OPT result given by its fields."""
    top = ceiling(objective, bound, proven, mip_gap)
    if top is not None and utility > top:
        what = f"OPT {objective:.10g} (gap target {mip_gap:g})" if proven else f"the bound {bound:.10g}"
        return (
            None,
            "error",
            (f"ALG {utility:.10g} exceeds {what} by more than the gap allows: a bug in the model or the validator"),
        )
    value, kind = (objective, "opt") if proven else (bound, "upper")
    if value is None:
        return None, "none", f"OPT unknown (status {status})"
    if utility <= 0.0:
        return None, "none", ("both 0" if value <= 0.0 else f"{kind} {value:.6g} / ALG 0")
    if kind == "opt" and utility > value:
        return 1.0, kind, f"equal to OPT within the gap (ALG {utility - value:.2g} above it)"
    return value / utility, kind, "" if kind == "opt" else f"OPT not proven ({status}); bound / ALG"


class OptFacts(Protocol):
    """What a ratio reads of OPT: an :class:`OptResult`, or the same facts stored in a file."""

    @property
    def objective(self) -> float | None: ...
    @property
    def bound(self) -> float | None: ...
    @property
    def status(self) -> str: ...
    @property
    def proven_optimal(self) -> bool: ...
    @property
    def mip_gap(self) -> float: ...


def _ratio(opt: OptFacts, utility: float) -> tuple[float | None, str, str]:
    return judge(utility, opt.objective, opt.bound, opt.proven_optimal, opt.mip_gap, opt.status)


def run_policies(
    instance: Instance,
    seed: int = 0,
    workload: JSON | None = None,
    params: dict[str, JSON] | None = None,
    policies: tuple[str, ...] | None = None,
) -> dict[str, RunResult]:
    """Each of ``policies`` (default: all registered) on ``instance``: name -> ``pdors.run.RunResult``."""
    runs = {}
    for name in policies or POLICIES:
        spec = {
            "policy": name,
            "machines": instance.num_machines,
            "jobs": instance.num_jobs,
            "slots": instance.slots,
            "seed": seed,
            "workload": workload or {},
            "params": (params or {}).get(name) or {},
        }
        runs[name] = run(spec, instance)
    return runs


def rate(opt: OptFacts, runs: dict[str, RunResult]) -> list[PolicyRatio]:
    """OPT / ALG of each run."""
    out = []
    for name, r in runs.items():
        s = r.summary
        utility = r.validation.total_utility
        ratio, kind, note = _ratio(opt, utility)
        if not r.validation.ok:
            ratio, kind, note = None, "none", f"policy schedule has {len(r.validation.violations)} violation(s)"
        out.append(
            PolicyRatio(
                policy=name,
                utility=utility,
                admitted=s.admitted,
                completed=s.completed,
                violations=len(s.violations),
                ratio=ratio,
                ratio_kind=kind,
                ratio_note=note,
                competitive_bound=s.policy_stats.get("competitive_bound"),
                wall_s=s.wall_s,
                premise_share=s.premise.premise_share,
            )
        )
    return out


def compare(
    instance: Instance,
    solver: str = "highs",
    time_limit: float = 300.0,
    mip_gap: float = DEFAULT_GAP,
    seed: int = 0,
    workload: JSON | None = None,
    params: dict[str, JSON] | None = None,
    policies: tuple[str, ...] | None = None,
    strengthening: Strengthening = Strengthening(),
) -> Comparison:
    """Run ``policies`` (default: all registered) and OPT on ``instance``. ``params`` maps a policy name to
    its parameters; ``seed`` drives the policies' randomness; ``workload`` is recorded in each run spec."""
    runs = run_policies(instance, seed, workload, params, policies)
    valid = [r for r in runs.values() if r.validation.ok]
    best = max(valid, key=lambda r: r.validation.total_utility, default=None)
    incumbent = (best.simulation.schedule, best.validation.completion) if best is not None else None
    opt = solve(instance, solver, time_limit, mip_gap, strengthening, incumbent)
    out = Comparison(
        instance_meta=dict(instance.meta),
        size={"machines": instance.num_machines, "jobs": instance.num_jobs, "slots": instance.slots},
        opt=opt,
    )
    out.policies = rate(opt, runs)
    found = opt.objective if opt.objective is not None and not opt.violations else None
    out.certified = certify(instance, valid_utilities(runs), found, policy_schedules(runs))
    out.theorem = theorem_violations(runs, out.certified)
    return out


def valid_utilities(runs: dict[str, RunResult]) -> dict[str, float]:
    """Each policy's validated utility, policies whose schedule has a violation left out."""
    return {name: r.validation.total_utility for name, r in runs.items() if r.validation.ok}


def policy_schedules(runs: dict[str, RunResult]) -> dict[str, tuple[Schedule, Validation]]:
    """Each policy's schedule and its validation (the primal schedule's extra columns)."""
    return {name: (r.simulation.schedule, r.validation) for name, r in runs.items()}
