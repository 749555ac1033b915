"""The sweep commands: run (expand -> Ray -> Parquet -> summary, plots, MLflow), log (re-log from Parquet),
status. Results are recorded in Parquet first; everything after that is derived and can be redone."""
from __future__ import annotations

import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from pdors.config import to_dict

from . import grid, schema
from .credentials import one_line
from .provenance import git_commit, packages
from .storage import Store, SweepError, manifest_of, recorded_runs, runs_schema
from .tasks import Plan

def _manifest(plan: Plan, config_path: str, out: Path, commit: str) -> dict:
    c = plan.config
    return {"sweep_id": plan.sweep_id, "name": c.name, "config_path": str(config_path), "config": to_dict(c),
            "axes": plan.axes, "seeds": c.seed_list(), "tasks": len(plan.tasks),
            "run_ids": [t.run_id for t in plan.tasks], "experiment": c.mlflow.experiment,
            "mlflow": c.mlflow.enabled, "output": str(out), "git_commit": commit, "packages": packages(),
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def _say(text: str = "") -> None:
    print(text, flush=True)


def run(config_path: str, out: str | None = None, resume: bool = False, max_parallel: int | None = None,
        ray_address: str | None = None, in_process: bool = False, num_cpus: int | None = None) -> int:
    """``pdors sweep run``; returns the exit status: 0 all ok, 1 some runs failed or were lost (or a policy
    earned more than its instance's OPT allows beyond the gap),
    3 every run ok but MLflow logging failed (``pdors sweep log`` redoes it), 130 interrupted.
    ``in_process``: run the tasks one after another in this process, without Ray (small sweeps, debugging).
    ``num_cpus``: CPUs of the local Ray (default: all); a cluster's CPUs are its nodes'."""
    address = ray_address or os.environ.get("RAY_ADDRESS") or None
    if num_cpus is not None and address:
        raise SweepError("--num-cpus: applies to a local Ray only; a cluster's CPUs are set where its nodes start")
    config = schema.load(config_path)
    plan = grid.expand(config)                     # every spec validated: nothing is written before this
    root = Path(out or config.output)
    store = Store(root, plan.sweep_id)
    if store.recorded() and not resume:
        raise SweepError(f"sweep {plan.sweep_id} already has results under {root}; pass --resume to continue "
                         "it, or choose another --out")
    commit = git_commit()
    with store.lock():
        recorded = store.recorded()
        todo = [t for t in plan.tasks if recorded.get(t.run_id) in (None, "lost")]
        manifest_path = store.meta / "manifest.json"
        manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else \
            _manifest(plan, config_path, root, commit)
        manifest["config"]["report"] = to_dict(config)["report"]   # figures can change, the sweep id cannot
        manifest_path.write_text(json.dumps(manifest, indent=1))
        (store.meta / "config.yaml").write_text(Path(config_path).read_text())
        sims = sum(t.kind == "sim" for t in plan.tasks)
        _say(f"sweep {plan.sweep_id}: {len(plan.tasks)} tasks ({sims} simulations, {len(plan.tasks) - sims} "
             f"OPT) over {', '.join(plan.axes) or 'no grid axes'}; {len(plan.tasks) - len(todo)} already "
             f"recorded, {len(todo)} to run")
        try:
            _execute(store, runs_schema(plan), todo, address, max_parallel, commit, in_process, num_cpus,
                     config.schedules)
        except KeyboardInterrupt:
            _say(f"\ninterrupted: finished runs are recorded; continue with "
                 f"`pdors sweep run {config_path} --out {root} --resume`")
            return 130
    return publish(store, manifest)


def _in_process(todo: list, on_connect, schedules: bool = False):
    from .executor import Cluster, execute

    on_connect(Cluster("in-process", 1, 1))
    return ((task, execute(task, schedules)) for task in todo)


def _execute(store: Store, schema_, todo: list, address, max_parallel, commit: str, in_process: bool,
             num_cpus: int | None = None, schedules: bool = False) -> None:
    if not todo:
        return
    from tqdm import tqdm

    from .executor import fan_out

    _say("running in this process, without Ray ..." if in_process else
         f"starting Ray ({'cluster at ' + address if address else 'local'}) ...")
    tally = {"ok": 0, "failed": 0, "lost": 0}
    bar = tqdm(total=len(todo), unit="run", file=sys.stderr, mininterval=0.5 if sys.stderr.isatty() else 10,
               dynamic_ncols=True)

    def connected(cluster) -> None:
        if not in_process:
            bar.write(f"Ray: {cluster.address}, {cluster.nodes} node(s), {cluster.cpus} CPU(s); "
                      f"started in {time.perf_counter() - started:.1f} s")
        bar.reset()   # the rate and ETA count from here, not from Ray's start-up
        clock.append(time.perf_counter())

    started, clock = time.perf_counter(), []
    try:
        outcomes = _in_process(todo, connected, schedules) if in_process else \
            fan_out(todo, address, max_parallel, connected, num_cpus, schedules)
        for task, outcome in outcomes:
            store.write(task, outcome, schema_, commit)
            tally[outcome.status] += 1
            bar.set_postfix(ok=tally["ok"], failed=tally["failed"] + tally["lost"],
                            left=len(todo) - sum(tally.values()), refresh=False)
            bar.update()
    finally:
        bar.close()
    done, seconds = sum(tally.values()), time.perf_counter() - clock[0]
    _say(f"ran {done} tasks in {seconds:.1f} s after start-up ({done / seconds:.2f} runs/s); "
         f"{tally['failed']} failed, {tally['lost']} lost")


def publish(store: Store, manifest: dict, track: bool | None = None) -> int:
    """Summary table, plots, the report's figures and MLflow, all derived from the Parquet record; the exit
    status of ``run``/``log``."""
    from . import plots, summary, tracking
    from .report import draw_all

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
        _say(f"  {failed.status} run {failed.run_id} ({failed.policy}, seed {failed.seed}): "
             f"{str(failed.error).splitlines()[0]}")
    _say(f"runs: {counts.total} total, {counts.ok} ok, {counts.failed} failed, {counts.lost} lost, "
         f"{counts.remaining} not run")
    _say(f"Parquet: {store.part('runs')}  (jobs: {store.part('jobs')})")
    _say(f"summary: {store.meta / 'summary.md'}; plot: {plot}; report: {figures[-1]}")
    above = summary.above_opt(runs)
    for bad in above.head(10).itertuples():
        _say(f"  error: run {bad.run_id} ({bad.policy}, seed {bad.seed}) has utility {bad.total_utility:.10g}, "
             "more than its instance's OPT allows (beyond the gap): a bug in the model or the validator")
    status = 1 if counts.failed or counts.lost or counts.remaining or len(above) else 0
    if not (manifest["mlflow"] if track is None else track):
        return status
    artifacts = [store.meta / n for n in ("manifest.json", "config.yaml", "summary.csv", "summary.md")]
    artifacts += plots.formats(plot)
    try:
        parent = tracking.log_sweep(manifest, runs, agg, artifacts, store.root)
        tracking.attach(manifest, figures, "report", store.root)
    except Exception as e:   # Parquet is the record: say how to re-log, keep the results
        _say(f"MLflow logging failed ({one_line(e)}); results are safe "
             f"in Parquet: re-log with `pdors sweep log {store.sweep_id} --out {store.root}`")
        return status or 3
    _say(f"MLflow: {tracking.shown_uri()} experiment {manifest['experiment']!r}, parent run {parent} "
         f"with {len(agg)} child runs")
    return status


def log(sweep_id: str, out: str) -> int:
    """``pdors sweep log``: re-log a sweep to MLflow from its Parquet record."""
    store = Store(out, sweep_id)
    return publish(store, manifest_of(store), track=True)


def status(sweep_id: str | None, out: str) -> int:
    """``pdors sweep status``: progress of one sweep, or of every sweep under ``out``."""
    root = Path(out)
    ids = [sweep_id] if sweep_id else sorted(p.name for p in (root / "sweeps").glob("*") if p.is_dir())
    if not ids:
        raise SweepError(f"no sweeps under {root}")
    for sid in ids:
        store = Store(root, sid)
        counts, _ = recorded_runs(store, manifest_of(store))
        _say(f"{sid}: {counts.total} tasks, {counts.ok} ok, {counts.failed} failed, {counts.lost} lost, "
             f"{counts.remaining} not run")
    return 0
