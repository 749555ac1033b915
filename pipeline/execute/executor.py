"""Fan-out: runs (simulations and offline-OPT instances) in chunks, one Ray task per chunk.

A chunk is sized by the estimated cost of its runs: one run per task until runs have been timed, then runs taken
in order while their estimated seconds (their cells, T x I x H, times the seconds per cell measured so far) stay
within ``CHUNK_SECONDS`` and within the work left shared by the tasks in flight (at most ``MAX_CHUNK`` runs; an OPT
solve always alone), so that tiny runs do not pay Ray's per-task cost each, a grid of mixed sizes gets chunks of
even duration, and progress and the tail stay fine-grained. Outcomes do not depend on the chunking.
A run that raises is caught inside its task and comes back as a ``failed`` outcome (deterministic: retrying
would raise again); the other runs of its chunk are unaffected. A simulation whose schedule the validator rejects
comes back ``invalid`` (its summary kept, its violations counted in ``error``): never ``ok``, never ranked. A task
lost to a dead worker or node is retried by Ray (``RETRIES``); a chunk still lost after that is split and its runs
are tried again one per task, so that only a run that kills its worker comes back as ``lost`` (which ``--resume``
runs again). On the persistent local head the chunks run on reused workers instead (:mod:`pipeline.execute.pool`).
"""

from __future__ import annotations

import functools
import logging
import math
import os
import signal
import socket
import stat
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from pdors.config import JSON
from pipeline.execute import pool
from pipeline.execute.local_head import Head, client_env
from pipeline.spec.tasks import Outcome, Task, TaskSpec, same_but_seed

if TYPE_CHECKING:  # pdors.run imports NumPy and the policies: only inside a task
    from pdors.model import Instance
    from pdors.run import RunSpec
    from pdors.workload import Drawn, WorkloadConfig

    # a chunk's instances as drawn, by what determines them apart from the cluster's size (workload, I, T, seed)
    DrawnCache = dict[tuple[WorkloadConfig, int, int, int], Drawn]

RETRIES = 3
CHUNK_SECONDS = 0.5  # run time of one Ray task once runs are timed: Ray's few ms per task become noise
MAX_CHUNK = 256


class RunTimeLimit(Exception):
    """A run went on past the sweep's ``run_time_limit``: stopped, and recorded as failed (never as a result)."""


@contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`RunTimeLimit` in the block once ``seconds`` of wall time have passed (a hanging policy's
    run); no limit with None, or off the main thread (where Python delivers no signal)."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        raise RunTimeLimit(f"stopped after {seconds:g} s (the sweep's run_time_limit)")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def execute(
    task: Task,
    schedules: bool = False,
    time_limit: float | None = None,
    specs: dict[str, tuple[TaskSpec, RunSpec]] | None = None,
    drawn: DrawnCache | None = None,
) -> Outcome:
    """Run one task in the current process (the body of every Ray task); ``schedules``: keep a simulation's
    allocations; ``time_limit``: seconds a simulation may take before it is stopped and recorded as failed;
    ``specs``: the checked spec of each grid point met so far (:func:`execute_chunk`), added to; ``drawn``: the
    generated instances drawn so far (:func:`execute_chunk`), added to."""
    import pdors
    from pdors.run import run_checked
    from pipeline.spec import opt_task

    started = time.time()
    schedule = None
    try:
        status, error = "ok", None
        if task.kind == "sim":
            with _time_limit(time_limit):
                spec = _spec(task, {} if specs is None else specs)
                done = run_checked(spec, None if drawn is None else _instance(spec, drawn))
            result = done.summary.to_dict()
            if done.validation.violations:
                status, error = "invalid", invalid_error(done.summary.violations)
            if schedules:
                from pdors.schedule_io import rows

                schedule = {k: v.tolist() for k, v in rows(done.simulation.schedule).items()}
        else:
            result = opt_task.solve(dict(task.spec))
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


