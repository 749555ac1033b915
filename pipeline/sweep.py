"""The sweep commands: run (expand -> Ray -> Parquet -> summary, plots, MLflow), log (re-log from Parquet),
status, list. Results are recorded in Parquet first; everything after that is derived and can be redone.

Runs are shared by every sweep under one output root (:mod:`pipeline.storage`): a sweep computes only the runs
no sweep recorded before it.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import shlex
import signal
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import yaml

from pdors import atomic
from pdors.config import quote, to_dict

from . import grid, schema, sizing
from .credentials import one_line
from .locate import locate, sweeps_under
from .manifest import Manifest
from .provenance import git_commit, packages
from .storage import Damage, Index, Store, SweepError, count, manifest_of, resume_command
from .tasks import Plan, Task

if TYPE_CHECKING:  # executor imports Ray: only where a sweep runs on it
    from .executor import Cluster

# Exit status of ``pdors sweep run`` (docs/PIPELINE.md).
OK, RUNS_FAILED, BAD_INPUT, MLFLOW_FAILED, DISK_FULL, INTERRUPTED, TERMINATED = 0, 1, 2, 3, 4, 130, 143
FLUSH_SECONDS = 2.0  # finished runs are recorded (one batch file per table) at least this often
STAGES = ("ray_start", "runs", "record", "report", "mlflow")  # the seconds printed by ``run`` (``pdors bench``)
_stages: dict[str, float] = {}
RESUMABLE = ("mlflow", "report", "output")  # config fields a resumed sweep takes from the config given now
_footer: list[str] = []  # printed last, after the stage timings: the MLflow comparison URL


def _stage(name: str, seconds: float) -> None:
    _stages[name] = _stages.get(name, 0.0) + seconds


@dataclass(frozen=True)
class SweepOptions:
    """How :func:`run` runs a sweep config: the options of ``pdors sweep run`` (docs/PIPELINE.md).

    ``overrides``: ``KEY=VALUE`` (:func:`pipeline.schema.apply_overrides`). ``dry_run``: print the plan and
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
    max_tasks: int = schema.DEFAULT_MAX_TASKS  # a larger plan is refused before it is expanded


@dataclass
class SweepResult:
    """What :func:`run` did: its exit status, the tasks and what became of those it ran, and the seconds
    of each stage of ``STAGES``."""

    status: int
    sweep_id: str
    root: Path
    tasks: int
    to_run: int
    ran: int = 0
    failed: int = 0
    lost: int = 0
    run_seconds: float = 0.0  # running the tasks, after start-up
    stages: dict[str, float] = field(default_factory=dict)

    @property
    def runs_per_s(self) -> float | None:
        return self.ran / self.run_seconds if self.run_seconds > 0 else None


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


def _say(text: str = "") -> None:
    print(text, flush=True)


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
    redo = {"lost", "failed"} if retry_failed else {"lost"}
    return [t for t in plan.tasks if recorded.get(t.run_id, "lost") in redo], index.damaged


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    previous = signal.getsignal(signal.SIGTERM)

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise Terminated()

    signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(config_path: str, options: SweepOptions = SweepOptions()) -> SweepResult:
    """``pdors sweep run``; its result's ``status`` is the exit status (module constants): 0 all ok, 1 some runs
    failed or were lost (or a policy earned more than its instance's OPT allows beyond the gap),
    3 every run ok but MLflow logging failed (``pdors sweep log`` redoes it), 4 the disk is full, 130
    interrupted (Ctrl-C), 143 terminated (SIGTERM). Everything the user gave is checked before anything is
    written (a ``SweepError`` or ``ConfigError`` otherwise)."""
    o, overrides = options, list(options.overrides)
    address = o.ray_address or os.environ.get("RAY_ADDRESS") or None
    if o.num_cpus is not None and address:
        raise SweepError("--num-cpus: applies to a local Ray only; a cluster's CPUs are set where its nodes start")
    data = schema.raw(config_path, overrides)
    plan = grid.expand(schema.parse(data, o.max_tasks))  # every spec validated: nothing is written before this
    root = Path(o.out or plan.config.output)
    _check_output(root)
    _check_memory(plan, o.max_run_memory, 1 if o.in_process or address else o.num_cpus or os.cpu_count() or 1)
    store = Store(root, plan.sweep_id)
    todo, damaged = _runs_to_do(store, plan, o.retry_failed)
    result = SweepResult(OK, plan.sweep_id, root, len(plan.tasks), len(todo))
    if todo and address and not (o.in_process or o.dry_run):
        from .executor import probe

        probe(address)  # one line, before anything is printed or written
    again = _resume_hint(config_path, overrides, root, o)
    _say(_plan_line(plan, todo, damaged))
    if o.dry_run:
        from .estimate import describe

        _say(describe(plan, todo, root, o.max_parallel, o.num_cpus, o.in_process or address is not None))
        return result
    if (store.meta / "manifest.json").exists() and not o.resume:
        raise SweepError(
            f"sweep {plan.sweep_id} already has results under {root}; pass --resume to continue "
            "it, or choose another --out"
        )
    manifest = _resumed_manifest(store, _manifest(plan, str(config_path), overrides, root, git_commit()))
    _stages.clear()
    _footer.clear()
    cluster = _start_ray(address, o.num_cpus) if todo and not o.in_process else None
    try:
        with _sigterm_as_interrupt():
            result.status = _record_and_publish(
                store, plan, manifest, data, config_path, overrides, todo, damaged, cluster, o.max_parallel, result
            )
        result.stages = {k: _stages.get(k, 0.0) for k in STAGES}
        _say("stages (s): " + ", ".join(f"{k} {v:.2f}" for k, v in result.stages.items()))
        for line in _footer:
            _say(line)
    except (KeyboardInterrupt, OSError) as e:
        result.status = _stopped(e, again, root)
    finally:
        if cluster is not None:
            from . import executor

            executor.disconnect()
    return result


