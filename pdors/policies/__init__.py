"""The policy registry. A policy lives in ``pdors/policies/<name>.py`` with a config dataclass ``Config``
and a factory ``make(config, spec) -> Policy``; adding one means adding its name here."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..config import build
from ..errors import InputError

if TYPE_CHECKING:  # at run time the policy modules import them: the registry's names alone import no NumPy
    from .base import Policy, RunShape

POLICIES: tuple[str, ...] = ("pdors", "fifo", "drf", "dorm", "oasis", "pollux", "preemptive")
# The policies that keep the thesis's PS rules (3.4)-(3.5) under ``workload: {profile: thesis}``; the others
# size PSs by gamma alone and are refused there (docs/MODEL.md, "The thesis profile").
THESIS_POLICIES: tuple[str, ...] = ("pdors", "oasis")


def policy_module(name: str) -> ModuleType:
    if name not in POLICIES:
        raise InputError(f"policy: unknown policy {name!r} (known: {', '.join(POLICIES)})")
    return importlib.import_module(f"{__name__}.{name}")


def policy_config(name: str, params: dict[str, Any] | None, path: str = "params") -> Any:
    """The validated config of policy ``name``; raises ``ConfigError`` naming the bad field."""
    return build(policy_module(name).Config, params or {}, path)


def make_policy(name: str, params: dict[str, Any] | None, spec: RunShape) -> Policy:
    policy: Policy = policy_module(name).make(policy_config(name, params), spec)
    return policy
