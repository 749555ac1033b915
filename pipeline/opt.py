"""The one adapter between the sweep and the offline optimum (``offline_opt.solve``).

Contract assumed of ``offline_opt``: ``solve(instance, solver=, time_limit=, mip_gap=)`` returns a result with
``to_dict()``; its ``objective`` is the OPT utility when ``proven_optimal``, ``status`` the solver status.
The whole dict is kept (``opt.result``).
"""
from __future__ import annotations

from pdors.config import build
from pdors.run import RunSpec, make_instance


def solve(spec: dict) -> dict:
    """``spec``: an OPT task's spec (instance fields, seed, ``opt`` settings) -> the result dict."""
    import offline_opt

    settings = spec["opt"]
    instance = make_instance(build(RunSpec, {k: v for k, v in spec.items() if k != "opt"}))
    return offline_opt.solve(instance, solver=settings["solver"], time_limit=settings["time_limit"],
                             mip_gap=settings["mip_gap"]).to_dict()