def _resume_hint(config_path: str, overrides: list[str], root: Path, o: SweepOptions) -> str:
    """The command that continues this sweep, with the options that let it run as this one did."""
    how = [
        *(["--in-process"] if o.in_process else []),
        *(["--max-tasks", str(o.max_tasks)] if o.max_tasks != schema.DEFAULT_MAX_TASKS else []),
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


def _start_ray(address: str | None, num_cpus: int | None) -> Cluster:
    """Connect to the cluster at ``address`` or start a local Ray; an unreachable cluster fails here, before any
    write."""
    from . import executor

    _say(f"starting Ray ({'cluster at ' + address if address else 'local'}) ...")
    started = time.perf_counter()
    cluster = executor.connect(address, num_cpus)
    _stage("ray_start", time.perf_counter() - started)
    _say(
        f"Ray: {cluster.address}, {cluster.nodes} node(s), {cluster.cpus} CPU(s); started in "
        f"{time.perf_counter() - started:.1f} s"
    )
    return cluster


def _stopped(e: KeyboardInterrupt | OSError, again: str, root: Path) -> int:
    """The exit status of a sweep stopped by Ctrl-C, SIGTERM or a full disk (what finished is recorded);
    any other error is raised again."""
    if isinstance(e, KeyboardInterrupt):
        _say(
            f"\n{'terminated' if isinstance(e, Terminated) else 'interrupted'}: finished runs are recorded; "
            f"continue with `{again}`"
        )
        return TERMINATED if isinstance(e, Terminated) else INTERRUPTED
    if e.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):  # no space, quota, file size limit
        raise e
    _say(
        f"disk full writing under {root} ({e.strerror or one_line(e)}): what was written before is kept "
        f"intact; free space and continue with `{again}`"
    )
    return DISK_FULL


def _resumed_manifest(store: Store, fresh: Manifest) -> Manifest:
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
        _say(f"{e}: rebuilding it from the config")
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
    _say(f"resuming with changed {', '.join(changed)} (recorded in the manifest)")
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


def _record_and_publish(
    store: Store,
    plan: Plan,
    manifest: Manifest,
    data: dict,
    config_path: str,
    overrides: list[str],
    todo: list[Task],
    damaged: list[Damage],
    cluster: Cluster | None,
    max_parallel: int | None,
    result: SweepResult,
) -> int:
    commit = git_commit()
    with store.lock():
        manifest_path = store.meta / "manifest.json"
        header = f"# {config_path}" + (f" with {shlex.join(overrides)}" if overrides else "") + "\n"
        atomic.write(store.meta / "config.yaml", header + yaml.safe_dump(data, sort_keys=False))
        atomic.write(manifest_path, manifest.to_json())  # last: a sweep is resumable once it exists
        store.set_aside(damaged)
        _execute(store, todo, cluster, max_parallel, commit, result, plan.config.schedules)
        tick = time.perf_counter()
        merged = store.compact()
        _stage("record", time.perf_counter() - tick)
        if merged:
            _say(f"compacted {merged} batch files into one per table")
    return publish(store, manifest)


