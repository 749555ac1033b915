"""The policy registry. A built-in policy lives in ``pdors/policies/<name>.py`` with a config dataclass ``Config``
and a factory ``make(config, spec) -> Policy``; adding one means adding its name here. Policies from outside the
package (an entry point of the group ``pdors.policies``, or ``package.module:Class``) are found by
:mod:`.external`; :func:`resolve` serves both alike."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..config import build
from ..errors import InputError
from .external import NoConfig, PolicyOrigin, entry_points, is_target, load

if TYPE_CHECKING:  # at run time the policy modules import them: the registry's names alone import no NumPy
    from .base import Policy, RunShape

POLICIES: tuple[str, ...] = ("pdors", "fifo", "drf", "dorm", "oasis", "pollux", "preemptive")
# The policies that keep the thesis's PS rules (3.4)-(3.5) under ``workload: {profile: thesis}``; the others
# size PSs by gamma alone and are refused there (docs/MODEL.md, "The thesis profile").
THESIS_POLICIES: tuple[str, ...] = ("pdors", "oasis")


@dataclass(frozen=True, kw_only=True)
class Resolved:
    """A policy found by name: its config dataclass, its factory and where it came from."""

    name: str
    config: type[Any]
    make: Callable[[Any, RunShape], Policy]
    origin: PolicyOrigin

    @property
    def external(self) -> bool:
        return self.origin.kind != "builtin"


def policy_module(name: str) -> ModuleType:
    if name not in POLICIES:
        raise InputError(f"policy: unknown policy {name!r} (known: {', '.join(POLICIES)})")
    return importlib.import_module(f"{__name__}.{name}")


def resolve(name: str) -> Resolved:
    """Policy ``name``: a built-in, an installed entry point's name, or ``package.module:Class``; ``InputError``
    naming it when none is found (a built-in's name wins over an entry point of the same name)."""
    if name in POLICIES:
        from ..version import CODE_VERSION

        module = policy_module(name)
        origin = PolicyOrigin(kind="builtin", target=module.__name__, distribution="pdors", version=CODE_VERSION)
        return Resolved(name=name, config=module.Config, make=module.make, origin=origin)
    if not is_target(name) and name not in entry_points():
        raise InputError(f"policy: unknown policy {name!r} (known: {', '.join(known())}; or package.module:Class)")
    cls, origin = load(name)
    return Resolved(name=name, config=getattr(cls, "Config", NoConfig), make=cls, origin=origin)


def known() -> tuple[str, ...]:
    """Every policy name found: the built-ins, then the installed entry points (``module:Class`` names are not
    listed: any importable class is one)."""
    return (*POLICIES, *(n for n in sorted(entry_points()) if n not in POLICIES))


def policy_config(name: str, params: dict[str, Any] | None, path: str = "params") -> Any:
    """The validated config of policy ``name``; raises ``ConfigError`` naming the bad field."""
    return build(resolve(name).config, params or {}, path)


def make_policy(name: str, params: dict[str, Any] | None, spec: RunShape) -> Policy:
    found = resolve(name)
    policy: Policy = found.make(build(found.config, params or {}, "params"), spec)
    return policy


def survey(names: tuple[str, ...] = ()) -> list[tuple[str, PolicyOrigin | str]]:
    """Each policy of ``names`` (default: every :func:`known` one) with its origin, or why it does not load."""
    out: list[tuple[str, PolicyOrigin | str]] = []
    for name in names or known():
        try:
            out.append((name, resolve(name).origin))
        except InputError as e:
            out.append((name, str(e)))
    return out
