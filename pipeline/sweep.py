"""The sweep commands: run (expand -> Ray -> Parquet -> summary, plots, MLflow), log (re-log from Parquet),
status, list. Results are recorded in Parquet first; everything after that is derived and can be redone.

Runs are shared by every sweep under one output root (:mod:`pipeline.storage`): a sweep computes only the runs
no sweep recorded before it.
"""

from __future__ import annotations

import errno
import json
import os
import shlex
import signal
import sys
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import yaml

from pdors.config import to_dict

from . import grid, schema, sizing
from .credentials import one_line
from .locate import locate, sweeps_under
from .provenance import git_commit, packages
from .storage import Damage, Index, Store, SweepError, count, manifest_of, recorded_runs
from .tasks import Plan, Task

# Exit status of ``pdors sweep run`` (docs/PIPELINE.md).
OK, RUNS_FAILED, BAD_INPUT, MLFLOW_FAILED, DISK_FULL, INTERRUPTED, TERMINATED = 0, 1, 2, 3, 4, 130, 143
FLUSH_SECONDS = 2.0  # finished runs are recorded (one batch file per table) at least this often
STAGES = ("ray_start", "runs", "record", "report", "mlflow")  # the seconds printed by ``run`` (``pdors bench``)
_stages: dict[str, float] = {}


