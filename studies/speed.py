"""The speed figures of docs/PERFORMANCE.md (``pdors bench``), measured in one run and printed as tables.

Sections (``--only`` picks some, in this order):

* ``latency``: PD-ORS per-job decision latency (p50, p99) at H in {30, 100, 300, 1000}, I = 100, T = 80, and
  its growth from H = 100 to H = 1000 against H's;
* ``policies``: wall and CPU time of one paper-scale run (I = 100, H = 100, T = 80) per policy;
* ``reference``: the fast PD-ORS against the literal reference of Algorithms 2-4
  (``pdors/policies/pdors_reference.py``) on a small instance: identical decisions, speed ratio;
* ``opt``: offline-optimum solve time per solver on the small-instance profile (``offline_opt.bench.instance``,
  ``offline_opt.solve``);
* ``ray``: sweep throughput (runs/s) on a local Ray with 1 and 2 CPUs (``pdors sweep run --num-cpus``) on the
  same quickstart grid of >= 50 runs through ``pipeline.execute.executor.fan_out``;
  their ratio; the run-time ratio (two runs
  competing for the cores); and the idle capacity per task (scheduling,
  dispatch, collection) against the median run time;
* ``memory``: peak resident memory of one paper-scale task per policy, each alone in a fresh process
  (its VmHWM), next to a process that only imports ``pdors.run``;
* ``scale`` (only with ``--only``): every policy once at H = 1000, I = 1000, T = 80 (the targets: at most
  20 s per run, PD-ORS's decision p99 under 100 ms): the run's wall time (instance, simulation, validation,
  summary), its CPU time, decision p50/p99, the schedule digest, and the ratio to the figure before the
  optimisations (docs/performance_before.json, measured on the same machine);
* ``scale-pipeline`` (only with ``--only``; ``scale`` runs it too): the sweep pipeline on a 10,000-run sweep of
  tiny runs (FIFO, I = 5, T = 5, 4 cluster sizes x 2,500 seeds) through ``pdors sweep run`` in a subprocess on a
  local Ray with 2 CPUs and MLflow on a SQLite file: end-to-end wall time and its stages as the sweep reports
  them (Ray's start, runs, recording and compaction, report, MLflow), the Parquet files left, ``pdors sweep
  status``'s wall time (median) and peak memory (``getrusage`` of its children, in a small intermediary
  process), and the throughput of 1 against 2 workers on a smaller sweep of the same runs;
* ``sweep-overhead`` (only with ``--only``): what a sweep costs beside its runs, each command in a fresh process
  (``pdors sweep run`` on a local Ray with 2 CPUs, MLflow on a SQLite file): the quickstart sweep's stages other
  than the runs (Ray's start, recording, report, MLflow) and its wall time minus the runs stage; the same sweep
  run again (nothing to run; before issue 37 it needed ``--resume``): wall time and exit status; and the wall and
  CPU time of ``pdors sweep --help`` and ``pdors simulate --help`` (median), and of ``pdors opt --method bound`` at
  the scale section's size, end to end (median). ``source``: a checkout of other code to measure instead (its
  directory first on ``PYTHONPATH``): how the before figures were taken;
* ``reproduction`` (only with ``--only``): an estimate of the full reproduction (every
  ``configs/fig*.yaml`` and ``configs/thesis*.yaml`` at full size) on 2 Ray workers: each config's tasks of
  its first seed run here one by one (``pipeline.execute.executor.execute``), scaled by the config's task count;
* ``algorithm`` (only with ``--only``): tiny runs, PD-ORS's growth to H = I = 1000 and a long horizon, each beside
  its before figure (:mod:`studies.algorithm_speed`);
* ``sweep-latency`` (only with ``--only``): issue 49's targets, each beside the figure of the code at ``--before``
  measured in the same run (:mod:`studies.sweep_latency`).

Timings depend on what else runs on the machine: every run also reports its CPU time, the load average is
recorded, and ratios are taken within one bench run. ``--quick`` shrinks every size (about 2 minutes).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pdors.config import JSON
from pdors.markdown import number, table
from pdors.run_summary import RunSummary

from . import algorithm_speed, sweep_latency

if TYPE_CHECKING:
    from pipeline.spec.tasks import Task

SECTIONS = ("latency", "policies", "reference", "opt", "ray", "memory")
EXTRA_SECTIONS = ("scale", "scale-pipeline", "sweep-overhead", "reproduction", "algorithm", "sweep-latency")
REPRODUCTION = ("fig*.yaml", "thesis*.yaml")
CONFIGS = Path(__file__).resolve().parents[1] / "configs"
QUICKSTART = CONFIGS / "quickstart.yaml"
# The figures before the speed optimisations: the yardsticks of the scale sections (docs/PERFORMANCE.md).
BEFORE = json.loads((CONFIGS.parent / "docs" / "performance_before.json").read_text())
SCALE_BEFORE: dict[str, float] = {k: v for k, v in BEFORE["scale_wall_s"].items() if not k.startswith("_")}
PIPELINE_BEFORE: dict[str, float] = {k: v for k, v in BEFORE["pipeline"].items() if not k.startswith("_")}
OVERHEAD_BEFORE: dict[str, float] = {k: v for k, v in BEFORE["sweep_overhead"].items() if not k.startswith("_")}


@dataclass(frozen=True, kw_only=True)
class Sizes:
    latency_machines: tuple[int, ...]
    jobs: int
    slots: int
    paper: tuple[int, int, int]  # (H, I, T) of the per-policy runs and the memory probes
    opt_seeds: tuple[int, ...]
    opt_time_limit: float
    ray_machines: tuple[int, ...]
    ray_seeds: int
    scale: tuple[int, int, int]  # (H, I, T) of the scale section
    pipeline_seeds: int  # seeds per cluster size of the scale-pipeline sweep (x 4 sizes)
    pipeline_ratio_seeds: int  # ... of its 1- vs 2-worker throughput sweeps
    pipeline_repeats: int  # ``sweep status`` timings (median)
    growth: tuple[int, ...] = (250, 1000)  # H = I of the algorithm section's PD-ORS runs (T = 80)
    long_slots: int = 3_000_000  # horizon of the algorithm section's 3-job run
    tiny_seeds: int = 50  # seeds per cluster size of its tiny runs


FULL = Sizes(
    latency_machines=(30, 100, 300, 1000),
    jobs=100,
    slots=80,
    paper=(100, 100, 80),
    opt_seeds=(1, 2, 3, 4, 5),
    opt_time_limit=60.0,
    ray_machines=(10, 20, 30, 40),
    ray_seeds=2,
    scale=(1000, 1000, 80),
    pipeline_seeds=2500,
    pipeline_ratio_seeds=500,
    pipeline_repeats=5,
)
QUICK = Sizes(
    latency_machines=(30, 100),
    jobs=40,
    slots=40,
    paper=(30, 40, 40),
    opt_seeds=(1,),
    opt_time_limit=10.0,
    ray_machines=(10, 20),
    ray_seeds=3,
    scale=(200, 200, 40),
    pipeline_seeds=250,
    pipeline_ratio_seeds=100,
    pipeline_repeats=3,
    growth=(100, 200),
    long_slots=300_000,
    tiny_seeds=10,
)


def _run(spec: dict[str, Any]) -> tuple[RunSummary, float]:
    """One run in this process: its summary and its CPU seconds."""
    from pdors.run import run

    cpu = time.process_time()
    summary = run(spec).summary
    return summary, time.process_time() - cpu


def bench_latency(sizes: Sizes, seed: int) -> list[JSON]:
    rows = []
    for machines in sizes.latency_machines:
        s, cpu = _run(dict(policy="pdors", machines=machines, jobs=sizes.jobs, slots=sizes.slots, seed=seed))
        lat = s.decision_latency_ms
        rows.append(
            {
                "machines": machines,
                "jobs": sizes.jobs,
                "slots": sizes.slots,
                "p50_ms": lat.p50,
                "p99_ms": lat.p99,
                "cpu_p50_ms": s.decision_cpu_ms.p50,
                "cpu_p99_ms": s.decision_cpu_ms.p99,
                "wall_s": s.wall_s,
                "cpu_s": cpu,
                "total_utility": s.total_utility,
                "admitted": s.admitted,
                "violations": len(s.violations),
            }
        )
    return rows


def bench_policies(sizes: Sizes, seed: int) -> list[JSON]:
    from pdors.policies import POLICIES

    machines, jobs, slots = sizes.paper
    rows = []
    for policy in POLICIES:
        s, cpu = _run(dict(policy=policy, machines=machines, jobs=jobs, slots=slots, seed=seed))
        rows.append(
            {
                "policy": policy,
                "wall_s": s.wall_s,
                "cpu_s": cpu,
                "total_utility": s.total_utility,
                "admitted": s.admitted,
                "violations": len(s.violations),
            }
        )
    return rows


def bench_scale(sizes: Sizes, seed: int) -> list[JSON]:
    """Every policy once at ``sizes.scale``; the wall time is the whole run (``pdors.run.run``), validation
    and summary included. Ratios to ``SCALE_BEFORE`` only at its size."""
    from pdors.policies import POLICIES

    machines, jobs, slots = sizes.scale
    rows = []
    for policy in POLICIES:
        tick = time.perf_counter()
        s, cpu = _run(dict(policy=policy, machines=machines, jobs=jobs, slots=slots, seed=seed))
        wall = time.perf_counter() - tick
        before = SCALE_BEFORE.get(policy) if (sizes.scale, seed) == ((1000, 1000, 80), 1) else None
        rows.append(
            {
                "policy": policy,
                "machines": machines,
                "jobs": jobs,
                "slots": slots,
                "wall_s": wall,
                "simulate_s": s.wall_s,
                "cpu_s": cpu,
                "p50_ms": s.decision_latency_ms.p50,
                "p99_ms": s.decision_latency_ms.p99,
                "before_s": before,
                "speedup": before / wall if before else None,
                "total_utility": s.total_utility,
                "admitted": s.admitted,
                "violations": len(s.violations),
                "digest": s.schedule_digest,
            }
        )
    return rows


def bench_reference(seed: int) -> JSON:
    from pdors.policies.pdors import PDORS, Config
    from pdors.policies.pdors_reference import ReferencePDORS
    from pdors.simulator import simulate
    from pdors.workload import WorkloadConfig, generate

    out: dict[str, Any] = {"machines": 6, "jobs": 10, "slots": 6, "workload_levels": 10}  # small for the reference
    inst = generate(WorkloadConfig(workload_scale=0.05), out["machines"], out["jobs"], out["slots"], seed)
    config = Config(workload_levels=out["workload_levels"])
    schedules = []
    for name, policy in (("fast", PDORS(config)), ("reference", ReferencePDORS(config))):
        sim = simulate(inst, policy, seed)
        out[f"{name}_s"] = sim.wall_seconds
        schedules.append(sim.schedule)
    out["same_decisions"] = all(
        np.array_equal(getattr(schedules[0], k), getattr(schedules[1], k)) for k in ("admitted", "workers", "servers")
    )
    out["speedup"] = out["reference_s"] / out["fast_s"]
    return out


def bench_opt(sizes: Sizes) -> list[JSON]:
    from offline_opt.solve import solve
    from offline_opt.solvers import SOLVERS
    from studies.opt_formulation import instance

    rows = []
    for solver in SOLVERS:
        for seed in sizes.opt_seeds:
            r = solve(instance(seed), solver, sizes.opt_time_limit)
            rows.append(
                {
                    "solver": solver,
                    "seed": seed,
                    "status": r.status,
                    "proven": r.proven_optimal,
                    "wall_s": r.wall_s,
                    "gap": r.gap,
                }
            )
    return rows


def _sweep_tasks(sizes: Sizes) -> list[Task]:

    from pipeline.spec import grid, schema

    data = schema.raw(QUICKSTART)
    data["grid"]["machines"] = list(sizes.ray_machines)
    data["seeds"] = {"start": 1, "count": sizes.ray_seeds}
    return grid.expand(schema.parse(data)).tasks


def bench_ray(sizes: Sizes) -> list[JSON]:
    """The same tasks on a local Ray with 1 and then 2 CPUs (workers), each with the sweep's default of 2 x CPUs
    tasks in flight; Ray's start-up (``ray.init``) is timed apart.

    Per task: the run time (measured inside the task) and the idle capacity, (makespan x workers - total run
    time) / tasks, which is what scheduling, dispatch and result collection cost (plus the first task's wait for
    a worker and the last one's tail)."""
    from pipeline.execute.executor import connect, disconnect, fan_out

    tasks = _sweep_tasks(sizes)
    rows = []
    for workers in (1, 2):
        start = time.time()
        cluster = connect(None, workers)
        connected = time.time()
        try:
            outcomes = [o for chunk in fan_out(tasks, cluster, None) for _, o in chunk]
        finally:
            disconnect()
        ok = [o for o in outcomes if o.status == "ok"]
        runs = [o.finished_at - o.started_at for o in ok]
        makespan = max(o.finished_at for o in outcomes) - connected
        idle = (makespan * workers - sum(runs)) / len(outcomes)
        rows.append(
            {
                "workers": workers,
                "runs": len(tasks),
                "failed": len(outcomes) - len(ok),
                "ray_start_s": connected - start,
                "makespan_s": makespan,
                "runs_per_s": len(tasks) / makespan,
                "mean_run_s": statistics.fmean(runs),
                "median_run_s": statistics.median(runs),
                "idle_per_task_ms": 1e3 * idle,
                "overhead_share": idle / statistics.median(runs),
                "worker_pids": len({o.worker_pid for o in ok}),
            }
        )
    return rows


def bench_reproduction(workers: int = 2) -> list[JSON]:
    """Per config: the first seed's tasks timed here, one core each; the estimate for ``workers`` workers is
    their total x (all tasks / sampled tasks) / workers, i.e. perfect packing (a lower bound on the real
    makespan, whose tail the slowest task sets)."""
    from tqdm import tqdm

    from pipeline.execute.executor import execute
    from pipeline.spec import grid, schema

    plans = {}
    for path in sorted({p for pattern in REPRODUCTION for p in CONFIGS.glob(pattern)}):
        tasks = grid.expand(schema.load(path)).tasks
        first = min(t.seed for t in tasks)
        plans[path.name] = (len(tasks), [t for t in tasks if t.seed == first])
    progress = tqdm(
        total=sum(len(sample) for _, sample in plans.values()), desc="reproduction sample", unit="run", file=sys.stderr
    )
    rows = []
    for name, (total, sample) in plans.items():
        walls, cpu, failed = [], 0.0, 0
        for task in sample:
            tick = time.process_time()
            outcome = execute(task)
            cpu += time.process_time() - tick
            walls.append(outcome.finished_at - outcome.started_at)
            failed += outcome.status != "ok"
            progress.update()
        scale = total / len(sample)
        rows.append(
            {
                "config": name,
                "tasks": total,
                "sampled": len(sample),
                "failed": failed,
                "sample_wall_s": sum(walls),
                "sample_cpu_s": cpu,
                "slowest_task_s": max(walls),
                "estimate_wall_min": sum(walls) * scale / workers / 60,
                "estimate_cpu_min": cpu * scale / workers / 60,
            }
        )
    progress.close()
    return rows


PIPELINE_MACHINES = (10, 20, 30, 40)
# Runs a command and prints its exit status, wall seconds and the peak resident memory (KiB) of its process
# tree: a small intermediary, so that what Linux carries from the parent into the child's maximum is small.
PEAK_PROBE = (
    "import resource, subprocess, sys, time\nt = time.perf_counter()\n"
    "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
    "print(code, time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


# ``pipeline.run_sweep`` in a fresh process (as ``pdors sweep run``): argv[1] the config, argv[2] its SweepOptions
# as JSON, argv[4:] its overrides; its result written as JSON to argv[3].
SWEEP_PROBE = (
    "import json, sys\nfrom dataclasses import asdict\nfrom pipeline import run_sweep\n"
    "from pipeline.sweep import SweepOptions\nconfig, options, target, *overrides = sys.argv[1:]\n"
    "r = run_sweep(config, SweepOptions(**json.loads(options), overrides=overrides))\n"
    "open(target, 'w').write(json.dumps({**asdict(r), 'root': str(r.root), 'runs_per_s': r.runs_per_s}))\n"
    "sys.exit(r.status)"
)


def _pipeline_sweep(where: Path, name: str, seeds: int, num_cpus: int, *overrides: str) -> tuple[float, JSON]:
    """The scale-pipeline sweep run in a subprocess: its wall seconds and its :class:`pipeline.sweep.SweepResult`
    (as a dict)."""
    import yaml

    config = where / f"{name}.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": name,
                "instance": {"jobs": 5, "slots": 5},
                "policies": {"fifo": {}},
                "grid": {"machines": list(PIPELINE_MACHINES)},
                "seeds": {"start": 1, "count": seeds},
                "mlflow": {"experiment": name},
            }
        )
    )
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{where / 'mlflow.db'}"}
    tick = time.perf_counter()
    result = where / f"{name}.result.json"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            SWEEP_PROBE,
            str(config),
            json.dumps({"out": str(where / name), "num_cpus": num_cpus}),
            str(result),
            *overrides,
        ],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - tick
    if done.returncode:
        raise RuntimeError(f"pipeline sweep failed ({done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}")
    return wall, json.loads(result.read_text())


