"""PD-ORS: online scheduling of parameter-server training jobs (Yu et al., IEEE TNSE 2022), its rivals,
and the machinery to compare them.

The public API: the model (:class:`Instance`, :class:`Jobs`, :class:`Cluster`, :func:`generate` and its
:class:`WorkloadConfig`), one run (:class:`RunSpec` -> :func:`run` -> :class:`RunResult`, whose ``summary`` is a
:class:`RunSummary`), the policies registry (:data:`POLICIES`, :func:`make_policy`, :func:`policy_config`) and the
validator (:func:`validate` -> :class:`Validation`). README.md has a notebook-style example.
"""

from .model import Cluster, Instance, Jobs
from .policies import POLICIES, make_policy, policy_config
from .run import RunResult, RunSpec, run
from .run_summary import RunSummary
from .validator import Validation, validate
from .version import __version__
from .workload import WorkloadConfig, generate

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
