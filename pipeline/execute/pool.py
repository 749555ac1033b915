"""Worker processes kept on the persistent local head between sweeps: a pool of named detached actors.

Each Ray job (each sweep) gets worker processes of its own, and starting them (python, ``import ray``, the
project's code) costs 1-2 s on 2 cores before its first run. On the head of ``pdors ray up`` a sweep instead
feeds its chunks to actors (``executor.Runner``) that outlive it, one per head CPU, in namespace ``NAMESPACE``:

* Never stale code: an actor's name carries a fingerprint of the code the sweep would run (:func:`fingerprint`:
  the source of ``PACKAGES`` as this process would import it, the import path a worker of this process's job
  gets, and the external policies' planned origins). A sweep kills the pool's actors of any other fingerprint and
  makes (or finds) its own; before the first chunk each actor reports the source digest and the policies' origins
  it finds itself, and a difference leaves the actors unused: the sweep runs on tasks.
* Never a hang: the actors hold no CPU (``num_cpus=0``), so plain tasks others submit to the head (a policy check,
  ``pdors opt``, the nightly) are scheduled as before; the executor's own in-flight limit decides how many chunks
  run. An actor stops a chunk whose driver died (:func:`orphaned`): a killed sweep's runs do not keep it busy.
* Faults as on tasks: an actor that dies is restarted by Ray for later chunks (``max_restarts=-1``); the runs of the
  chunk it ran go back to the executor, which runs them again one per task with Ray's retries, so that only a run
  that kills its worker comes back ``lost``. A method runs on the actor's main thread, where ``run_time_limit``'s
  SIGALRM is delivered.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import select
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pdors.config import JSON

NAMESPACE = "pdors-pool"
PREFIX = "runner-"
PACKAGES = ("pdors", "pipeline", "offline_opt")


def source_digest() -> str:
    """A digest of every ``.py`` file of ``PACKAGES`` where this process finds them (not importing them): a few ms."""
    roots = []
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        roots += [(name, Path(root)) for root in sorted(spec.submodule_search_locations or [])] if spec else []
    return tree_digest(roots)


def tree_digest(roots: list[tuple[str, Path]]) -> str:
    """A digest of the ``.py`` files under each (package name, directory) of ``roots``: their paths within the
    package and their bytes (the same code elsewhere has the same digest)."""
    h = hashlib.blake2b(digest_size=16)
    for name, root in roots:
        for path in sorted(root.rglob("*.py")):
            h.update(f"{name}/{path.relative_to(root)}".encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def worker_path() -> list[str]:
    """The import path a Ray worker of this process's job gets: the head's own, then this process's script
    directory and current directory (Ray's ``py_driver_sys_path``), where a policy module may be found."""
    script = os.path.dirname(os.path.realpath(sys.argv[0])) if sys.argv and sys.argv[0] else ""
    return [*([script] if script in sys.path else []), os.path.abspath(os.curdir)]


def fingerprint(code: str, planned: dict[str, JSON]) -> str:
    """What an actor must share with a sweep to run its chunks: the source digest ``code``, the worker's import
    path, the external policies' planned origins (name -> origin)."""
    mark = json.dumps([code, worker_path(), planned], sort_keys=True)
    return hashlib.blake2b(mark.encode(), digest_size=8).hexdigest()


@contextlib.contextmanager
def orphaned(driver: int) -> Iterator[None]:
    """While the block runs, end this process if process ``driver`` (the sweep that called, on this machine) ends
    first: as Ray ends a finished job's task workers, so that a killed sweep's runs do not hold the actor; Ray
    restarts it."""
    try:
        watched = os.pidfd_open(driver)
    except OSError:  # gone already
        os._exit(1)
    wake_r, wake_w = os.pipe()

    def watch() -> None:
        ready, _, _ = select.select([watched, wake_r], [], [])
        if watched in ready:
            os._exit(1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        os.write(wake_w, b"x")
        watcher.join()
        for fd in (watched, wake_r, wake_w):
            os.close(fd)


def _named() -> list[str]:
    import ray

    return [a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"] == NAMESPACE]


def acquire(runner: type, size: int, planned: dict[str, JSON]) -> list[Any] | None:
    """``size`` actors of class ``runner`` (with ``ready(policies)``: its source digest and the origins it finds)
    of this sweep's fingerprint, found or made, after those of any other fingerprint are killed; None (run on
    tasks) if they do not run this sweep's code."""
    import ray

    code = source_digest()
    names = [f"{PREFIX}{fingerprint(code, planned)}-{i}" for i in range(size)]
    for name in _named():
        if name.startswith(PREFIX) and name not in names:
            # ended meanwhile: gone (ValueError), or killed a moment ago with the class its job exported already
            # dropped, which Ray's get_actor reports as an AssertionError (seen once in 4 runs of test_local_head)
            with contextlib.suppress(ValueError, AssertionError):
                ray.kill(ray.get_actor(name, namespace=NAMESPACE), no_restart=True)
    actor: Any = ray.remote(runner)  # Ray's stubs type it by arity, wrongly
    options = {"namespace": NAMESPACE, "lifetime": "detached", "get_if_exists": True, "num_cpus": 0}
    runners = [actor.options(name=n, max_restarts=-1, max_task_retries=0, **options).remote() for n in names]
    found: list[tuple[str, dict[str, JSON | str]]] = ray.get([r.ready.remote(list(planned)) for r in runners])
    if any(theirs != code or origins != planned for theirs, origins in found):
        for r in runners:
            ray.kill(r, no_restart=True)
        return None
    return runners


def busy(session_pids: list[int]) -> tuple[int, int]:
    """Of ``session_pids`` (the head's processes), how many are the pool's actors and how many of them run a chunk
    (Ray titles an actor's process ``ray::Runner`` and, while a method runs, ``ray::Runner.run``)."""
    actors = running = 0
    for pid in session_pids:
        with contextlib.suppress(OSError):
            title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
            actors += title.startswith(b"ray::Runner")
            running += title.startswith(b"ray::Runner.run")
    return actors, running