def _execute(
    store: Store,
    todo: list[Task],
    cluster: Cluster | None,
    max_parallel: int | None,
    commit: str,
    result: SweepResult,
    schedules: bool = False,
) -> None:
    """Run ``todo`` on the connected ``cluster`` (None: in this process, one by one) and record each outcome,
    counted in ``result``; ``schedules``: also each simulation's allocations."""
    if not todo:
        return
    from tqdm import tqdm

    from .executor import execute, fan_out

    if cluster is None:
        _say("running in this process, without Ray ...")
    tally = {"ok": 0, "failed": 0, "lost": 0}
    bar = tqdm(
        total=len(todo), unit="run", file=sys.stderr, mininterval=0.5 if sys.stderr.isatty() else 10, dynamic_ncols=True
    )
    started = flushed = time.perf_counter()
    writing = 0.0
    pending: list = []  # finished, not yet recorded: a kill loses at most FLUSH_SECONDS of runs
    try:
        chunks = (
            ([(t, execute(t, schedules))] for t in todo)
            if cluster is None
            else fan_out(todo, cluster, max_parallel, schedules)
        )
        for chunk in chunks:
            pending += chunk
            for _, outcome in chunk:
                tally[outcome.status] += 1
            bar.set_postfix(
                ok=tally["ok"],
                failed=tally["failed"] + tally["lost"],
                left=len(todo) - sum(tally.values()),
                refresh=False,
            )
            bar.update(len(chunk))
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
    _stage("runs", seconds - writing)
    _stage("record", writing)
    _say(
        f"ran {done} tasks in {seconds:.1f} s after start-up ({done / seconds:.2f} runs/s); "
        f"{tally['failed']} failed, {tally['lost']} lost"
    )


def publish(store: Store, manifest: Manifest, track: bool | None = None) -> int:
    """Summary table, plots, the report's figures and MLflow, all derived from the Parquet record; the exit
    status of ``run``/``log``."""
    from . import plots, summary, tracking
    from .report import comparison, draw_all, runs_of

    tick = time.perf_counter()
    counts, runs = runs_of(store, manifest)
    axes, reference = manifest.axes, summary.reference_policy(manifest)
    agg = comparison(runs, manifest)
    table = summary.markdown(agg, axes, reference)
    table += f"\nPaired over every grid point and seed, against {reference}:\n\n" + summary.paired_markdown(
        summary.paired_overall(runs, axes, reference), reference
    )
    atomic.write(store.meta / "summary.csv", agg.to_csv(index=False))
    atomic.write(store.meta / "summary.md", table)
    plot = plots.utility_vs_axis(runs, axes, store.meta / "plots" / "total_utility.png")
    figures = draw_all(runs, manifest, store.meta / "report")
    _say("\n" + table)
    for failed in runs[runs["status"] != "ok"].head(5).itertuples():
        _say(
            f"  {failed.status} run {failed.run_id} ({failed.policy}, seed {failed.seed}): "
            f"{str(failed.error).splitlines()[0]}"
        )
    _say(
        f"runs: {counts.total} total, {counts.ok} ok, {counts.failed} failed, {counts.lost} lost, "
        f"{counts.remaining} not run"
    )
    _say(f"Parquet: {store.part('runs')}  (jobs: {store.part('jobs')})")
    _say(f"summary: {store.meta / 'summary.md'}; plot: {plot}; report: {figures[-1]}")
    above = summary.above_opt(runs)
    for bad in above.head(10).itertuples():
        _say(
            f"  error: run {bad.run_id} ({bad.policy}, seed {bad.seed}) has utility {bad.total_utility:.10g}, "
            "more than its instance's OPT allows (beyond the gap): a bug in the model or the validator"
        )
    status = 1 if counts.failed or counts.lost or counts.remaining or len(above) else 0
    _stage("report", time.perf_counter() - tick)
    if not (manifest.mlflow if track is None else track):
        return status
    tick = time.perf_counter()
    # The default plot is not logged: the report's figures (and its HTML page) hold it.
    artifacts = [store.meta / n for n in ("manifest.json", "config.yaml", "summary.csv", "summary.md")]
    try:
        logged = tracking.log_sweep(manifest, runs, agg, artifacts, store.root)
        tracking.attach(manifest, figures, "report", store.root)
    except Exception as e:  # Parquet is the record: say how to re-log, keep the results
        _say(
            f"MLflow logging failed ({one_line(e)}); results are safe "
            f"in Parquet: re-log with `pdors sweep log {store.sweep_id} --out {store.root}`"
        )
        return status or 3
    _stage("mlflow", time.perf_counter() - tick)
    _say(
        f"MLflow: {tracking.shown_uri()} experiment {manifest.experiment!r}, parent run {logged.parent} "
        f"with {len(agg)} child runs"
        + (
            ""
            if tracking.tracking_uri().startswith(("http://", "https://"))
            else f"; serve it with `mlflow ui --backend-store-uri {tracking.shown_uri()}` to open the URL below"
        )
    )
    _footer.append(f"MLflow comparison: {logged.url}")
    return status


