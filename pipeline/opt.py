"""The one adapter between the sweep and the offline optimum (``offline_opt.solve``).

Contract assumed of ``offline_opt``: ``solve(instance, solver=, time_limit=, mip_gap=)`` returns a result with
``to_dict()``; its ``objective`` is the OPT utility when ``proven_optimal``, ``status`` the solver status.
The whole dict is kept (``opt.result``).
"""

from __future__ import annotations

from pdors.config import build
from pdors.run import RunSpec, make_instance


def limit_problems(time_limit: float, mip_gap: float) -> list[str]:
    """What is wrong with an ``opt`` block's time limit and gap target (``offline_opt``'s own rule)."""
    from offline_opt.solve import limit_problems

    return limit_problems(time_limit, mip_gap)


def ceiling(result: dict) -> float | None:
    """The most utility a policy may have on the instance of a recorded OPT ``result`` (``to_dict()``
    form); above it is a bug in the model or the validator (``OptResult.ceiling``)."""
    from offline_opt.solve import ceiling

    return ceiling(
        result.get("objective"),
        result.get("bound"),
        bool(result.get("proven_optimal")),
        float(result.get("mip_gap", 0.0)),
    )


def solve(spec: dict) -> dict:
    """``spec``: an OPT task's spec (instance fields, seed, ``opt`` settings) -> the result dict."""
    import offline_opt

    settings = spec["opt"]
    instance = make_instance(build(RunSpec, {k: v for k, v in spec.items() if k != "opt"}))
    return offline_opt.solve(
        instance, solver=settings["solver"], time_limit=settings["time_limit"], mip_gap=settings["mip_gap"]
    ).to_dict()
