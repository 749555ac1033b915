"""The one display name of each policy (tables, figures, MLflow): ``PD-ORS``, never ``pdors``."""

from __future__ import annotations

POLICY_NAMES = {
    "pdors": "PD-ORS",
    "fifo": "FIFO",
    "drf": "DRF",
    "dorm": "Dorm",
    "oasis": "OASiS",
    "pollux": "Pollux",
    "preemptive": "Preemptive",
}


def policy_name(policy: str) -> str:
    return POLICY_NAMES.get(policy, policy)


def own_axes(policy: str, axes: list[str]) -> list[str]:
    """The grid axes that are ``policy``'s own parameters (``<policy>.<param>``): its variants."""
    return [a for a in axes if a.startswith(f"{policy}.")]


def variant_name(policy: str, values: list[str]) -> str:
    """A policy with the values of its own axes: ``PD-ORS (reject)``."""
    shown = [v for v in values if v != "-"]
    return policy_name(policy) + (f" ({', '.join(shown)})" if shown else "")