def log(target: str | None, out: str | None, overrides: Sequence[str] = ()) -> int:
    """``pdors sweep log``: re-log sweeps to MLflow from their Parquet record (``target``, ``overrides`` as
    :func:`pipeline.locate.locate`)."""
    status = OK
    _footer.clear()
    for store in locate(target, out, overrides):
        status = max(status, publish(store, manifest_of(store), track=True))
    for line in _footer:
        _say(line)
    return status


def status(target: str | None, out: str | None, overrides: Sequence[str] = ()) -> int:
    """``pdors sweep status``: progress and integrity of sweeps (a config, a sweep id, a directory, or the
    latest sweep); 0 if every record is intact, 1 if some are damaged (with how to repair). Reads the runs
    files' run_id, status, kind, jobs and node_ip columns and the jobs files' footers, never a job row; says
    how many runs each node ran."""
    code = OK
    indexes: dict[Path, Index] = {}
    for store in locate(target, out, overrides):
        manifest = manifest_of(store)
        index = indexes.setdefault(store.root, store.index())
        counts = count(manifest, index.status())
        damaged = index.damaged
        _say(
            f"{store.sweep_id} ({store.root}): {counts.total} tasks, {counts.ok} ok, {counts.failed} failed, "
            f"{counts.lost} lost, {counts.remaining} not run; "
            + (f"{len(damaged)} damaged batches" if damaged else "records intact")
            + (f"; {index.unsealed} batches older than digests (trusted: read unchecked)" if index.unsealed else "")
        )
        nodes = runs_by_node(index, manifest.run_ids)
        if nodes:
            _say("  ran on: " + ", ".join(f"{ip}: {n} runs" for ip, n in nodes.items()))
        again = resume_command(store)
        mine = set(manifest.run_ids)
        for d in damaged[:10]:
            held = f"{len(d.run_ids)} runs, {len(mine.intersection(d.run_ids))} of this sweep's" if d.run_ids else ""
            _say(f"  damaged: {store.root / 'runs' / d.batch}.parquet ({held or 'its runs unknown'}): {d.problem}")
        if damaged:
            _say(f"  repair: `{again}` sets the damaged batches aside and recomputes their runs")
            code = RUNS_FAILED
        if counts.failed:
            _say(f"  rerun the failed runs: `{again} --retry-failed`")
        elif (counts.lost or counts.remaining) and not damaged:
            _say(f"  continue: `{again}`")
    return code


def runs_by_node(index: Index, run_ids: list[str]) -> dict[str, int]:
    """Node address -> how many of the recorded ``run_ids`` it ran (``in-process``: run without Ray)."""
    ran = Counter(index.node[r] or "in-process" for r in run_ids if r in index.chosen)
    return dict(sorted(ran.items()))


def list_sweeps(out: str | None) -> int:
    """``pdors sweep list``: every sweep under the output root (or under ``results/``), oldest first."""
    stores = sweeps_under(out)
    if not stores:
        raise SweepError(f"no sweeps under {out or 'results/'}")
    recorded: dict[Path, dict] = {}
    for store in stores:
        manifest = manifest_of(store)
        have = recorded.setdefault(store.root, store.recorded())  # run_id and status columns only
        states = [have.get(r) for r in manifest.run_ids]
        _say(
            f"{manifest.created_at or '?':<25} {store.sweep_id:<32} {len(states):>6} tasks "
            f"{states.count('ok'):>6} ok {states.count('failed'):>4} failed {states.count('lost'):>4} lost "
            f"{states.count(None):>6} not run  {store.root}"
        )
    return OK
