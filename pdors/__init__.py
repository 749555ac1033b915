"""PD-ORS: online scheduling of parameter-server training jobs (Yu et al., IEEE TNSE 2022), its rivals,
and the machinery to compare them.

The public API: the model (:class:`Instance`, :class:`Jobs`, :class:`Cluster`, :func:`generate` and its
:class:`WorkloadConfig`), one run (:class:`RunSpec` -> :func:`run` -> :class:`RunResult`, whose ``summary`` is a
:class:`RunSummary`), the policies registry (:data:`POLICIES`, :func:`make_policy`, :func:`policy_config`) and the
validator (:func:`validate` -> :class:`Validation`). README.md has a notebook-style example.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy_exports import lazy_exports
from .version import __version__

if TYPE_CHECKING:
    from .model import Cluster, Instance, Jobs
    from .policies import POLICIES, make_policy, policy_config
    from .run import RunResult, RunSpec, run
    from .run_summary import RunSummary
    from .validator import Validation, validate
    from .workload import WorkloadConfig, generate

__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(("Cluster", "Instance", "Jobs"), "model"),
        **dict.fromkeys(("POLICIES", "make_policy", "policy_config"), "policies"),
        **dict.fromkeys(("RunResult", "RunSpec", "run"), "run"),
        "RunSummary": "run_summary",
        **dict.fromkeys(("Validation", "validate"), "validator"),
        **dict.fromkeys(("WorkloadConfig", "generate"), "workload"),
    },
)
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