def bench_pipeline(sizes: Sizes) -> JSON:
    """The scale-pipeline section (module docstring); everything in a temporary directory."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="pdors-bench-pipeline-") as tmp:
        where = Path(tmp)
        wall, swept = _pipeline_sweep(where, "scale-pipeline", sizes.pipeline_seeds, 2)
        out = where / "scale-pipeline"
        files = [p.stat().st_size for p in out.rglob("*.parquet")]  # hidden ones (.tmp-*, .damaged-*) too
        status = []
        for _ in range(sizes.pipeline_repeats):
            probe = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    PEAK_PROBE,
                    sys.executable,
                    "-m",
                    "pdors_cli.main",
                    "sweep",
                    "status",
                    "--out",
                    str(out),
                ],
                capture_output=True,
                text=True,
                cwd=where,
            )
            code, seconds, peak_kib = probe.stdout.split()
            if int(code):
                raise RuntimeError(f"sweep status failed ({code}): {probe.stderr[-2000:]}")
            status.append((float(seconds), int(peak_kib) / 1024))
        throughput = {}
        for workers in (1, 2):
            _, ratio_run = _pipeline_sweep(
                where, f"workers{workers}", sizes.pipeline_ratio_seeds, workers, "mlflow.enabled=false"
            )
            throughput[workers] = ratio_run["runs_per_s"]
    return {
        "runs": sizes.pipeline_seeds * len(PIPELINE_MACHINES),
        "end_to_end_s": wall,
        "stages": swept["stages"],
        "runs_per_s": swept["runs_per_s"],
        "parquet_files": len(files),
        "parquet_mib": sum(files) / 2**20,
        "status_s": statistics.median(s for s, _ in status),
        "status_peak_mib": max(m for _, m in status),
        "ratio_runs": sizes.pipeline_ratio_seeds * len(PIPELINE_MACHINES),
        "runs_per_s_1": throughput[1],
        "runs_per_s_2": throughput[2],
        "scaling": throughput[2] / throughput[1],
        "before": PIPELINE_BEFORE if sizes.pipeline_seeds == FULL.pipeline_seeds else None,
    }


HWM = "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')))"


# Runs a command; prints its exit status, wall seconds and the CPU seconds of its process tree.
TIME_PROBE = (
    "import resource, subprocess, sys, time\nt = time.perf_counter()\n"
    "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\nwall = time.perf_counter() - t\n"
    "r = resource.getrusage(resource.RUSAGE_CHILDREN)\nsys.stderr.write(done.stdout + done.stderr)\n"
    "print(done.returncode, wall, r.ru_utime + r.ru_stime)"
)


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, float, float, str]:
    """Exit status, wall and CPU seconds and output of ``argv`` (through :data:`TIME_PROBE`)."""
    done = subprocess.run([sys.executable, "-c", TIME_PROBE, *argv], capture_output=True, text=True, cwd=cwd, env=env)
    code, wall, cpu = done.stdout.split()
    return int(code), float(wall), float(cpu), done.stderr


def bench_sweep_overhead(sizes: Sizes, source: Path | None = None) -> JSON:
    """The sweep-overhead section (module docstring); ``source``: the code to measure (default: this one)."""
    import tempfile

    pdors = [sys.executable, "-m", "pdors_cli.main"]
    seeds = [] if sizes.pipeline_seeds == FULL.pipeline_seeds else ["seeds.count=1"]
    with tempfile.TemporaryDirectory(prefix="pdors-bench-overhead-") as tmp:
        where = Path(tmp)
        env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{where / 'mlflow.db'}", "RAY_USAGE_STATS_ENABLED": "0"}
        if source is not None:
            env["PYTHONPATH"] = os.pathsep.join([str(source), env.get("PYTHONPATH", "")])
        options = {"out": str(where / "q"), "num_cpus": 2}
        result = where / "result.json"

        def sweep(**more: bool) -> tuple[int, float, float, str]:
            probe = [sys.executable, "-c", SWEEP_PROBE, str(QUICKSTART), json.dumps({**options, **more}), str(result)]
            return _timed([*probe, *seeds], where, env)

        code, wall, _, out = sweep()
        if code:
            raise RuntimeError(f"quickstart sweep failed ({code}): {out[-2000:]}")
        first = json.loads(result.read_text())
        again = sweep()
        if again[0] and "--resume" in again[3]:  # the code before issue 37 demanded it
            again = sweep(resume=True)
        helps = {}
        for command in ("sweep", "simulate"):
            times = [_timed([*pdors, command, "--help"], where, env) for _ in range(sizes.pipeline_repeats)]
            helps[command] = (statistics.median(t[1] for t in times), statistics.median(t[2] for t in times))
        machines, jobs, slots = (str(n) for n in sizes.scale)
        bound = [sys.executable, "-m", "pdors_cli.main", "opt", "--method", "bound"]
        bound += ["--machines", machines, "--jobs", jobs, "--slots", slots]
        times = [_timed(bound, where, env) for _ in range(sizes.pipeline_repeats)]
        if failed := [t for t in times if t[0]]:
            raise RuntimeError(f"pdors opt --method bound failed ({failed[0][0]}): {failed[0][3][-2000:]}")
        helps["opt_bound"] = (statistics.median(t[1] for t in times), statistics.median(t[2] for t in times))
    stages = first["stages"]
    return {
        "runs": first["ran"],
        "wall_s": wall,
        "stages": stages,
        "beside_runs_s": sum(v for k, v in stages.items() if k != "runs"),
        "wall_minus_runs_s": wall - stages["runs"],
        "again_s": again[1],
        "again_status": again[0],
        "sweep_help_s": helps["sweep"][0],
        "sweep_help_cpu_s": helps["sweep"][1],
        "simulate_help_s": helps["simulate"][0],
        "simulate_help_cpu_s": helps["simulate"][1],
        "opt_bound_size": list(sizes.scale),
        "opt_bound_s": helps["opt_bound"][0],
        "opt_bound_cpu_s": helps["opt_bound"][1],
        "before": OVERHEAD_BEFORE if source is None and first["ran"] == OVERHEAD_BEFORE["runs"] else None,
    }


def _peak_rss_mib(code: str, *args: str) -> float:
    """Peak resident memory (MiB) of a fresh Python process running ``code``: its VmHWM (Linux), read by
    the process itself at the end. Not ``ru_maxrss``: Linux carries the parent's resident size at fork into
    the child's, so a child of a large process would report at least the parent's size."""
    done = subprocess.run([sys.executable, "-c", f"{code}\n{HWM}", *args], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"memory probe failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return int(done.stdout.split()[-1]) / 1024.0  # kB


def bench_memory(sizes: Sizes, seed: int) -> list[JSON]:
    from pdors.policies import POLICIES

    machines, jobs, slots = sizes.paper
    rows = [{"task": "import pdors.run only", "peak_rss_mib": _peak_rss_mib("import pdors.run")}]
    for policy in POLICIES:
        spec = json.dumps(dict(policy=policy, machines=machines, jobs=jobs, slots=slots, seed=seed))
        rows.append(
            {
                "task": policy,
                "peak_rss_mib": _peak_rss_mib(
                    "import json, sys; from pdors.run import run; run(json.loads(sys.argv[1]))", spec
                ),
            }
        )
    return rows


def machine() -> JSON:
    from importlib.metadata import version

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "numpy": np.__version__,
        "highspy": version("highspy"),
        "ray": version("ray"),
        "load_average_start": os.getloadavg(),
    }


def _table(rows: list[dict[str, Any]], keys: list[str]) -> str:
    def cell(v: object) -> str:
        if isinstance(v, float):
            return number(v, ".3g" if abs(v) < 100 else ".0f")
        return str(v)

    return table(keys, ([cell(r.get(k)) for k in keys] for r in rows))


def report(results: JSON) -> str:
    """The results as Markdown: one table per section, with the ratios the targets are stated in."""
    out = [f"machine: {results['machine']}"]
    if rows := results.get("latency"):
        out += [
            "\n## PD-ORS decision latency",
            _table(
                rows, ["machines", "jobs", "slots", "p50_ms", "p99_ms", "wall_s", "cpu_s", "admitted", "violations"]
            ),
        ]
        by_h = {r["machines"]: r for r in rows}
        if 100 in by_h and max(by_h) > 100:
            top = by_h[max(by_h)]
            out.append(
                f"growth H=100 -> H={top['machines']}: p50 x{top['p50_ms'] / by_h[100]['p50_ms']:.2f}, "
                f"p99 x{top['p99_ms'] / by_h[100]['p99_ms']:.2f}, "
                f"run CPU x{top['cpu_s'] / by_h[100]['cpu_s']:.2f} "
                f"(H x{top['machines'] / 100:g})"
            )
    if rows := results.get("policies"):
        out += [
            "\n## One run per policy",
            _table(rows, ["policy", "wall_s", "cpu_s", "total_utility", "admitted", "violations"]),
        ]
    if r := results.get("reference"):
        out += [
            "\n## Fast path vs reference (Algorithms 2-4 as written)",
            f"H={r['machines']} I={r['jobs']} T={r['slots']} Q={r['workload_levels']}: fast {r['fast_s']:.2f} s, "
            f"reference {r['reference_s']:.2f} s, x{r['speedup']:.0f}; same decisions: {r['same_decisions']}",
        ]
    if rows := results.get("opt"):
        out += [
            "\n## Offline optimum, small profile",
            _table(rows, ["solver", "seed", "status", "proven", "wall_s", "gap"]),
        ]
        for solver in dict.fromkeys(r["solver"] for r in rows):
            mine = [r for r in rows if r["solver"] == solver]
            out.append(
                f"{solver}: proven {sum(r['proven'] for r in mine)}/{len(mine)}, median wall "
                f"{statistics.median(r['wall_s'] for r in mine):.1f} s"
            )
    if rows := results.get("ray"):
        out += [
            "\n## Sweep throughput on Ray",
            _table(
                rows,
                [
                    "workers",
                    "runs",
                    "failed",
                    "ray_start_s",
                    "makespan_s",
                    "runs_per_s",
                    "mean_run_s",
                    "median_run_s",
                    "idle_per_task_ms",
                    "overhead_share",
                    "worker_pids",
                ],
            ),
        ]
        if len(rows) == 2:
            one, two = rows
            out.append(
                f"2 vs 1 workers: throughput x{two['runs_per_s'] / one['runs_per_s']:.2f}, mean run time "
                f"x{two['mean_run_s'] / one['mean_run_s']:.2f} (runs competing for the cores)"
            )
    if rows := results.get("scale"):
        top = rows[0]
        out += [
            f"\n## Scale: one run per policy at H = {top['machines']}, I = {top['jobs']}, T = {top['slots']}",
            _table(
                rows,
                [
                    "policy",
                    "wall_s",
                    "simulate_s",
                    "cpu_s",
                    "p50_ms",
                    "p99_ms",
                    "before_s",
                    "speedup",
                    "admitted",
                    "violations",
                    "digest",
                ],
            ),
        ]
    if r := results.get("scale-pipeline"):
        stages = ", ".join(f"{k} {v:.1f}" for k, v in r["stages"].items())
        before = r["before"]
        out += [
            f"\n## Scale: a {r['runs']:,}-run sweep of tiny runs (2 workers)",
            f"end to end {r['end_to_end_s']:.1f} s (target <= 60 s)"
            + (
                f", before {before['end_to_end_s']:.0f} s (x{before['end_to_end_s'] / r['end_to_end_s']:.1f})"
                if before
                else ""
            )
            + f"; stages (s): {stages}",
            f"runs: {r['runs_per_s']:.0f} runs/s after start-up"
            + (f" (before {before['runs_per_s']:.0f})" if before else ""),
            f"Parquet files: {r['parquet_files']} ({r['parquet_mib']:.1f} MiB; target <= 50)"
            + (f", before {before['parquet_files']:,}" if before else ""),
            f"`sweep status`: {r['status_s']:.2f} s median, peak {r['status_peak_mib']:.0f} MiB "
            f"(targets < 2 s, < 1024 MiB)",
            f"throughput on {r['ratio_runs']:,} runs: 1 worker {r['runs_per_s_1']:.0f} runs/s, 2 workers "
            f"{r['runs_per_s_2']:.0f} runs/s: x{r['scaling']:.2f} (target >= 1.8; needs two idle cores)",
        ]
    if r := results.get("sweep-overhead"):
        b = r["before"] or {}

        def was(key: str, fmt: str = ".1f") -> str:
            return f" (before {b[key]:{fmt}} s)" if key in b else ""

        out += [
            f"\n## Sweep overhead: the quickstart sweep ({r['runs']} runs, 2 CPUs)",
            f"beside the runs: stages {r['beside_runs_s']:.1f} s{was('beside_runs_s')}, wall minus the runs stage "
            f"{r['wall_minus_runs_s']:.1f} s{was('wall_minus_runs_s')} (target <= 5 s); runs stage "
            f"{r['stages']['runs']:.1f} s{was('runs_s')}; stages (s): "
            + ", ".join(f"{k} {v:.1f}" for k, v in r["stages"].items()),
            f"identical re-run: {r['again_s']:.1f} s{was('again_s')}, exit {r['again_status']} "
            "(targets <= 3 s, exit 0)",
            f"`pdors sweep --help` {r['sweep_help_s']:.2f} s{was('sweep_help_s', '.2f')}, `pdors simulate --help` "
            f"{r['simulate_help_s']:.2f} s{was('simulate_help_s', '.2f')} (target <= 0.3 s each); CPU "
            f"{r['sweep_help_cpu_s']:.2f} s and {r['simulate_help_cpu_s']:.2f} s",
            f"`pdors opt --method bound` at H, I, T = {', '.join(map(str, r['opt_bound_size']))}: "
            f"{r['opt_bound_s']:.1f} s{was('opt_bound_s')} (target <= 5 s at 1000, 1000, 80), CPU "
            f"{r['opt_bound_cpu_s']:.1f} s",
        ]
    if r := results.get("algorithm"):
        out += algorithm_speed.report(r, BEFORE["algorithm"])
    if r := results.get("sweep-latency"):
        out += sweep_latency.report(r)
    if rows := results.get("memory"):
        out += ["\n## Peak memory of one task (fresh process)", _table(rows, ["task", "peak_rss_mib"])]
    if rows := results.get("reproduction"):
        out += [
            "\n## Full reproduction on 2 workers, estimated from one seed per config",
            _table(
                rows,
                [
                    "config",
                    "tasks",
                    "sampled",
                    "failed",
                    "sample_wall_s",
                    "sample_cpu_s",
                    "slowest_task_s",
                    "estimate_wall_min",
                    "estimate_cpu_min",
                ],
            ),
            f"total: {sum(r['estimate_wall_min'] for r in rows):.1f} min wall, "
            f"{sum(r['estimate_cpu_min'] for r in rows):.1f} min CPU (perfect packing on 2 workers)",
        ]
    out.append(f"\nload average at the end: {results['load_average_end']}")
    return "\n".join(out)


def run_bench(sections: list[str], sizes: Sizes, seed: int, before: str = "main") -> JSON:
    from tqdm import tqdm

    results: JSON = {"machine": machine(), "sizes": asdict(sizes), "seed": seed}
    steps = {
        "latency": lambda: bench_latency(sizes, seed),
        "policies": lambda: bench_policies(sizes, seed),
        "reference": lambda: bench_reference(seed),
        "opt": lambda: bench_opt(sizes),
        "ray": lambda: bench_ray(sizes),
        "memory": lambda: bench_memory(sizes, seed),
        "scale": lambda: bench_scale(sizes, seed),
        "scale-pipeline": lambda: bench_pipeline(sizes),
        "sweep-overhead": lambda: bench_sweep_overhead(sizes),
        "reproduction": bench_reproduction,
        "algorithm": lambda: algorithm_speed.bench_algorithm(sizes.growth, sizes.long_slots, sizes.tiny_seeds, seed),
        "sweep-latency": lambda: sweep_latency.bench_sweep_latency(
            sizes.pipeline_seeds, sizes.pipeline_ratio_seeds, sizes.growth, before, seed
        ),
    }
    for name in tqdm(sections, desc="pdors bench", unit="section", file=sys.stderr):
        results[name] = steps[name]()
    results["load_average_end"] = os.getloadavg()
    return results
