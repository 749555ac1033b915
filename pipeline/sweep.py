"""The sweep commands: run (expand -> Ray -> Parquet), status, list. Results are recorded in Parquet first;
everything after that (summary, plots, MLflow: :mod:`pipeline.publish.publish_run`) is derived and can be redone.

Runs are shared by every sweep under one output root (:mod:`pipeline.record.storage`): a sweep computes only the runs
no sweep recorded before it.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import shlex
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from pdors import atomic
from pdors.config import JSON, quote, to_dict
from pdors.errors import ExitStatus, SweepError
from pipeline.record import sweep_index
from pipeline.record.locate import NO_SWEEP_HINT, locate, sweeps_under
from pipeline.record.manifest import Manifest
from pipeline.record.provenance import git_commit, packages
from pipeline.record.storage import Damage, Index, Store, count, manifest_of, resume_command
from pipeline.spec import sizing
from pipeline.spec.tasks import Outcome, Plan, Task
from pipeline.text.credentials import one_line
from pipeline.text.screen import WIDTH, Lines, fit

if TYPE_CHECKING:  # executor imports Ray: only where a sweep runs on it
    from pipeline.execute.executor import Cluster
    from pipeline.spec.schema import SweepConfig

FLUSH_SECONDS = 2.0  # finished runs are recorded (one batch file per table) at least this often
STAGES = ("ray_start", "runs", "record", "report", "mlflow")  # the seconds printed by ``run`` (``pdors bench``)
RESUMABLE = ("mlflow", "report", "output")  # config fields a resumed sweep takes from the config given now

Say = Callable[[str], None]  # where a sweep's progress lines go


def silent(text: str) -> None:
    """The default progress: a library call prints nothing."""


def say_out(text: str) -> None:
    """The commands' progress: standard output, flushed line by line, each line fitted to a terminal's width
    (:func:`pipeline.text.screen.fit`)."""
    print("\n".join(fit(line) for line in text.split("\n")), flush=True)


@dataclass(frozen=True, kw_only=True)
class SweepOptions:
    """How :func:`run` runs a sweep config: the options of ``pdors sweep run`` (docs/PIPELINE.md).

    ``overrides``: ``KEY=VALUE`` (:func:`pipeline.spec.schema.apply_overrides`). ``dry_run``: print the plan and
    write nothing. ``in_process``: run the tasks one after another in this process, without Ray. ``num_cpus``:
    CPUs of the local Ray (default: all); a cluster's CPUs are its nodes'. ``max_run_memory``: GB a run may
    be estimated to need. ``max_tasks``: refuse a larger plan before expanding it."""

    out: str | None = None
    resume: bool = False
    max_parallel: int | None = None
    ray_address: str | None = None
    in_process: bool = False
    num_cpus: int | None = None
    overrides: Sequence[str] = ()
    dry_run: bool = False
    retry_failed: bool = False
    max_run_memory: float | None = None
    max_tasks: int = sizing.DEFAULT_MAX_TASKS  # a larger plan is refused before it is expanded


@dataclass(kw_only=True)
class SweepResult:
    """What :func:`run` (and :func:`~pipeline.publish.publish_run.publish_run` after it) did: its exit status,
    the tasks and what became of those it ran, and the seconds of each stage of ``STAGES``. ``recorded``: the runs were
    recorded to the end (not a dry run, not stopped), so the sweep can be published; ``again``: the command
    that continues it; ``comparison``: how to open the MLflow comparison page, once published."""

    status: int
    sweep_id: str
    root: Path
    tasks: int
    to_run: int
    again: str
    ran: int = 0
    failed: int = 0
    invalid: int = 0
    lost: int = 0
    run_seconds: float = 0.0  # running the tasks, after start-up
    stages: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    recorded: bool = False
    comparison: str | None = None
    runs_ended: float = 0.0  # when the last run came back (time.time())
    headline_shown: float = 0.0  # when the headline table was printed (time.time()), once published
    ray: str = ""  # how Ray was reached (executor.Cluster.how): "started", "head" or "cluster"; "": not used

    @property
    def runs_per_s(self) -> float | None:
        return self.ran / self.run_seconds if self.run_seconds > 0 else None


@dataclass(frozen=True)
class Ahead:
    """What publishing starts ahead of the runs so that it overlaps them
    (:func:`pipeline.publish.publish_run.run_and_publish`): ``checked(config)`` once the config is checked and
    there are runs to do, before Ray starts; ``waiting()`` once Ray is connected, when this process mostly waits
    for the runs' results."""

    checked: Callable[[SweepConfig], None]
    waiting: Callable[[], None]


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C."""


def _manifest(plan: Plan, config_path: str, overrides: Sequence[str], out: Path, commit: str) -> Manifest:
    c = plan.config
    return Manifest(
        sweep_id=plan.sweep_id,
        name=c.name,
        config_path=str(config_path),
        overrides=list(overrides),
        config=to_dict(c),
        axes=list(plan.axes),
        seeds=c.seed_list(),
        tasks=len(plan.tasks),
        run_ids=[t.run_id for t in plan.tasks],
        experiment=c.mlflow.experiment,
        mlflow=c.mlflow.enabled,
        output=str(out),
        git_commit=commit,
        packages=packages(),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def _check_output(root: Path) -> None:
    """The output root must be (or be creatable as) a directory."""
    for path in (root, *root.parents):
        if path.is_symlink() and not path.exists():  # dangling, or a loop of links
            raise SweepError(f"--out {root}: {path} is a symbolic link to nothing (dangling or a loop)")
        if path.exists():
            if not path.is_dir():
                raise SweepError(f"--out {root}: {path} is a file, not a directory")
            if not os.access(path, os.W_OK):
                raise SweepError(f"--out {root}: {path} is not writable")
            return


def _check_memory(plan: Plan, limit_gb: float | None, parallel: int) -> None:
    sims = [t.spec for t in plan.tasks if t.kind == "sim"]
    if sims:
        big = max(sims, key=lambda s: sizing.run_bytes(s["machines"], s["jobs"], s["slots"]))
        why = sizing.memory_problem(big["machines"], big["jobs"], big["slots"], limit_gb, parallel)
        if why is not None:
            raise SweepError(f"too large: {why}")


def _runs_to_do(store: Store, plan: Plan, retry_failed: bool) -> tuple[list[Task], list[Damage]]:
    """The plan's tasks no sweep under the root has recorded intact (lost ones, and failed ones with
    ``retry_failed``, again), and the damaged batches under the root (their runs count as not recorded)."""
    index = store.index()
    recorded = index.status()
    redo = {"lost", "failed", "invalid"} if retry_failed else {"lost"}
    return [t for t in plan.tasks if recorded.get(t.run_id, "lost") in redo], index.damaged


@contextmanager
def stops_recorded(result: SweepResult, say: Say, publish: str | None = None) -> Iterator[None]:
    """Ctrl-C, SIGTERM (handled as Ctrl-C) or a full disk inside: ``result.status`` says so and what finished
    stays recorded; any other error propagates. ``publish``: the block publishes a complete record, and this
    command publishes it later."""
    previous = signal.getsignal(signal.SIGTERM)

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise Terminated()

    signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    except (KeyboardInterrupt, OSError) as e:
        result.status = _stopped(e, result.again, result.root, say, publish)
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(
    config_path: str,
    options: SweepOptions = SweepOptions(),
    progress: Say | None = None,
    then: Callable[[SweepResult, Callable[[], None]], SweepResult] | None = None,
    ahead: Ahead | None = None,
) -> SweepResult:
    """``pdors sweep run`` up to its record: plan, run what is not recorded yet, record it. Its result's
    ``status`` is 0, or 4 the disk is full, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM); publishing
    (``then``: :func:`~pipeline.publish.publish_run.publish_run`, called under the root's lock, so that it reads
    the record as this sweep left it, with what to call once the headline is on screen: :class:`_Tidy`) decides
    the rest. Everything the user gave is checked before anything
    is written (a ``SweepError`` or ``ConfigError`` otherwise). ``config_path``: a sweep config, or a recorded
    sweep's directory (``<root>/sweeps/<id>``: its ``config.yaml``, else its manifest's config). ``progress``:
    where progress lines go (default: nowhere; with it, also a progress bar on standard error). ``ahead``: what
    publishing starts ahead of the runs."""
    o, overrides, say = options, list(options.overrides), progress or silent
    address = _ray_address(o)
    from pipeline.spec import grid, schema  # with pdors.run and the config schema: not for status, list or --help

    data = _config_data(config_path, overrides)
    with schema.blame(overrides):  # every spec validated: nothing is written before this
        plan = grid.expand(schema.parse(data, o.max_tasks))
    root = Path(o.out or plan.config.output)
    _check_output(root)
    store = Store(root, plan.sweep_id)
    store.check_links()
    _check_memory(plan, o.max_run_memory, _runs_at_once(o, address))
    todo, damaged = _runs_to_do(store, plan, o.retry_failed)
    again = _resume_hint(config_path, overrides, root, o)
    result = SweepResult(
        status=ExitStatus.OK, sweep_id=plan.sweep_id, root=root, tasks=len(plan.tasks), to_run=len(todo), again=again
    )
    if todo and address and not (o.in_process or o.dry_run):
        from pipeline.execute.executor import probe

        probe(address)  # one line, before anything is printed or written
    say(_plan_line(plan, todo, damaged))
    if o.dry_run:
        from pipeline.execute.estimate import describe

        say(describe(plan, todo, root, o.max_parallel, o.num_cpus, o.in_process or address is not None))
        return result
    if (store.meta / "manifest.json").exists() and not o.resume and (todo or damaged):
        raise SweepError(
            f"sweep {plan.sweep_id} already has results under {root}; pass --resume to continue "
            "it, or choose another --out"
        )
    manifest = _resumed_manifest(store, _manifest(plan, str(config_path), overrides, root, git_commit()), say)
    if todo and ahead is not None:
        ahead.checked(plan.config)
    cluster = _start_ray(address, o.num_cpus, result, say) if todo and not o.in_process else None
    result.ray = cluster.how if cluster is not None else ""
    if cluster is not None and ahead is not None:
        ahead.waiting()
    tidy = _Tidy(store, cluster, result, say)
    try:
        if cluster is not None:
            from pipeline.execute.executor import check_policies, external_origins

            if external := external_origins(todo):
                check_policies(external)  # one line, before anything is written, if a node has other code
        with stops_recorded(result, say), store.lock():
            _write_config(store, data, config_path, overrides, manifest)
            store.set_aside(damaged)
            _execute(store, todo, cluster, o.max_parallel, plan.config, result, say)
            result.recorded = True
            if then is not None:
                then(result, tidy)
            if result.status not in STOPPED:
                tidy()  # publishing did not (nothing to publish): done now
    finally:
        tidy.end()
    return result


STOPPED = (ExitStatus.DISK_FULL, ExitStatus.INTERRUPTED, ExitStatus.TERMINATED)


@dataclass
class _Tidy:
    """What a sweep whose runs are recorded leaves until its headline is on screen (``then``'s second argument), so that
    neither delays the headline: Ray's disconnection, in a thread (0.3 s from a persistent head, about 1 s to
    stop a Ray of the sweep's own; started before the headline, its Python part delayed it), and the record's
    compaction (0.1-0.6 s), which overlaps MLflow's logging; each done once."""

    store: Store
    cluster: Cluster | None
    result: SweepResult
    say: Say
    closing: threading.Thread | None = None
    done: bool = False

    def __call__(self) -> None:
        if self.done:
            return
        self.done = True
        if self.cluster is not None:
            from pipeline.execute import executor

            self.closing = threading.Thread(target=executor.disconnect, name="pdors-ray-disconnect")
            self.closing.start()
        tick = time.perf_counter()
        merged = self.store.compact()
        self.result.stages["record"] += time.perf_counter() - tick
        if merged:
            self.say(f"compacted {merged} batch files into one per table")

    def end(self) -> None:
        """Ray disconnected: the disconnection joined, or done now (the sweep stopped before its headline)."""
        if self.closing is not None:
            self.closing.join()
        elif self.cluster is not None:
            from pipeline.execute import executor

            executor.disconnect()


def _config_data(config_path: str, overrides: list[str]) -> JSON:
    """The config's data with ``overrides``: from a config file, or from a recorded sweep's directory (its
    ``config.yaml``, else the config its manifest recorded: a sweep stays resumable without its config files)."""
    from pipeline.spec import schema

    path = Path(config_path)
    if not path.is_dir():
        return schema.raw(path, overrides)
    if (path / "config.yaml").is_file():
        return schema.raw(path / "config.yaml", overrides)
    config: JSON = schema.apply_overrides(manifest_of(Store(path.parent.parent, path.name)).config, overrides)
    return config


def _ray_address(o: SweepOptions) -> str | None:
    """The Ray cluster to use (None: a local Ray), with --num-cpus refused for a cluster."""
    address = o.ray_address or os.environ.get("RAY_ADDRESS") or None
    if o.num_cpus is not None and address:
        raise SweepError("--num-cpus: applies to a local Ray only; a cluster's CPUs are set where its nodes start")
    return address


def _runs_at_once(o: SweepOptions, address: str | None) -> int:
    """How many runs share this machine's memory at once."""
    return 1 if o.in_process or address else o.num_cpus or os.cpu_count() or 1


def _resume_hint(config_path: str, overrides: list[str], root: Path, o: SweepOptions) -> str:
    """The command that continues this sweep, with the options that let it run as this one did."""
    how = [
        *(["--in-process"] if o.in_process else []),
        *(["--max-tasks", str(o.max_tasks)] if o.max_tasks != sizing.DEFAULT_MAX_TASKS else []),
        *(["--max-run-memory", str(o.max_run_memory)] if o.max_run_memory is not None else []),
    ]
    return shlex.join(["pdors", "sweep", "run", str(config_path), *overrides, "--out", str(root), "--resume", *how])


def _plan_line(plan: Plan, todo: list[Task], damaged: list[Damage]) -> str:
    sims = sum(t.kind == "sim" for t in plan.tasks)
    return (
        f"sweep {plan.sweep_id}: {len(plan.tasks)} tasks ({sims} simulations, {len(plan.tasks) - sims} OPT) over "
        f"{', '.join(plan.axes) or 'no grid axes'}; {len(plan.tasks) - len(todo)} already recorded, "
        f"{len(todo)} to run" + (f" ({len(damaged)} damaged batches set aside)" if damaged else "")
    )


def _start_ray(address: str | None, num_cpus: int | None, result: SweepResult, say: Say) -> Cluster:
    """Connect to the cluster at ``address``, else to the persistent local head (``pdors ray up``) unless
    ``num_cpus`` asks for a Ray of the sweep's own, else start a local Ray; an unreachable cluster fails here,
    before any write."""
    from pipeline.execute import executor, local_head

    head = local_head.find() if address is None and num_cpus is None else None
    if head is not None and not executor.head_usable(head):
        say("a local head is up, but this process's Ray runs without its token (imported before): a Ray of its own")
        head = None
    where = f"cluster at {address}" if address else f"local head at {head.address}" if head else "local"
    say(f"{'connecting to' if address or head else 'starting'} Ray ({where}) ...")
    started = time.perf_counter()
    cluster = executor.connect(address, num_cpus, head)
    result.stages["ray_start"] += time.perf_counter() - started
    say(
        f"Ray: {cluster.address}, {cluster.nodes} node(s), {cluster.cpus} CPU(s); "
        f"{'started' if cluster.how == 'started' else 'connected'} in "
        f"{time.perf_counter() - started:.1f} s"
    )
    return cluster


def _stopped(e: KeyboardInterrupt | OSError, again: str, root: Path, say: Say, publish: str | None = None) -> int:
    """The exit status of a sweep stopped by Ctrl-C, SIGTERM or a full disk (what finished is recorded;
    ``publish``: while publishing, with this command to publish later); any other error is raised again."""
    if isinstance(e, KeyboardInterrupt) and publish:
        say(
            f"\n{'terminated' if isinstance(e, Terminated) else 'interrupted'} while publishing: every run is "
            f"recorded and kept; publish later with `{publish}`"
        )
    elif isinstance(e, KeyboardInterrupt):
        say(
            f"\n{'terminated' if isinstance(e, Terminated) else 'interrupted'}: finished runs are recorded; "
            f"continue with `{again}`"
        )
    if isinstance(e, KeyboardInterrupt):
        return ExitStatus.TERMINATED if isinstance(e, Terminated) else ExitStatus.INTERRUPTED
    if e.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):  # no space, quota, file size limit
        raise e
    say(
        f"disk full writing under {root} ({e.strerror or one_line(e)}): what was written before is kept "
        f"intact; free space and continue with `{again}`"
    )
    return ExitStatus.DISK_FULL


