"""Provenance of a result: the code's git commit and the versions of the packages that produced it."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

PACKAGES = ("pdors", "numpy", "scipy", "highspy", "pyomo", "ray", "mlflow", "pyarrow", "pandas", "matplotlib")


def git_commit() -> str:
    """HEAD of the checkout this code runs from, '-dirty' if tracked files changed; read-only git calls
    (GIT_OPTIONAL_LOCKS=0: status must not rewrite the index under someone else's feet)."""
    repo = Path(__file__).resolve().parents[2]  # pipeline/record/ -> the checkout
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    try:
        head = subprocess.run(
            ["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True, text=True, check=True, env=env
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def packages() -> dict[str, str]:
    from importlib import metadata  # only a new manifest needs it, not `sweep status`

    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out
