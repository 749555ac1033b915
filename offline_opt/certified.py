"""Certified ratio intervals: every policy's OPT / ALG placed in [OPT_lower / ALG, bound / ALG].

``bound`` is the dual bound (:mod:`offline_opt.dual_bound`, >= OPT, proven); ``OPT_lower`` the best validated
schedule known: the MILP's incumbent where a solve ran, the primal schedule built from the bound
(:mod:`offline_opt.primal`) and every policy's own schedule (OPT is at least each).
A policy above the bound is a bug in the model, the validator or the bound (``error``), as above a proven OPT.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pdors.config import JSON
from pdors.model import Instance
from pdors.schedule import Schedule
from pdors.validator import Validation

from .dual_bound import DualBound, dual_bound
from .primal import Primal, primal


@dataclass(frozen=True, kw_only=True)
class RatioInterval:
    policy: str
    utility: float
    low: float | None  # OPT_lower / ALG (None when ALG = 0)
    high: float | None  # bound / ALG
    error: bool  # ALG above the bound

    def to_dict(self) -> JSON:
        return dict(self.__dict__)


@dataclass(frozen=True, kw_only=True)
class Certified:
    bound: DualBound
    opt_lower: float
    opt_lower_source: str  # "milp", "primal" or "policy <name>" (or "none": nothing completes)
    ratios: list[RatioInterval] = field(default_factory=list)
    primal: Primal | None = None  # the feasible schedule built from the bound (its schedule: OPT_lower's witness)

    @property
    def errors(self) -> list[str]:
        return [
            f"{r.policy}: utility {r.utility:.10g} exceeds the certified bound {self.bound.bound:.10g}: a bug in the "
            "model, the validator or the bound"
            for r in self.ratios
            if r.error
        ]

    def to_dict(self) -> JSON:
        return {
            **self.bound.to_dict(),
            "opt_lower": self.opt_lower,
            "opt_lower_source": self.opt_lower_source,
            "ratios": [r.to_dict() for r in self.ratios],
            "primal": self.primal.to_dict() if self.primal is not None else None,
        }


def intervals(
    bound: DualBound, utilities: dict[str, float], incumbent: float | None = None, built: Primal | None = None
) -> Certified:
    """``utilities``: each policy's validated utility (schedules with violations left out by the caller);
    ``incumbent``: the validated utility of the MILP's schedule, if one was found; ``built``: the primal schedule."""
    lower, source = (incumbent, "milp") if incumbent is not None else (0.0, "none")
    if built is not None and built.source == "rmp" and built.utility > lower:
        lower, source = built.utility, "primal"
    for name, u in utilities.items():
        if u > lower:
            lower, source = u, f"policy {name}"
    ratios = [
        RatioInterval(
            policy=name,
            utility=u,
            low=lower / u if u > 0 else None,
            high=bound.bound / u if u > 0 else None,
            error=u > bound.bound,
        )
        for name, u in utilities.items()
    ]
    return Certified(bound=bound, opt_lower=lower, opt_lower_source=source, ratios=ratios, primal=built)


def certify(
    instance: Instance,
    utilities: dict[str, float],
    incumbent: float | None = None,
    schedules: dict[str, tuple[Schedule, Validation]] | None = None,
) -> Certified:
    """The bound, the primal schedule (from the bound and the policies' ``schedules``: name -> (schedule,
    validation)) and every policy's interval."""
    bound = dual_bound(instance)
    return intervals(bound, utilities, incumbent, primal(instance, bound, schedules))
