"""MLflow logging in a process of its own, started ahead: importing MLflow and opening its store cost about as much
CPU as drawing the report, and need nothing of the record. :func:`start` starts a fresh interpreter (``spawn``: no
thread of this process is copied) as soon as a sweep's config is checked, so that those costs overlap the runs;
:func:`log` hands it the recorded sweep once the headline is shown, and it logs while the report is drawn;
:func:`finish` gives it the figures and waits. A process given nothing (the sweep stopped, or nothing to publish)
ends when :func:`stop` closes its pipe, having written nothing but a new local store (an empty copy).

The data goes through a pipe, never the command line (a tracking URI may hold credentials); the environment is
inherited as is.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import sys
import threading
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.record.manifest import Manifest
from pipeline.text.credentials import one_line

if TYPE_CHECKING:
    import pandas as pd

    from pipeline.publish.tracking import Logged


class LoggingFailed(Exception):
    """MLflow logging failed in the logging process (its message: the failure, on one line)."""


@dataclass
class Logging:
    """A logging process under way; ``sending``: the sweep on its way to it."""

    process: BaseProcess
    conn: Connection
    sending: list[threading.Thread] = field(default_factory=list)


def start() -> Logging:
    """Start the logging process: it imports MLflow, opens the store and waits for :func:`log`."""
    context = multiprocessing.get_context("spawn")
    mine, theirs = context.Pipe()
    process = context.Process(target=_main, args=(theirs,), name="pdors-mlflow", daemon=True)
    process.start()
    theirs.close()
    return Logging(process, mine)


def log(
    handle: Logging,
    manifest: Manifest,
    runs: pd.DataFrame,
    agg: pd.DataFrame,
    artifacts: list[Path],
    root: Path,
    found: pd.DataFrame | None = None,
) -> None:
    """Have the process log the sweep (:func:`pipeline.publish.tracking.log_sweep`'s arguments). The data is
    written by a thread: a process still importing MLflow reads it only then, and the report is drawn meanwhile
    (the write waits in the kernel, without the interpreter lock); a process already dead is found by
    :func:`finish`."""
    data = bytes(ForkingPickler.dumps((manifest, runs, agg, artifacts, root, found)))

    def send() -> None:
        with contextlib.suppress(OSError):
            handle.conn.send_bytes(data)

    thread = threading.Thread(target=send, name="pdors-mlflow-send", daemon=True)
    thread.start()
    handle.sending.append(thread)


def finish(handle: Logging, figures: list[Path], artifact_path: str, root: Path) -> Logged:
    """Attach ``figures`` under ``artifact_path`` once the sweep is logged; what was logged, or
    :class:`LoggingFailed`."""
    for thread in handle.sending:
        thread.join()
    with contextlib.suppress(OSError):  # a process that failed may have closed its end: its word is read below
        handle.conn.send((figures, artifact_path, root))
    try:
        outcome, value = handle.conn.recv()
    except (EOFError, OSError):  # the process died without a word (killed, out of memory)
        handle.process.join()
        raise LoggingFailed(f"the logging process ended with exit status {handle.process.exitcode}") from None
    if outcome != "ok":
        raise LoggingFailed(value)
    logged: Logged = value
    return logged


def stop(handle: Logging) -> None:
    """End the logging process if it still runs (not given a sweep, the report failed, or Ctrl-C): it logs nothing
    more. Idempotent."""
    handle.conn.close()
    if handle.process.is_alive():
        handle.process.terminate()
    handle.process.join()


def _main(conn: Connection) -> None:
    """The logging process: :func:`_serve`, then its end without the interpreter's teardown (MLflow's exit
    handlers and freeing its modules kept the parent waiting 1.1 s at load 6); its output flushed, every
    write of MLflow's store committed by then."""
    _serve(conn)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(0)


def _serve(conn: Connection) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it ends this process
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")  # MLflow's usage reports, sent from threads
    import mlflow  # noqa: F401  (it sets its loggers up on import; quieted after)

    from pipeline.publish import tracking

    logging.getLogger("mlflow").setLevel(logging.WARNING)  # no "creating tables" amid the results screen
    try:
        tracking.open_store()
        opened = None
    except Exception as e:  # said once there is a sweep to log
        opened = one_line(e)
    try:
        manifest, runs, agg, artifacts, root, found = conn.recv()
    except EOFError:  # given nothing to log
        return
    try:
        if opened is not None:
            raise LoggingFailed(opened)
        logged = tracking.log_sweep(manifest, runs, agg, artifacts, root, found)
        figures, artifact_path, at = conn.recv()
        tracking.attach(manifest, figures, artifact_path, at)
        conn.send(("ok", logged))
    except Exception as e:  # sent as one line: the parent says how to re-log (unless it is gone)
        with contextlib.suppress(OSError):
            conn.send(("failed", str(e) if isinstance(e, LoggingFailed) else one_line(e)))
    finally:
        conn.close()
