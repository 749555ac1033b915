"""Fan-out: runs (simulations and offline-OPT instances) in chunks, one Ray task per chunk.

A chunk is sized by the estimated cost of its runs: one run per task until runs have been timed, then runs taken
in order while their estimated seconds (their cells, T x I x H, times the seconds per cell measured so far) stay
within ``CHUNK_SECONDS`` and within the work left shared by the tasks in flight (at most ``MAX_CHUNK`` runs; an OPT
solve always alone), so that tiny runs do not pay Ray's per-task cost each, a grid of mixed sizes gets chunks of
even duration, and progress and the tail stay fine-grained. Outcomes do not depend on the chunking.
A run that raises is caught inside its task and comes back as a ``failed`` outcome (deterministic: retrying
would raise again); the other runs of its chunk are unaffected. A task lost to a dead worker or node is retried
by Ray (``RETRIES``); a chunk still lost after that is split and its runs are tried again one per task, so that
only a run that kills its worker comes back as ``lost`` (which ``--resume`` runs again).
"""

from __future__ import annotations

import functools
import logging
import math
import os
import socket
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pipeline.execute.local_head import Head, client_env
from pipeline.spec.tasks import Outcome, Task

RETRIES = 3
CHUNK_SECONDS = 0.5  # run time of one Ray task once runs are timed: Ray's few ms per task become noise
MAX_CHUNK = 256


def execute(task: Task, schedules: bool = False) -> Outcome:
    """Run one task in the current process (the body of every Ray task); ``schedules``: keep a simulation's
    allocations."""
    import pdors
    from pdors.run import run
    from pipeline.spec import opt_task

    started = time.time()
    schedule = None
    try:
        if task.kind == "sim":
            done = run(dict(task.spec))
            result = done.summary.to_dict()
            if schedules:
                from pdors.schedule_io import rows

                schedule = {k: v.tolist() for k, v in rows(done.simulation.schedule).items()}
        else:
            result = opt_task.solve(dict(task.spec))
        status, error = "ok", None
    except Exception as e:  # recorded, and the sweep goes on
        result, status = None, "failed"
        error = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-3)}"
    node_id, node_ip = _node()
    return Outcome(
        status=status,
        error=error,
        result=result,
        code_version=pdors.version.CODE_VERSION,
        node_id=node_id,
        node_ip=node_ip,
        worker_pid=os.getpid(),
        started_at=started,
        finished_at=time.time(),
        schedule=schedule,
    )


def _node() -> tuple[str | None, str | None]:
    """The Ray node id and address of this process (None outside Ray)."""
    ray = sys.modules.get("ray")  # a Ray worker has imported it; importing it here would cost ~1 s in-process
    return _ray_node() if ray is not None and ray.is_initialized() else (None, None)


@functools.cache
def _ray_node() -> tuple[str, str]:
    """Looked up once per worker process: a worker never changes node."""
    import ray

    node_ip: Callable[[], str] = ray.util.get_node_ip_address  # untyped in Ray: typed here
    return ray.get_runtime_context().get_node_id(), node_ip()


def execute_chunk(tasks: list[Task], schedules: bool = False) -> list[Outcome]:
    """The body of every Ray task: ``tasks`` one after another, each outcome its own."""
    return [execute(task, schedules) for task in tasks]


@dataclass(frozen=True)
class Cluster:
    address: str  # "local" or the address connected to
    cpus: int
    nodes: int
    how: str = "started"  # "started": a Ray of this sweep's own; "head": the persistent local head; "cluster"


