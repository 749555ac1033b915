"""Policies from outside the package: found by name, with where they came from.

A policy outside ``pdors/policies/`` is a class (a subclass of :class:`pdors.api.PlanningPolicy` or
:class:`pdors.api.SlotPolicy`) named in one of two ways:

* by an entry point of the group ``pdors.policies`` that an installed distribution declares
  (``greedy = "pdors_greedy.policy:Greedy"`` in its ``pyproject.toml``): the policy's name is the entry point's;
* directly as ``package.module:Class`` (importable from ``sys.path``).

Its :class:`PolicyOrigin` (distribution, version, a digest of its package's source) is part of every run id of a
sweep, so an edited policy never reuses a result of its earlier source (docs/WRITE_A_POLICY.md).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import importlib.metadata
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError

GROUP = "pdors.policies"  # the entry-point group an installed distribution declares its policies under
UNVERSIONED = "unversioned"  # the version of a policy imported from a module no distribution installed


@dataclass(frozen=True, kw_only=True)
class PolicyOrigin:
    """Where a policy came from. ``kind``: ``builtin`` | ``entry-point`` | ``import``; ``target``: the
    ``module:Class`` loaded; ``digest``: SHA-256 (16 hex digits) of the source files of the policy's top-level
    package (empty for built-ins, whose results ``MODEL_VERSION`` versions)."""

    kind: str
    target: str
    distribution: str
    version: str
    digest: str = ""


@dataclass(frozen=True)
class NoConfig:
    """The config of a policy that takes no parameters."""


def is_target(name: str) -> bool:
    """Whether ``name`` names a class directly (``package.module:Class``), not a registered name."""
    return ":" in name


@functools.cache
def entry_points() -> dict[str, tuple[str, str]]:
    """Name -> (``module:Class``, its distribution) of every policy installed distributions declare (group
    ``pdors.policies``)."""
    return {ep.name: (ep.value, ep.dist.name if ep.dist else "") for ep in importlib.metadata.entry_points(group=GROUP)}


def load(name: str) -> tuple[type[Any], PolicyOrigin]:
    """The policy class ``name`` (an entry-point name or ``module:Class``) and its origin; ``InputError`` naming
    ``name`` and the reason when it cannot be found, imported or is not a policy."""
    if is_target(name):
        return _load(name, "import", "")
    found = entry_points().get(name)
    if found is None:
        raise InputError(f"policy: unknown policy {name!r} (`pdors policies` lists the known ones)")
    return _load(found[0], "entry-point", found[1])


@functools.cache
def _load(target: str, kind: str, distribution: str) -> tuple[type[Any], PolicyOrigin]:
    """``distribution``: the one declaring the entry point, else ("") the one installing the module, if any."""
    from .base import PlanningPolicy, SlotPolicy

    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # any error of the user's module: one line naming it
        raise InputError(f"policy {target}: cannot import {module_name} ({type(e).__name__}: {e})") from None
    cls = getattr(module, attr, None)
    if not (isinstance(cls, type) and issubclass(cls, (PlanningPolicy, SlotPolicy))):
        raise InputError(f"policy {target}: {attr!r} is not a PlanningPolicy or SlotPolicy class of {module_name}")
    config = getattr(cls, "Config", NoConfig)
    if not (isinstance(config, type) and dataclasses.is_dataclass(config)):
        raise InputError(f"policy {target}: its Config must be a dataclass, got {config!r}")
    top = module_name.split(".")[0]
    distribution = distribution or _distribution(top)
    version = importlib.metadata.version(distribution) if distribution else UNVERSIONED
    return cls, PolicyOrigin(
        kind=kind, target=target, distribution=distribution, version=version, digest=source_digest(top)
    )


def _distribution(package: str) -> str:
    """The installed distribution providing top-level ``package`` ("" if none does)."""
    names = importlib.metadata.packages_distributions().get(package, [])
    return names[0] if names else ""


def source_digest(package: str) -> str:
    """SHA-256 of the ``.py`` files of top-level module or package ``package`` (relative paths and contents, in
    path order): any edit of its source changes it."""
    module = sys.modules[package]
    path = Path(module.__file__ or "")
    root, files = (path.parent, sorted(path.parent.rglob("*.py"))) if path.name == "__init__.py" else (path, [path])
    h = hashlib.sha256()
    for f in files:
        rel = f.relative_to(root).as_posix() if f != root else f.name
        h.update(rel.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]