def _resumed_manifest(store: Store, fresh: Manifest, say: Say) -> Manifest:
    """The manifest a run continues with: ``fresh`` for a new sweep; for a resumed one its recorded manifest,
    with the config fields that may change (``RESUMABLE``) taken from ``fresh`` and the change recorded under
    ``resumed``. Any other difference is refused: the sweep id fixes the runs, not every field (a resumed sweep
    cannot start recording schedules, say), and the recorded config must never claim what did not happen."""
    path = store.meta / "manifest.json"
    if not path.exists():
        return fresh
    try:
        old = manifest_of(store)
    except SweepError as e:  # unreadable: it is rebuilt from the config, which determines it
        say(f"{e}: rebuilding it from the config")
        return fresh
    if old.run_ids != fresh.run_ids:  # edited or damaged: the config given now determines the runs
        say(f"{store.meta / 'manifest.json'} lists other runs than its config plans: rebuilding it from the config")
        return fresh
    recorded, now = old.config, fresh.config
    changed = [k for k in now if k in recorded and now[k] != recorded[k]]
    for key in changed:
        if key not in RESUMABLE:
            raise SweepError(
                f"--resume: {key} is {quote(now[key])}, but sweep {store.sweep_id} recorded {quote(recorded[key])}; "
                f"a resumed sweep keeps it (only {', '.join(RESUMABLE)} may change): drop the change, or start "
                "a new sweep under another --out"
            )
    if not changed:
        return old
    say(f"resuming with changed {', '.join(changed)} (recorded in the manifest)")
    return dataclasses.replace(
        old,
        config={**recorded, **{k: now[k] for k in changed}},
        experiment=fresh.experiment,
        mlflow=fresh.mlflow,
        output=fresh.output,
        resumed=[
            *old.resumed,
            {"at": fresh.created_at, "overrides": fresh.overrides, "changed": {k: now[k] for k in changed}},
        ],
    )


