"""Fan-out: one Ray task per simulation run and per offline-OPT instance.

A run that raises is caught inside its task and comes back as a ``failed`` outcome (deterministic: retrying
would raise again). A task lost to a dead worker or node is retried by Ray (``RETRIES``); one still lost after
that comes back as ``lost``, which ``--resume`` runs again.
"""
from __future__ import annotations

import os
import socket
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass

from .tasks import Outcome, Task

RETRIES = 3


def execute(task: Task, schedules: bool = False) -> Outcome:
    """Run one task in the current process (the body of every Ray task); ``schedules``: keep a simulation's
    allocations."""
    import pdors
    from pdors.run import run

    from . import opt

    started = time.time()
    schedule = None
    try:
        if task.kind == "sim":
            done = run(task.spec)
            result = done.summary.to_dict()
            if schedules:
                from pdors.schedule_io import rows

                schedule = {k: v.tolist() for k, v in rows(done.simulation.schedule).items()}
        else:
            result = opt.solve(task.spec)
        status, error = "ok", None
    except Exception as e:   # recorded, and the sweep goes on
        result, status = None, "failed"
        error = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-3)}"
    node_id = node_ip = None
    try:
        import ray

        if ray.is_initialized():
            node_id = ray.get_runtime_context().get_node_id()
            node_ip = ray.util.get_node_ip_address()
    except ImportError:
        pass
    return Outcome(status, error, result, pdors.__version__, node_id, node_ip, os.getpid(), started, time.time(),
                   schedule)


@dataclass(frozen=True)
class Cluster:
    address: str        # "local" or the address connected to
    cpus: int
    nodes: int


def probe(address: str, timeout: float = 5.0) -> None:
    """Fail fast, with one line, on a ``host:port`` nothing listens on (Ray itself waits and retries)."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return   # "auto" and other forms Ray resolves itself
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as e:
        raise ConnectionError(f"--ray-address {address}: cannot connect ({e.strerror or e})") from None


# A local Ray on loopback only (docs/OPERATIONS.md lists its sockets): Ray turns a 127.0.0.1 node address into
# the outward interface's unless its single-machine mode is on, which this variable (read when ray is first
# imported, whatever its name says) switches on for Linux too; the metrics exporter (plain HTTP) is off.
LOCAL_RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
LOCAL_RAY_INIT = {"address": "local", "_node_ip_address": "127.0.0.1", "include_dashboard": False,
                  "_system_config": {"enable_metrics_collection": False}}


def connect(address: str | None, num_cpus: int | None = None) -> Cluster:
    """Connect to the cluster at ``address``, or start a local Ray on loopback with ``num_cpus`` CPUs
    (default: all)."""
    if not address:
        for key, value in LOCAL_RAY_ENV.items():
            os.environ.setdefault(key, value)
    import ray

    if address:
        probe(address)
        ray.init(address=address, logging_level="WARNING")
    else:   # address="local": never a stale `ray start`
        ray.init(num_cpus=num_cpus, logging_level="WARNING", **LOCAL_RAY_INIT)
    alive = [n for n in ray.nodes() if n.get("Alive")]
    return Cluster(address or "local", int(ray.cluster_resources().get("CPU", 1)), len(alive))


def fan_out(tasks: list[Task], cluster: Cluster, max_parallel: int | None,
            schedules: bool = False) -> Iterator[tuple[Task, Outcome]]:
    """Yield (task, outcome) as tasks finish on the ``connect``-ed cluster, keeping at most ``max_parallel`` in
    flight (default: twice the cluster's CPUs, enough to keep every CPU busy); ``schedules``: keep each
    simulation's allocations. Ray is shut down at the end."""
    import ray
    from ray.exceptions import RayError

    try:
        remote = ray.remote(max_retries=RETRIES)(execute)
        limit = max_parallel or 2 * cluster.cpus
        pending = iter(tasks)
        in_flight: dict = {}

        def submit() -> None:
            for task in pending:
                in_flight[remote.remote(task, schedules)] = (task, time.time())
                if len(in_flight) >= limit:
                    return

        submit()
        while in_flight:
            done, _ = ray.wait(list(in_flight), num_returns=1)
            task, submitted = in_flight.pop(done[0])
            try:
                outcome = ray.get(done[0])
            except RayError as e:   # retries exhausted: worker/node died, object lost, ...
                outcome = Outcome("lost", f"{type(e).__name__}: {e}"[:4000], None, None, None, None, None,
                                  submitted, time.time())
            yield task, outcome
            submit()
    finally:
        ray.shutdown()


def disconnect() -> None:
    """Shut down a Ray ``connect``-ed to but not used (``fan_out`` shuts it down itself)."""
    import ray

    ray.shutdown()
