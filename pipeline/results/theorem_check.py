"""Theorems 5-6 checked on a sweep's record (``offline_opt.theorem`` is the same check on one comparison).

A PD-ORS run fails it when Definition 1 held on all its admissions (``premise.premise_share`` = 1) and its
certified upper ratio ``ratio_bound`` (the least upper bound on OPT the sweep has, over ALG) exceeds its
``premise.competitive_bound``; the failing runs' instances are saved for ``pdors opt --instance``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from pdors.config import build
from pdors.instance_io import save
from pdors.run import RunSpec, make_instance

from pipeline.results.summary import with_ratio

COLUMNS = ("premise.premise_share", "premise.competitive_bound")


def violations(runs: pd.DataFrame) -> pd.DataFrame:
    """The sim runs contradicting Theorems 5-6 (rows of :func:`pipeline.results.summary.with_ratio`)."""
    if any(c not in runs for c in COLUMNS):  # a record written before the premise was measured
        return runs.iloc[0:0]
    rated = with_ratio(runs)
    holds = rated["premise.premise_share"].ge(1.0).fillna(False).astype(bool)
    above = rated["ratio_bound"].gt(rated["premise.competitive_bound"] * (1.0 + 1e-9)).fillna(False).astype(bool)
    out: pd.DataFrame = rated[(rated["kind"] == "sim") & (rated["status"] == "ok") & holds & above]
    return out


def save_instances(bad: pd.DataFrame, directory: Path) -> list[Path]:
    """Each failing run's instance (rebuilt from its recorded spec) as ``<directory>/<run_id>.json``."""
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for run_id, spec in zip(bad["run_id"], bad["spec"], strict=True):
        path = directory / f"{run_id}.json"
        save(make_instance(build(RunSpec, json.loads(spec))), path)
        out.append(path)
    return out


def messages(bad: pd.DataFrame, saved: list[Path]) -> list[str]:
    return [
        f"error: run {run_id} ({policy}, seed {seed}): Definition 1 holds on every admission, yet its certified "
        f"OPT / ALG <= {upper:.6g} exceeds Theorems 5-6's bound {bound:.6g}; instance saved: {path}"
        for run_id, policy, seed, upper, bound, path in zip(
            bad["run_id"],
            bad["policy"],
            bad["seed"],
            bad["ratio_bound"],
            bad["premise.competitive_bound"],
            saved,
            strict=True,
        )
    ]