def invalid_error(violations: list[dict[str, Any]]) -> str:
    """The one-line ``error`` of an ``invalid`` run: how many violations, and the first."""
    first = violations[0]
    return f"{len(violations)} validator violation(s); first: {first['kind']}: {first['detail']}"


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


def _spec(task: Task, specs: dict[str, tuple[TaskSpec, RunSpec]]) -> RunSpec:
    """A simulation's checked spec: built for the first run of its grid point met in ``specs`` (its ``point_id``,
    its spec's data and the spec), re-seeded for the point's other runs (a build costs as much as a tiny run's
    policy)."""
    from pdors.config import build
    from pdors.run import RunSpec, reseeded

    point = specs.get(task.point_id)
    if point is not None and same_but_seed(point[0], task.spec):
        return point[1] if point[1].seed == task.spec["seed"] else reseeded(point[1], task.spec["seed"])
    spec = build(RunSpec, dict(task.spec))
    specs[task.point_id] = (task.spec, spec)
    return spec


def _instance(spec: RunSpec, drawn: DrawnCache) -> Instance | None:
    """A generated instance of ``spec``, its jobs drawn once for every cluster size and policy of the chunk that
    uses them (the plan puts one seed's runs together: pipeline.spec.grid), the very instance ``generate`` gives;
    None for an instance file (read by the run)."""
    if spec.instance_file:
        return None
    from pdors.workload import draw

    key = (spec.workload, spec.jobs, spec.slots, spec.seed)
    if key not in drawn:
        if drawn and next(iter(drawn))[3] != spec.seed:  # a seed's runs come together in the plan: its last is done
            drawn.clear()
        drawn[key] = draw(*key)
    return drawn[key].on(spec.machines)


def execute_chunk(tasks: list[Task], schedules: bool = False, time_limit: float | None = None) -> list[Outcome]:
    """The body of every Ray task: ``tasks`` one after another, each outcome its own."""
    specs: dict[str, tuple[TaskSpec, RunSpec]] = {}
    drawn: DrawnCache = {}
    return [execute(task, schedules, time_limit, specs, drawn) for task in tasks]


def origins_here(policies: list[str]) -> dict[str, JSON | str]:
    """Each external policy's origin as this process finds it, or why it cannot find it (one line)."""
    from pdors.config import to_dict
    from pdors.errors import InputError
    from pdors.policies import resolve

    out: dict[str, JSON | str] = {}
    for name in policies:
        try:
            out[name] = to_dict(resolve(name).origin)
        except InputError as e:
            out[name] = str(e)
    return out


def check_policies(planned: dict[str, JSON]) -> None:
    """Every node of the connected cluster finds each external policy (name -> origin the sweep planned) with the
    same origin: else ``SweepError`` naming the node and the difference, before any run starts (the policy reaches
    the nodes installed there: docs/WRITE_A_POLICY.md)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from pdors.errors import SweepError

    probe: Any = ray.remote(num_cpus=0)(origins_here)
    nodes: Callable[[], list[dict[str, Any]]] = ray.nodes  # untyped in Ray: typed here
    alive = [n for n in nodes() if n.get("Alive")]
    strategy = NodeAffinitySchedulingStrategy
    refs = [
        (
            n["NodeManagerAddress"],
            probe.options(scheduling_strategy=strategy(n["NodeID"], soft=False)).remote(list(planned)),
        )
        for n in alive
    ]
    for address, ref in refs:
        found: dict[str, JSON | str] = ray.get(ref)
        for name, origin in planned.items():
            here = found[name]
            if here != origin:
                why = here if isinstance(here, str) else f"version {here['version']} source {here['digest']}"
                raise SweepError(
                    f"policy {name}: node {address} has {why}, the sweep planned version {origin['version']} source "
                    f"{origin['digest']}; install the same {origin['distribution'] or origin['target']} on every node"
                )


class Runner:
    """One reused worker process: the body of every chunk of a sweep on the head (as a Ray actor)."""

    def __init__(self) -> None:
        self.code = pool.source_digest()

    def ready(self, policies: list[str]) -> tuple[str, dict[str, JSON | str]]:
        """The source digest this actor runs and each external policy's origin as it finds it."""
        return self.code, origins_here(policies)

    def run(self, driver: int, tasks: list[Task], schedules: bool, time_limit: float | None) -> list[Outcome]:
        """:func:`execute_chunk`, stopped if process ``driver`` (the sweep) ends first."""
        with pool.orphaned(driver):
            return execute_chunk(tasks, schedules, time_limit)


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


