"""MLflow logging in a process of its own, beside the report: importing MLflow, opening (or migrating) its store
and logging every child run cost about as much CPU as drawing the report, and the two need nothing from each other
until the report's figures are attached. :func:`start` hands the sweep's record to a fresh interpreter (``spawn``:
no thread of this process is copied) before the report is drawn; :func:`finish` gives it the figures and waits.

The data goes through a pipe, never the command line (a tracking URI may hold credentials); the environment is
inherited as is.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.record.manifest import Manifest
from pipeline.text.credentials import one_line

if TYPE_CHECKING:
    import pandas as pd

    from pipeline.publish.tracking import Logged


class LoggingFailed(Exception):
    """MLflow logging failed in the logging process (its message: the failure, on one line)."""


@dataclass(frozen=True)
class Logging:
    """A logging process under way."""

    process: BaseProcess
    conn: Connection


def start(manifest: Manifest, runs: pd.DataFrame, agg: pd.DataFrame, artifacts: list[Path], root: Path) -> Logging:
    """Start logging the sweep (:func:`pipeline.publish.tracking.log_sweep`'s arguments) in a process of its own."""
    context = multiprocessing.get_context("spawn")
    mine, theirs = context.Pipe()
    process = context.Process(
        target=_main, args=(theirs, manifest, runs, agg, artifacts, root), name="pdors-mlflow", daemon=True
    )
    process.start()
    theirs.close()
    return Logging(process, mine)


def finish(handle: Logging, figures: list[Path], artifact_path: str, root: Path) -> Logged:
    """Attach ``figures`` under ``artifact_path`` once the sweep is logged; what was logged, or
    :class:`LoggingFailed`."""
    try:
        handle.conn.send((figures, artifact_path, root))
        outcome, value = handle.conn.recv()
    except (EOFError, OSError):  # the process died without a word (killed, out of memory)
        handle.process.join()
        raise LoggingFailed(f"the logging process ended with exit status {handle.process.exitcode}") from None
    handle.process.join()
    if outcome != "ok":
        raise LoggingFailed(value)
    logged: Logged = value
    return logged


def stop(handle: Logging) -> None:
    """End the logging process if it still runs (the report failed, or Ctrl-C): it logs nothing more."""
    handle.conn.close()
    if handle.process.is_alive():
        handle.process.terminate()
    handle.process.join()


def _main(
    conn: Connection, manifest: Manifest, runs: pd.DataFrame, agg: pd.DataFrame, artifacts: list[Path], root: Path
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it ends this process
    import mlflow  # noqa: F401  (it sets its loggers up on import; quieted after)

    from pipeline.publish import tracking

    logging.getLogger("mlflow").setLevel(logging.WARNING)  # no "creating tables" amid the results screen
    try:
        logged = tracking.log_sweep(manifest, runs, agg, artifacts, root)
        figures, artifact_path, at = conn.recv()
        tracking.attach(manifest, figures, artifact_path, at)
        conn.send(("ok", logged))
    except Exception as e:  # sent as one line: the parent says how to re-log
        conn.send(("failed", one_line(e)))
    finally:
        conn.close()
