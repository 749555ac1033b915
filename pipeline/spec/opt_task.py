"""The OPT task of a sweep: the one adapter between the sweep and the offline optimum (``offline_opt.solve``).

Contract assumed of ``offline_opt``: ``solve(instance, solver=, time_limit=, mip_gap=)`` returns a result with
``to_dict()``; its ``objective`` is the OPT utility when ``proven_optimal``, ``status`` the solver status.
The whole dict is kept (``opt.result``).
"""

from __future__ import annotations

from pdors.config import JSON, build
from pdors.run import RunSpec, make_instance


def limit_problems(time_limit: float, mip_gap: float) -> list[str]:
    """What is wrong with an ``opt`` block's time limit and gap target (``offline_opt``'s own rule)."""
    from offline_opt.solve import limit_problems

    return limit_problems(time_limit, mip_gap)


def ceiling(result: JSON) -> float | None:
    """The most utility a policy may have on the instance of a recorded OPT ``result`` (``to_dict()``
    form): the least of the MILP's ceiling (``OptResult.ceiling``) and the certified dual bound; above it is a bug in
    the model, the validator or the bound."""
    from offline_opt.solve import ceiling

    tops = [
        ceiling(
            result.get("objective"),
            result.get("bound"),
            bool(result.get("proven_optimal")),
            float(result.get("mip_gap", 0.0)),
        ),
        certified_bound(result),
    ]
    return min((t for t in tops if t is not None), default=None)


def certified_bound(result: JSON) -> float | None:
    """The certified upper bound on OPT (``offline_opt.dual_bound``) a recorded OPT ``result`` carries, if any."""
    value = (result.get("dual_bound") or {}).get("bound")
    return None if value is None else float(value)


def solve(spec: JSON) -> JSON:
    """``spec``: an OPT task's spec (instance fields, seed, ``opt`` settings) -> the result dict; ``primal`` is the
    feasible schedule built from the dual bound (``offline_opt.primal``; its utility is a lower bound on OPT)."""
    import offline_opt
    from offline_opt.dual_bound import dual_bound
    from offline_opt.primal import primal

    settings = spec["opt"]
    instance = make_instance(build(RunSpec, {k: v for k, v in spec.items() if k != "opt"}))
    b = dual_bound(instance)
    bound, built = b.to_dict(), primal(instance, b).to_dict()
    if settings.get("method", "milp") == "bound":
        return {
            "method": "bound",
            "status": "bound",
            "proven_optimal": False,
            "objective": None,
            "bound": bound["bound"],
            "mip_gap": 0.0,
            "dual_bound": bound,
            "primal": built,
        }
    result = offline_opt.solve(
        instance, solver=settings["solver"], time_limit=settings["time_limit"], mip_gap=settings["mip_gap"]
    ).to_dict()
    return {**result, "method": "milp", "dual_bound": bound, "primal": built}


def primal_utility(result: JSON) -> float | None:
    """The validated utility of the primal schedule a recorded OPT ``result`` carries, if one was built."""
    p = result.get("primal") or {}
    ok = p.get("source") == "rmp" and p.get("violations") == 0
    return float(p["utility"]) if ok else None