def _stage(name: str, seconds: float) -> None:
    _stages[name] = _stages.get(name, 0.0) + seconds


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C."""


def _manifest(plan: Plan, config_path: str, overrides: list[str], out: Path, commit: str) -> dict:
    c = plan.config
    return {
        "sweep_id": plan.sweep_id,
        "name": c.name,
        "config_path": str(config_path),
        "overrides": list(overrides),
        "config": to_dict(c),
        "axes": plan.axes,
        "seeds": c.seed_list(),
        "tasks": len(plan.tasks),
        "run_ids": [t.run_id for t in plan.tasks],
        "experiment": c.mlflow.experiment,
        "mlflow": c.mlflow.enabled,
        "output": str(out),
        "git_commit": commit,
        "packages": packages(),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _say(text: str = "") -> None:
    print(text, flush=True)


def _check_output(root: Path) -> None:
    """The output root must be (or be creatable as) a directory."""
    for path in (root, *root.parents):
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


def _todo(store: Store, plan: Plan, retry_failed: bool) -> tuple[list[Task], list[Damage]]:
    """The plan's tasks no sweep under the root has recorded intact (lost ones, and failed ones with
    ``retry_failed``, again), and the damaged batches under the root (their runs count as not recorded)."""
    index = store.index()
    recorded = index.status()
    redo = {"lost", "failed"} if retry_failed else {"lost"}
    return [t for t in plan.tasks if recorded.get(t.run_id, "lost") in redo], index.damaged


@contextmanager
def _sigterm_as_interrupt():
    previous = signal.getsignal(signal.SIGTERM)

    def terminate(signum, frame):
        raise Terminated()

    signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(
    config_path: str,
    out: str | None = None,
    resume: bool = False,
    max_parallel: int | None = None,
    ray_address: str | None = None,
    in_process: bool = False,
    num_cpus: int | None = None,
    overrides: list[str] = (),
    dry_run: bool = False,
    retry_failed: bool = False,
    max_run_memory: float | None = None,
) -> int:
    """``pdors sweep run``; returns the exit status (module constants): 0 all ok, 1 some runs failed or were
    lost (or a policy earned more than its instance's OPT allows beyond the gap),
    3 every run ok but MLflow logging failed (``pdors sweep log`` redoes it), 4 the disk is full, 130
    interrupted (Ctrl-C), 143 terminated (SIGTERM). Everything the user gave is checked before anything is
    written. ``overrides``: ``KEY=VALUE`` (:func:`pipeline.schema.apply_overrides`). ``dry_run``: print the
    plan and write nothing. ``in_process``: run the tasks one after another in this process, without Ray.
    ``num_cpus``: CPUs of the local Ray (default: all); a cluster's CPUs are its nodes'."""
    address = ray_address or os.environ.get("RAY_ADDRESS") or None
    if num_cpus is not None and address:
        raise SweepError("--num-cpus: applies to a local Ray only; a cluster's CPUs are set where its nodes start")
    data = schema.raw(config_path, overrides)
    plan = grid.expand(schema.parse(data))  # every spec validated: nothing is written before this
    config = plan.config
    root = Path(out or config.output)
    _check_output(root)
    _check_memory(plan, max_run_memory, 1 if in_process or address else num_cpus or os.cpu_count() or 1)
    store = Store(root, plan.sweep_id)
    todo, damaged = _todo(store, plan, retry_failed)
    if todo and address and not (in_process or dry_run):
        from .executor import probe

        probe(address)  # one line, before anything is printed or written
    again = shlex.join(["pdors", "sweep", "run", str(config_path), *overrides, "--out", str(root), "--resume"])
    sims = sum(t.kind == "sim" for t in plan.tasks)
    _say(
        f"sweep {plan.sweep_id}: {len(plan.tasks)} tasks ({sims} simulations, {len(plan.tasks) - sims} OPT) over "
        f"{', '.join(plan.axes) or 'no grid axes'}; {len(plan.tasks) - len(todo)} already recorded, "
        f"{len(todo)} to run" + (f" ({len(damaged)} damaged batches set aside)" if damaged else "")
    )
    if dry_run:
        from .estimate import describe

        _say(describe(plan, todo, root, max_parallel, num_cpus, in_process or address is not None))
        return OK
    if (store.meta / "manifest.json").exists() and not resume:
        raise SweepError(
            f"sweep {plan.sweep_id} already has results under {root}; pass --resume to continue "
            "it, or choose another --out"
        )
    cluster = None
    _stages.clear()
    if todo and not in_process:
        from . import executor

        _say(f"starting Ray ({'cluster at ' + address if address else 'local'}) ...")
        started = time.perf_counter()
        cluster = executor.connect(address, num_cpus)  # an unreachable cluster fails here, before any write
        _stage("ray_start", time.perf_counter() - started)
        _say(
            f"Ray: {cluster.address}, {cluster.nodes} node(s), {cluster.cpus} CPU(s); started in "
            f"{time.perf_counter() - started:.1f} s"
        )
    try:
        with _sigterm_as_interrupt():
            code = _record_and_publish(store, plan, data, config_path, overrides, todo, damaged, cluster, max_parallel)
        _say("stages (s): " + ", ".join(f"{k} {_stages.get(k, 0.0):.2f}" for k in STAGES))
        return code
    except KeyboardInterrupt as e:
        _say(
            f"\n{'terminated' if isinstance(e, Terminated) else 'interrupted'}: finished runs are recorded; "
            f"continue with `{again}`"
        )
        return TERMINATED if isinstance(e, Terminated) else INTERRUPTED
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        _say(
            f"disk full writing under {root} ({e.strerror}): finished runs are recorded; free space and continue "
            f"with `{again}`"
        )
        return DISK_FULL
    finally:
        if cluster is not None:
            from . import executor

            executor.disconnect()


def _record_and_publish(
    store: Store,
    plan: Plan,
    data: dict,
    config_path: str,
    overrides: list[str],
    todo: list[Task],
    damaged: list[Damage],
    cluster,
    max_parallel: int | None,
) -> int:
    commit = git_commit()
    with store.lock():
        manifest_path = store.meta / "manifest.json"
        manifest = (
            json.loads(manifest_path.read_text())
            if manifest_path.exists()
            else _manifest(plan, config_path, overrides, store.root, commit)
        )
        manifest["config"]["report"] = to_dict(plan.config)["report"]  # figures can change, the sweep id cannot
        store.meta.mkdir(parents=True, exist_ok=True)
        manifest_path.write_text(json.dumps(manifest, indent=1))
        header = f"# {config_path}" + (f" with {shlex.join(overrides)}" if overrides else "") + "\n"
        (store.meta / "config.yaml").write_text(header + yaml.safe_dump(data, sort_keys=False))
        store.set_aside(damaged)
        _execute(store, todo, cluster, max_parallel, commit, plan.config.schedules)
        tick = time.perf_counter()
        merged = store.compact()
        _stage("record", time.perf_counter() - tick)
        if merged:
            _say(f"compacted {merged} batch files into one per table")
    return publish(store, manifest)


def _execute(store: Store, todo: list, cluster, max_parallel: int | None, commit: str, schedules: bool = False) -> None:
    """Run ``todo`` on the connected ``cluster`` (None: in this process, one by one) and record each outcome;
    ``schedules``: also each simulation's allocations."""
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
    _stage("runs", seconds - writing)
    _stage("record", writing)
    _say(
        f"ran {done} tasks in {seconds:.1f} s after start-up ({done / seconds:.2f} runs/s); "
        f"{tally['failed']} failed, {tally['lost']} lost"
    )


def publish(store: Store, manifest: dict, track: bool | None = None) -> int:
    """Summary table, plots, the report's figures and MLflow, all derived from the Parquet record; the exit
    status of ``run``/``log``."""
    from . import plots, summary, tracking
    from .report import draw_all

    tick = time.perf_counter()
    counts, runs = recorded_runs(store, manifest)
    if runs.empty:
        raise SweepError(f"sweep {store.sweep_id} has no recorded runs under {store.root}")
    axes = manifest["axes"]
    agg = summary.aggregate(runs, axes)
    table = summary.markdown(agg, axes)
    agg.to_csv(store.meta / "summary.csv", index=False)
    (store.meta / "summary.md").write_text(table)
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
    if not (manifest["mlflow"] if track is None else track):
        return status
    tick = time.perf_counter()
    artifacts = [store.meta / n for n in ("manifest.json", "config.yaml", "summary.csv", "summary.md")]
    artifacts += plots.formats(plot)
    try:
        parent = tracking.log_sweep(manifest, runs, agg, artifacts, store.root)
        tracking.attach(manifest, figures, "report", store.root)
    except Exception as e:  # Parquet is the record: say how to re-log, keep the results
        _say(
            f"MLflow logging failed ({one_line(e)}); results are safe "
            f"in Parquet: re-log with `pdors sweep log {store.sweep_id} --out {store.root}`"
        )
        return status or 3
    _stage("mlflow", time.perf_counter() - tick)
    _say(
        f"MLflow: {tracking.shown_uri()} experiment {manifest['experiment']!r}, parent run {parent} "
        f"with {len(agg)} child runs"
    )
    return status


def log(target: str | None, out: str | None, overrides: Sequence[str] = ()) -> int:
    """``pdors sweep log``: re-log sweeps to MLflow from their Parquet record (``target``, ``overrides`` as
    :func:`pipeline.locate.locate`)."""
    status = OK
    for store in locate(target, out, overrides):
        status = max(status, publish(store, manifest_of(store), track=True))
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
        )
        nodes = runs_by_node(index, manifest["run_ids"])
        if nodes:
            _say("  ran on: " + ", ".join(f"{ip}: {n} runs" for ip, n in nodes.items()))
        again = shlex.join(
            ["pdors", "sweep", "run", str(store.meta / "config.yaml"), "--out", str(store.root), "--resume"]
        )
        for d in damaged[:10]:
            _say(f"  damaged: batch {d.batch} ({len(d.run_ids) or 'unknown'} runs): {d.problem}")
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
        states = [have.get(r) for r in manifest["run_ids"]]
        _say(
            f"{manifest.get('created_at', '?'):<25} {store.sweep_id:<32} {len(states):>6} tasks "
            f"{states.count('ok'):>6} ok {states.count('failed'):>4} failed {states.count('lost'):>4} lost "
            f"{states.count(None):>6} not run  {store.root}"
        )
    return OK