def _write_config(store: Store, data: JSON, config_path: str, overrides: list[str], manifest: Manifest) -> None:
    """The sweep's config as given and its manifest, the manifest last: a sweep is resumable once it exists."""
    import yaml

    header = f"# {config_path}" + (f" with {shlex.join(overrides)}" if overrides else "") + "\n"
    atomic.write(store.meta / "config.yaml", header + yaml.safe_dump(data, sort_keys=False))
    atomic.write(store.meta / "manifest.json", manifest.to_json())
    sweep_index.remember(store.root)  # found by `sweep status|list` wherever --out put it


def _execute(
    store: Store,
    todo: list[Task],
    cluster: Cluster | None,
    max_parallel: int | None,
    config: SweepConfig,
    result: SweepResult,
    say: Say,
) -> None:
    """Run ``todo`` on the connected ``cluster`` (None: in this process, one by one) and record each outcome,
    counted in ``result``; ``config``'s ``schedules``: also each simulation's allocations, its ``run_time_limit``:
    the seconds a simulation may take."""
    if not todo:
        return
    from tqdm import tqdm

    from pipeline.execute.executor import execute, fan_out

    commit = git_commit()
    if cluster is None:
        say("running in this process, without Ray ...")
    tally = {"ok": 0, "failed": 0, "invalid": 0, "lost": 0}
    tty = sys.stderr.isatty()
    bar = tqdm(
        total=len(todo),
        unit="run",
        file=sys.stderr if tty else Lines(sys.stderr),
        mininterval=0.5 if tty else 10,
        dynamic_ncols=tty,
        ncols=None if tty else WIDTH,
        disable=say is silent,
    )
    started = flushed = time.perf_counter()
    writing = 0.0
    pending: list[tuple[Task, Outcome]] = []  # finished, not yet recorded: a kill loses at most FLUSH_SECONDS of runs
    try:
        chunks = (
            ([(t, execute(t, config.schedules, config.run_time_limit))] for t in todo)
            if cluster is None
            else fan_out(todo, cluster, max_parallel, config.schedules, config.run_time_limit)
        )
        for chunk in chunks:
            pending += chunk
            for _, outcome in chunk:
                tally[outcome.status] += 1
            bar.set_postfix(
                ok=tally["ok"],
                failed=tally["failed"] + tally["invalid"] + tally["lost"],
                left=len(todo) - sum(tally.values()),
                refresh=False,
            )
            bar.update(len(chunk))
            result.runs_ended = time.time()
            if time.perf_counter() - flushed >= FLUSH_SECONDS:
                tick = time.perf_counter()
                store.write(pending, commit)
                pending, flushed = [], time.perf_counter()
                writing += flushed - tick
    finally:
        bar.close()
        tick = time.perf_counter()
        store.write(pending, commit)  # also on Ctrl-C and SIGTERM: what finished is recorded
        writing += time.perf_counter() - tick
    done, seconds = sum(tally.values()), time.perf_counter() - started
    result.ran, result.failed, result.lost, result.run_seconds = done, tally["failed"], tally["lost"], seconds
    result.invalid = tally["invalid"]
    result.stages["runs"] += seconds - writing
    result.stages["record"] += writing
    say(
        f"ran {done} tasks in {seconds:.1f} s after start-up ({done / seconds:.2f} runs/s); "
        f"{tally['failed']} failed, {tally['invalid']} invalid, {tally['lost']} lost"
    )


