"""Sweeps: a YAML grid -> Ray tasks -> a Parquet record -> summaries, figures, MLflow (docs/PIPELINE.md).

The public API: :func:`run_sweep` (``pdors sweep run`` as a function, returning a :class:`~pipeline.sweep.SweepResult`),
and the record of an output root as pandas DataFrames: :func:`load_runs` (one row per recorded run, each once:
the runs ``pdors sweep status`` counts) and :func:`load_jobs` (one row per job of each of those runs);
:func:`headline_table`: a sweep's headline table (:mod:`pipeline.results.headline`) as a DataFrame.
Imports happen on call, so that ``import pipeline`` stays cheap for the modules below it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from pipeline.sweep import Say, SweepOptions, SweepResult

__all__ = ["headline_table", "load_jobs", "load_runs", "run_sweep"]


def run_sweep(config_path: str | Path, options: SweepOptions | None = None, progress: Say | None = None) -> SweepResult:
    """Run the sweep config at ``config_path`` and publish it (``pdors sweep run``); ``options``: its command-line
    options; ``progress``: where its progress lines go (default: nowhere, e.g. ``print``)."""
    from pipeline.publish.publish_run import run_and_publish
    from pipeline.sweep import SweepOptions

    return run_and_publish(str(config_path), options or SweepOptions(), progress)


def load_runs(root: str | Path) -> pd.DataFrame:
    """Every run recorded under the output root ``root``, once each (the last record of a run recomputed),
    with every column of the runs table (docs/PIPELINE.md, "The record")."""
    from pipeline.record.storage import read

    runs: pd.DataFrame = read(root, "runs").to_pandas()
    return runs


def load_jobs(root: str | Path) -> pd.DataFrame:
    """The per-job rows of every run recorded under ``root`` (``run_id`` joins them to :func:`load_runs`)."""
    from pipeline.record.storage import read

    jobs: pd.DataFrame = read(root, "jobs").to_pandas()
    return jobs


def headline_table(
    sweep: str | Path | None = None, out: str | Path | None = None, by: tuple[str, ...] = ()
) -> pd.DataFrame:
    """One row per policy (per value of the ``by`` axes): utility with its 95% interval, the paired ratio to the
    reference, W/T/L, completed share, certified OPT / ALG interval. ``sweep``: a config, sweep id or directory
    (default: the latest sweep under ``out``)."""
    from pipeline.publish.report import headline_of

    return headline_of(None if sweep is None else str(sweep), None if out is None else str(out), by)[0]