def probe(address: str, timeout: float = 5.0) -> None:
    """Fail fast, with one line, on a ``host:port`` nothing listens on (Ray itself waits and retries)."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto" and other forms Ray resolves itself
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as e:
        raise ConnectionError(f"--ray-address {address}: cannot connect ({e.strerror or e})") from None


# A local Ray on loopback only (docs/OPERATIONS.md lists its sockets): Ray turns a 127.0.0.1 node address into
# the outward interface's unless its single-machine mode is on, which this variable (read when ray is first
# imported, whatever its name says) switches on for Linux too; the metrics exporter (plain HTTP) is off, and the
# autoscaler's and dashboard's metrics servers (plain HTTP on fixed ports 44217 and 44227 in Ray 2.60, started even
# without a dashboard) are skipped by an out-of-range port: Ray logs the failed bind and goes on.
LOCAL_RAY_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "AUTOSCALER_METRIC_PORT": "65536",
    "DASHBOARD_METRIC_PORT": "65536",
}
LOCAL_RAY_INIT: dict[str, Any] = {
    "address": "local",
    "_node_ip_address": "127.0.0.1",
    "include_dashboard": False,
    "_system_config": {"enable_metrics_collection": False},
}


@contextmanager
def _environment(values: dict[str, str], replace: bool = False) -> Iterator[None]:
    """``values`` in this process's environment (where not set already, or over them with ``replace``) while the
    block runs, then as before again: ``import ray`` and the processes ``ray.init`` starts read them, and a
    caller's later subprocesses must not inherit them (a ``ray start`` given RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
    refuses to join a cluster)."""
    before = {key: os.environ.get(key) for key in values if replace or key not in os.environ}
    os.environ.update({key: values[key] for key in before})
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _forget_token() -> None:
    """Ray reads its auth token once per process: read it again, so that a sweep after one on the persistent head
    (another token) in the same process presents the token of the Ray it starts."""
    from ray import _raylet

    getattr(_raylet, "AuthenticationTokenLoader").instance().reset_cache()  # noqa: B009 (absent from Ray's stubs)


def connect(address: str | None, num_cpus: int | None = None, head: Head | None = None) -> Cluster:
    """Connect to the cluster at ``address``, to the persistent local ``head``, or start a local Ray on loopback
    with ``num_cpus`` CPUs (default: all)."""
    if head is not None:  # its token and loopback settings, in force over any the caller has
        with _environment(client_env(head), replace=True):
            import ray

            _forget_token()
            ray.init(address=head.address, _node_ip_address="127.0.0.1", logging_level=logging.WARNING)
    elif address:
        import ray

        probe(address)
        ray.init(address=address, logging_level=logging.WARNING)
    else:  # address="local": never a stale `ray start`
        with _environment(LOCAL_RAY_ENV):
            import ray

            _forget_token()
            ray.init(num_cpus=num_cpus, logging_level=logging.WARNING, **LOCAL_RAY_INIT)
    # untyped in Ray: typed here
    nodes: Callable[[], list[dict[str, Any]]] = ray.nodes
    resources: Callable[[], dict[str, float]] = ray.cluster_resources
    alive = [n for n in nodes() if n.get("Alive")]
    how = "head" if head is not None else "cluster" if address else "started"
    return Cluster(head.address if head else address or "local", int(resources().get("CPU", 1)), len(alive), how)


def cost(task: Task) -> float:
    """A run's estimated work in cells (T x I x H); an OPT solve's is unknown: infinite, so it goes alone."""
    if task.kind != "sim":
        return math.inf
    return float(task.spec["machines"] * task.spec["jobs"] * task.spec["slots"])


def take_chunk(pending: deque[Task], seconds_per_cell: float | None, pending_cells: float, slots: int) -> list[Task]:
    """The next chunk off ``pending``: one run until runs are timed (``seconds_per_cell`` None), else runs while
    their estimated seconds stay within ``CHUNK_SECONDS`` and the ``pending_cells`` left shared by ``slots``
    tasks in flight, at most ``MAX_CHUNK`` runs; always at least one, an OPT solve alone."""
    chunk = [pending.popleft()]
    if not seconds_per_cell or math.isinf(cost(chunk[0])):
        return chunk
    budget = min(CHUNK_SECONDS, seconds_per_cell * pending_cells / max(slots, 1))
    spent = seconds_per_cell * cost(chunk[0])
    budget *= 1 + 1e-9  # sums of equal costs land on the budget, not a rounding error above it
    while pending and len(chunk) < MAX_CHUNK and spent + seconds_per_cell * cost(pending[0]) <= budget:
        spent += seconds_per_cell * cost(pending[0])
        chunk.append(pending.popleft())
    return chunk


def fan_out(
    tasks: list[Task], cluster: Cluster, max_parallel: int | None, schedules: bool = False
) -> Iterator[list[tuple[Task, Outcome]]]:
    """Yield the (task, outcome) pairs of each chunk as it finishes on the ``connect``-ed cluster, keeping at
    most ``max_parallel`` chunks in flight (default: twice the cluster's CPUs, enough to keep every CPU busy);
    ``schedules``: keep each simulation's allocations. Ray is shut down at the end."""
    import ray
    from ray.exceptions import RayError

    try:
        remote: Any = ray.remote(max_retries=RETRIES)(execute_chunk)  # Ray's stubs type it by arity, wrongly
        limit = max_parallel or 2 * cluster.cpus
        pending, alone = deque(tasks), deque[Task]()  # alone: runs of a lost chunk, one per task
        in_flight: dict[ray.ObjectRef[list[Outcome]], tuple[list[Task], float]] = {}
        timed = [0.0, 0.0]  # seconds and cells of the simulations that finished
        left = [sum(c for c in map(cost, tasks) if not math.isinf(c))]  # cells of the simulations not submitted

        def submit() -> None:
            while len(in_flight) < limit and (alone or pending):
                if alone:
                    chunk = [alone.popleft()]
                else:
                    chunk = take_chunk(pending, timed[0] / timed[1] if timed[1] else None, left[0], limit)
                    left[0] -= sum(c for c in map(cost, chunk) if not math.isinf(c))
                in_flight[remote.remote(chunk, schedules)] = (chunk, time.time())

        submit()
        while in_flight:
            done, _ = ray.wait(list(in_flight), num_returns=1)
            chunk, submitted = in_flight.pop(done[0])
            try:
                outcomes = ray.get(done[0])
            except RayError as e:  # retries exhausted: worker/node died, object lost, ...
                if len(chunk) > 1:
                    alone.extend(chunk)
                    submit()
                    continue
                outcomes = [
                    Outcome(
                        status="lost",
                        error=f"{type(e).__name__}: {e}"[:4000],
                        result=None,
                        code_version=None,
                        node_id=None,
                        node_ip=None,
                        worker_pid=None,
                        started_at=submitted,
                        finished_at=time.time(),
                    )
                ]
            for task, outcome in zip(chunk, outcomes, strict=False):
                if outcome.status == "ok" and not math.isinf(cost(task)):
                    timed[0] += outcome.finished_at - outcome.started_at
                    timed[1] += cost(task)
            submit()
            yield list(zip(chunk, outcomes, strict=False))
    finally:
        ray.shutdown()


def disconnect() -> None:
    """Shut down a Ray ``connect``-ed to but not used (``fan_out`` shuts it down itself)."""
    import ray

    ray.shutdown()
