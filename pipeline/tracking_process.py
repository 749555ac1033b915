"""MLflow logging in a process of its own: importing MLflow, opening (or creating and migrating) a local store and
logging every child run cost about as much CPU as drawing the report, and the two need nothing from each other until
the report's figures are attached. :func:`start` starts a fresh interpreter (``spawn``: no thread of this process
is copied) that imports MLflow and opens the store while the sweep runs; :func:`log` hands it the sweep's record
before the report is drawn; :func:`finish` gives it the figures and waits.

The data goes through a pipe, never the command line (a tracking URI may hold credentials); the environment is
inherited as is.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import signal
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import TYPE_CHECKING

from .credentials import one_line
from .manifest import Manifest

if TYPE_CHECKING:
    import pandas as pd

    from .tracking import Logged


class LoggingFailed(Exception):
    """MLflow logging failed in the logging process (its message: the failure, on one line)."""


@dataclass(frozen=True)
class Logging:
    """A logging process under way."""

    process: BaseProcess
    conn: Connection


def start(experiment: str) -> Logging:
    """Start a logging process for ``experiment``: it imports MLflow and opens a local store (a server's
    reachability is checked when logging, as :func:`pipeline.tracking.log_sweep` does), then waits for
    :func:`log`."""
    context = multiprocessing.get_context("spawn")
    mine, theirs = context.Pipe()
    process = context.Process(target=_main, args=(theirs, experiment), name="pdors-mlflow", daemon=True)
    process.start()
    theirs.close()
    return Logging(process, mine)


def log(
    handle: Logging, manifest: Manifest, runs: pd.DataFrame, agg: pd.DataFrame, artifacts: list[Path], root: Path
) -> None:
    """Hand the sweep (:func:`pipeline.tracking.log_sweep`'s arguments) to the logging process; a process that
    died is found by :func:`finish`."""
    with contextlib.suppress(OSError):
        handle.conn.send((manifest, runs, agg, artifacts, root))


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


def _main(conn: Connection, experiment: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it ends this process
    import mlflow  # noqa: F401  (it sets its loggers up on import; quieted after)

    from . import tracking

    logging.getLogger("mlflow").setLevel(logging.WARNING)  # no "creating tables" amid the results screen
    received = 0  # messages: the sweep (log), then the figures (finish)
    outcome: tuple[str, object]
    try:
        try:
            if not tracking.served(tracking.tracking_uri()):
                tracking.client().get_experiment_by_name(experiment)  # a new store is created now, while the sweep runs
            manifest, runs, agg, artifacts, root = conn.recv()
            received = 1
            logged = tracking.log_sweep(manifest, runs, agg, artifacts, root)
            figures, artifact_path, at = conn.recv()
            received = 2
            tracking.attach(manifest, figures, artifact_path, at)
            outcome = ("ok", logged)
        except EOFError:
            raise
        except Exception as e:  # sent as one line, once the figures are handed over: the parent says how to re-log
            outcome = ("failed", one_line(e))
            for _ in range(received, 2):
                conn.recv()
        conn.send(outcome)
    except EOFError:  # the parent stopped before handing everything over (interrupted, or nothing to publish)
        pass
    finally:
        conn.close()
