"""A wall-clock limit of our own around a solver call: HiGHS does not always honour its ``time_limit``.

``call_with_deadline(fn, args, seconds)`` runs ``fn(*args)`` in a child process and kills it (SIGKILL) if it
has not answered after ``seconds``, together with anything it started (glpsol and cbc are subprocesses: the
child leads its own process group); the caller then gets :data:`TIMED_OUT` instead of a result. Children are
forked from a ``forkserver`` (single-threaded, so forking is safe even from a Ray worker or a process with
threads) that has the solver stack imported once, so a call costs milliseconds, not an interpreter start.
``fn``, its arguments and its result must pickle; an exception in the child is re-raised in the caller.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

TIMED_OUT = object()  # the result of a call the deadline cut off
# imported once in the fork server: pyomo, its HiGHS interface, the model
_PRELOAD = ["pyomo.environ", "pyomo.contrib.solver.solvers.highs", "offline_opt.milp", "offline_opt.solve"]


def _child(conn: Connection, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    os.setpgrp()
    try:
        conn.send((True, fn(*args)))
    except BaseException as e:
        conn.send((False, e))
    finally:
        conn.close()


def call_with_deadline(fn: Callable[..., Any], args: tuple[Any, ...], seconds: float) -> Any:
    """``fn(*args)`` in a child process; :data:`TIMED_OUT` if it takes longer than ``seconds``."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(_PRELOAD)
    receive, send = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(send, fn, args), daemon=True)
    with _without_main():
        process.start()
    send.close()
    try:
        if not receive.poll(seconds):
            return TIMED_OUT
        try:
            ok, value = receive.recv()
        except EOFError:  # the child died without answering (killed, out of memory, a crash in C)
            process.join(5)
            raise RuntimeError(f"solver process exited with code {process.exitcode} without a result") from None
    finally:
        _kill_group(process)
        receive.close()
    if not ok:
        raise value
    return value


@contextmanager
def _without_main() -> Iterator[None]:
    """Start the child without the caller's ``__main__``: multiprocessing would re-run the caller's script in it
    (``python example.py`` without a ``__main__`` guard re-runs everything; ``python - < example.py`` has no
    file to run and the child exits with 1). ``fn`` and its arguments pickle by reference to this package."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")  # no __file__, no __spec__: nothing to re-import
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def _kill_group(process: BaseProcess) -> None:
    """SIGKILL the child's process group (the child and its solver subprocesses), then reap the child."""
    assert process.pid is not None  # started
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # already gone (or not yet its own group: kill it alone)
        if process.is_alive():
            process.kill()
    process.join()