def token_path() -> Path:
    """Ray's token file: ``RAY_AUTH_TOKEN_PATH``, else ``~/.ray/auth_token``."""
    return Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token")


@contextmanager
def _private_token() -> Iterator[None]:
    """Ray's token file readable by its owner only, and ``~/.ray`` too (Ray 2.60 writes a new token 0644 in a
    0755 ``~/.ray``): the directory is made 0700 before Ray runs, what Ray creates meanwhile is created
    without group or other access (umask 077), and a token or ``~/.ray`` of ours left readable is tightened."""
    path = token_path()
    default = path.parent == Path.home() / ".ray"
    if default:
        path.parent.mkdir(mode=0o700, exist_ok=True)
    previous = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(previous)
        for p, mode in ((path, 0o600), *([(path.parent, 0o700)] if default else [])):
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if st.st_uid == os.getuid() and not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o077:
                os.chmod(p, mode)


# Ray's notice that the local Ray it starts has token authentication on (its default, kept): a 245-column warning
# whose only advice is to turn that protection off. (logger, message start)
TOKEN_NOTICE = ("ray._private.authentication.authentication_token_setup", "Token authentication is enabled")


@contextmanager
def _without(notice: tuple[str, str]) -> Iterator[None]:
    """Records of logger ``notice[0]`` starting with ``notice[1]`` dropped while the block runs."""
    logger = logging.getLogger(notice[0])

    def keep(record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(notice[1])

    logger.addFilter(keep)
    try:
        yield
    finally:
        logger.removeFilter(keep)


def _forget_token() -> None:
    """Ray reads its auth token once per process: read it again, so that a sweep after one on the persistent head
    (another token) in the same process presents the token of the Ray it starts."""
    from ray import _raylet

    getattr(_raylet, "AuthenticationTokenLoader").instance().reset_cache()  # noqa: B009 (absent from Ray's stubs)


@contextmanager
def _loopback_address() -> Iterator[None]:
    """While it is in force, Ray keeps a 127.0.0.1 bootstrap address as it is. Ray replaces a loopback address by
    the machine's own IP unless ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, which it reads once, when first imported:
    a process that imported Ray before (a notebook, an earlier sweep) would dial the head, which listens on loopback
    only, at the machine's IP and never reach it. So the flag Ray read is set for the connection itself."""
    from ray._private import ray_constants

    read = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = read


def head_usable(head: Head) -> bool:
    """Whether this process can connect to ``head``: Ray reads its authentication mode once per process, so a
    process whose Ray already runs without tokens (Ray imported and used before, as in a notebook) cannot reach a
    token-protected head; its sweep then starts a Ray of its own."""
    with _environment(client_env(head), replace=True):
        from ray._private.authentication.authentication_utils import is_token_auth_enabled

        return bool(is_token_auth_enabled())


def connect(address: str | None, num_cpus: int | None = None, head: Head | None = None) -> Cluster:
    """Connect to the cluster at ``address``, to the persistent local ``head``, or start a local Ray on loopback
    with ``num_cpus`` CPUs (default: all); the token file stays private (:func:`_private_token`)."""
    if head is not None:  # its token and loopback settings, in force over any the caller has
        with _environment(client_env(head), replace=True), _loopback_address():
            import ray

            _forget_token()
            ray.init(address=head.address, _node_ip_address="127.0.0.1", logging_level=logging.WARNING)
    elif address:
        import ray

        probe(address)
        with _private_token():
            ray.init(address=address, logging_level=logging.WARNING)
    else:  # address="local": never a stale `ray start`
        with _environment(LOCAL_RAY_ENV), _without(TOKEN_NOTICE), _private_token():
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


def external_origins(tasks: list[Task]) -> dict[str, JSON]:
    """Each external policy of ``tasks`` -> its origin as planned."""
    return {t.policy: t.spec["origin"] for t in tasks if "origin" in t.spec}


def fan_out(
    tasks: list[Task],
    cluster: Cluster,
    max_parallel: int | None,
    schedules: bool = False,
    time_limit: float | None = None,
) -> Iterator[list[tuple[Task, Outcome]]]:
    """Yield the (task, outcome) pairs of each chunk as it finishes on the ``connect``-ed cluster, keeping at
    most ``max_parallel`` chunks in flight (default: twice the cluster's CPUs, enough to keep every CPU busy);
    ``schedules``: keep each simulation's allocations. On the persistent local head the chunks go to the reused
    workers of :mod:`pipeline.execute.pool` (the fewest chunks in flight first), elsewhere each is a Ray task;
    the runs of a chunk whose worker died go one per task. Ray stays up (:func:`disconnect`)."""
    import ray
    from ray.exceptions import RayError

    remote: Any = ray.remote(max_retries=RETRIES)(execute_chunk)  # Ray's stubs type it by arity, wrongly
    runners = (pool.acquire(Runner, cluster.cpus, external_origins(tasks)) if cluster.how == "head" else None) or []
    load = dict.fromkeys(range(len(runners)), 0)  # chunks in flight per runner
    limit = max_parallel or 2 * cluster.cpus
    pending, alone = deque(tasks), deque[Task]()  # alone: runs of a lost chunk, one per task
    in_flight: dict[ray.ObjectRef[list[Outcome]], tuple[list[Task], float, int | None]] = {}  # chunk, when, runner
    timed = [0.0, 0.0]  # seconds and cells of the simulations that finished
    left = [sum(c for c in map(cost, tasks) if not math.isinf(c))]  # cells of the simulations not submitted

    def submit() -> None:
        while len(in_flight) < limit and (alone or pending):
            if alone:
                chunk, ref, on = [alone.popleft()], None, None
            else:
                chunk = take_chunk(pending, timed[0] / timed[1] if timed[1] else None, left[0], limit)
                left[0] -= sum(c for c in map(cost, chunk) if not math.isinf(c))
                on = min(load, key=load.__getitem__) if load else None
            if on is None:
                ref = remote.remote(chunk, schedules, time_limit)
            else:
                ref, load[on] = runners[on].run.remote(os.getpid(), chunk, schedules, time_limit), load[on] + 1
            in_flight[ref] = (chunk, time.time(), on)

    submit()
    try:
        while in_flight:
            done, _ = ray.wait(list(in_flight), num_returns=1)
            chunk, submitted, on = in_flight.pop(done[0])
            if on in load:
                load[on] -= 1
            try:
                outcomes = ray.get(done[0])
            except RayError as e:  # a runner died, or a task's retries are exhausted: worker/node died, object lost
                if on is not None:  # no more chunks to it in this sweep: it may be gone for good (other code's sweep)
                    load.pop(on, None)
                if len(chunk) > 1 or on is not None:
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
    finally:  # stopped early (Ctrl-C, an error): runs in flight on reused workers are stopped, as Ray stops a
        # finished job's tasks; Ray restarts those workers (a driver gone meanwhile: pool.orphaned stops them)
        for on in {on for _, _, on in in_flight.values() if on is not None} if ray.is_initialized() else ():
            ray.kill(runners[on], no_restart=False)


def disconnect() -> None:
    """Shut down the Ray ``connect``-ed to, once the sweep no longer needs it: in a thread once its headline is
    shown (:class:`pipeline.sweep._Tidy`), so that Ray's shutdown (about a second for a Ray of the sweep's own)
    neither counts as running the runs nor delays the headline table."""
    import ray

    ray.shutdown()
