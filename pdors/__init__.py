"""PD-ORS: online scheduling of parameter-server training jobs (Yu et al., IEEE TNSE 2022), its rivals,
and the machinery to compare them.

The public API: the model (:class:`Instance`, :class:`Jobs`, :class:`Cluster`, :func:`generate` and its
:class:`WorkloadConfig`), one run (:class:`RunSpec` -> :func:`run` -> :class:`RunResult`, whose ``summary`` is a
:class:`RunSummary`), the policies registry (:data:`POLICIES`, :func:`make_policy`, :func:`policy_config`) and the
validator (:func:`validate` -> :class:`Validation`). README.md has a notebook-style example.

Each name is imported on first use (PEP 562), so that importing a light submodule (``pdors.errors`` for every
``pdors`` command, ``pdors.policies`` for ``--help``) does not import NumPy and the simulator.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import Cluster, Instance, Jobs
    from .policies import POLICIES, make_policy, policy_config
    from .run import RunResult, RunSpec, run
    from .run_summary import RunSummary
    from .validator import Validation, validate
    from .version import __version__
    from .workload import WorkloadConfig, generate

# each public name -> the submodule defining it
_HOME = {
    "Cluster": "model",
    "Instance": "model",
    "Jobs": "model",
    "POLICIES": "policies",
    "make_policy": "policies",
    "policy_config": "policies",
    "RunResult": "run",
    "RunSpec": "run",
    "run": "run",
    "RunSummary": "run_summary",
    "Validation": "validator",
    "validate": "validator",
    "__version__": "version",
    "WorkloadConfig": "workload",
    "generate": "workload",
}

__all__ = [
    "POLICIES",
    "Cluster",
    "Instance",
    "Jobs",
    "RunResult",
    "RunSpec",
    "RunSummary",
    "Validation",
    "WorkloadConfig",
    "__version__",
    "generate",
    "make_policy",
    "policy_config",
    "run",
    "validate",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})


class _Package(types.ModuleType):
    """``pdors.run`` is both a submodule and the function it defines; the import system binds the submodule to
    the package's attribute when it is first imported, so the public name is a property that always gives the
    function (as the eager ``from .run import run`` did)."""

    @property
    def run(self) -> Any:
        return importlib.import_module(".run", __name__).run

    @run.setter
    def run(self, value: Any) -> None:
        pass  # the submodule being bound by the import system: ``pdors.run`` stays the function


sys.modules[__name__].__class__ = _Package