def status(target: str | None, out: str | None, overrides: Sequence[str] = (), say: Say = say_out) -> int:
    """``pdors sweep status``: progress and integrity of sweeps (a config, a sweep id, a directory, or the
    latest sweep); 0 if every record is intact, 1 if some are damaged (with how to repair). Reads the runs
    files' run_id, status, kind, jobs and node_ip columns and the jobs files' footers, never a job row; says
    how many runs each node ran."""
    code = ExitStatus.OK
    indexes: dict[Path, Index] = {}
    for store in locate(target, out, overrides):
        manifest = manifest_of(store)
        index = indexes.setdefault(store.root, store.index())
        counts = count(manifest, index.status())
        damaged = index.damaged
        say(
            f"{store.sweep_id} ({store.root}): {counts.total} tasks, {counts.ok} ok, {counts.failed} failed, "
            f"{counts.invalid} invalid, {counts.lost} lost, {counts.remaining} not run; "
            + (f"{len(damaged)} damaged batches" if damaged else "records intact")
            + (f"; {index.unsealed} batches older than digests (trusted: read unchecked)" if index.unsealed else "")
        )
        nodes = runs_by_node(index, manifest.run_ids)
        if nodes:
            say("  ran on: " + ", ".join(f"{ip}: {n} runs" for ip, n in nodes.items()))
        again = resume_command(store)
        mine = set(manifest.run_ids)
        for d in damaged[:10]:
            held = f"{len(d.run_ids)} runs, {len(mine.intersection(d.run_ids))} of this sweep's" if d.run_ids else ""
            say(f"  damaged: {store.root / 'runs' / d.batch}.parquet ({held or 'its runs unknown'}): {d.problem}")
        if damaged:
            say(f"  repair: `{again}` sets the damaged batches aside and recomputes their runs")
            code = ExitStatus.FAILED
        if counts.failed or counts.invalid:
            say(f"  rerun the failed and invalid runs: `{again} --retry-failed`")
        elif (counts.lost or counts.remaining) and not damaged:
            say(f"  continue: `{again}`")
    return code


def runs_by_node(index: Index, run_ids: list[str]) -> dict[str, int]:
    """Node address -> how many of the recorded ``run_ids`` it ran (``in-process``: run without Ray)."""
    ran = Counter(index.node[r] or "in-process" for r in run_ids if r in index.chosen)
    return dict(sorted(ran.items()))


def list_sweeps(out: str | None, say: Say = say_out) -> int:
    """``pdors sweep list``: every sweep under the output root (or under ``results/``), oldest first."""
    stores = sweeps_under(out)
    if not stores:
        raise SweepError(f"no sweeps under {out or 'results/'}; {NO_SWEEP_HINT}")
    recorded: dict[Path, dict[str, str]] = {}
    for store in stores:
        manifest = manifest_of(store)
        have = recorded.setdefault(store.root, store.recorded())  # run_id and status columns only
        states = [have.get(r) for r in manifest.run_ids]
        say(
            f"{manifest.created_at or '?':<25} {store.sweep_id:<32} {len(states):>6} tasks "
            f"{states.count('ok'):>6} ok {states.count('failed'):>4} failed {states.count('invalid'):>4} invalid "
            f"{states.count('lost'):>4} lost "
            f"{states.count(None):>6} not run  {store.root}"
        )
    return ExitStatus.OK
