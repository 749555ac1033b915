"""``pdors bench --only sweep-latency``: issue 49's targets, each beside its before figure measured in the same run.

The before code is a git revision (``--before REV``, default ``main``) exported to a temporary directory and put
first on ``PYTHONPATH``; every sweep is ``pdors sweep run`` in a fresh process on a local Ray with 2 CPUs and MLflow
on a SQLite store of its own, its output lines timestamped as they arrive: the runs end when ``ran N tasks`` is
printed, the headline is on screen when ``Total utility`` is. Rows:

* the 10,000-run sweep (FIFO, I = T = 5, 4 cluster sizes x 2,500 seeds) end to end, its stages, and its runs stage
  against the process-pool floor: the same runs through ``pipeline.execute.executor.execute_chunk`` in a plain
  ``multiprocessing`` pool of 2 processes, chunks of 256 (the pool's start included). The floor's rule: the median
  wall time of ``FLOOR_REPEATS`` pools, each forked from a fresh process that has imported only the executor and
  the grid, taken right before the present code's 10,000-run sweep so that both meet the same load; beside it the
  pools' CPU per run (getrusage of their processes), which the load does not inflate. Why: one pool at the
  bench's start, forked from the bench (MLflow imported), came out 14.1 s in one session and 23.4 s in the next on
  the same runs; measured again at load 3-5.5, such pools took 22-60 s of wall for 27-34 s of CPU (the load moves
  the wall time), and forked after MLflow's import they used 30-34 s of CPU against 28-29 s without it;
* throughput with 1 and 2 workers (2,000 of those runs, MLflow off);
* the quickstart sweep (40 runs): the headline's delay after the last run and the wall time beyond the runs stage,
  with a cold Ray (the sweep's own) and, for the present code, with ``pdors ray up`` running (a head of the
  bench's own, ``PDORS_RAY_HOME`` in a temporary directory, stopped at the end);
* 8 tiny runs (FIFO, I = T = 5, 4 cluster sizes x 2 seeds) end to end, cold and with the head;
* PD-ORS at H = I = 250 and 1000 (``--quick``: 100 and 200), T = 80 (:func:`studies.algorithm_speed.growth`)
  under both codes: CPU seconds and the schedule digests, which must be equal.

An empty MLflow store migrated once is made before anything is timed (``PDORS_MLFLOW_TEMPLATE_DIR`` in the
temporary directory): the present code copies it for each new store, the before code migrates each.
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from . import algorithm_speed

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "configs" / "quickstart.yaml"
FLOOR_CHUNK = 256


def _export(rev: str, where: Path) -> Path:
    """The code of git revision ``rev`` under ``where`` (its importable packages)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    target = where / "before"
    target.mkdir()
    archive_path = where / "before.tar"
    archive_path.write_bytes(archive)
    with tarfile.open(archive_path) as tar:
        tar.extractall(target, filter="data")
    return target


def _tiny_config(where: Path, name: str, seeds: int) -> Path:
    path = where / f"{name}.yaml"
    config = {
        "name": name,
        "instance": {"jobs": 5, "slots": 5},
        "policies": {"fifo": {}},
        "grid": {"machines": [10, 20, 30, 40]},
        "seeds": {"start": 1, "count": seeds},
        "mlflow": {"experiment": name},
    }
    path.write_text(yaml.safe_dump(config))
    return path


def _sweep(env: dict[str, str], cwd: Path, config: Path, out: Path, *more: str) -> dict[str, Any]:
    """``pdors sweep run`` in a fresh process: wall seconds, the runs' end and the headline's appearance (seconds
    after the start), and the stages it printed."""
    argv = [sys.executable, "-m", "pdors_cli.main", "sweep", "run", str(config), "--out", str(out), *more]
    tick = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, text=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    ran = headline = None
    stages: dict[str, float] = {}
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        now = time.perf_counter() - tick
        lines.append(line)
        if ran is None and line.startswith("ran "):
            ran = now
        elif headline is None and line.startswith("Total utility"):
            headline = now
        elif line.startswith("stages (s): "):
            stages = {k: float(v) for k, v in (p.split() for p in line.removeprefix("stages (s): ").split(", "))}
    code = proc.wait()
    wall = time.perf_counter() - tick
    if code not in (0, 1):
        raise RuntimeError(f"sweep {config.name} failed ({code}): {''.join(lines)[-2000:]}")
    return {
        "wall_s": wall,
        "stages": stages,
        "headline_after_runs_s": headline - ran if headline is not None and ran is not None else None,
        "beyond_runs_s": wall - stages.get("runs", 0.0),
        "connected": next((ln.split(";")[0] for ln in lines if ln.startswith("Ray: ")), ""),
    }


def pool_once(config: Path) -> dict[str, Any]:
    """The runs of ``config`` through a plain process pool of 2 (chunks of ``FLOOR_CHUNK``), in this process:
    wall seconds, the pool processes' CPU seconds and the load average at the start."""
    import multiprocessing
    import resource

    from pipeline.execute.executor import execute_chunk
    from pipeline.spec import grid, schema

    tasks = grid.expand(schema.load(config)).tasks
    chunks = [tasks[k : k + FLOOR_CHUNK] for k in range(0, len(tasks), FLOOR_CHUNK)]
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    tick = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(2) as pool:
        outcomes = [o for chunk in pool.imap_unordered(execute_chunk, chunks) for o in chunk]
    wall = time.perf_counter() - tick
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {
        "runs": len(outcomes),
        "ok": sum(o.status == "ok" for o in outcomes),
        "wall_s": wall,
        "cpu_s": cpu,
        "load": load,
    }


FLOOR_REPEATS = 3


def _floor(env: dict[str, str], config: Path) -> dict[str, Any]:
    """The floor (module doc): ``FLOOR_REPEATS`` pools, each in a fresh process; the median wall time, each
    pool's wall time and load, and the median CPU milliseconds per run."""
    code = "import json, sys; from studies.sweep_latency import pool_once; print(json.dumps(pool_once(sys.argv[1])))"
    pools = []
    for _ in range(FLOOR_REPEATS):
        done = subprocess.run(
            [sys.executable, "-c", code, str(config)], env=env, cwd=ROOT, capture_output=True, text=True, check=True
        )
        pools.append(json.loads(done.stdout.splitlines()[-1]))
    return {
        "runs": pools[0]["runs"],
        "ok": min(p["ok"] for p in pools),
        "wall_s": statistics.median(p["wall_s"] for p in pools),
        "walls": [round(p["wall_s"], 1) for p in pools],
        "loads": [round(p["load"], 1) for p in pools],
        "cpu_ms_per_run": statistics.median(1e3 * p["cpu_s"] / p["runs"] for p in pools),
    }


def _head(env: dict[str, str], up: bool) -> None:
    cmd = ["up", "--num-cpus", "2"] if up else ["down"]
    done = subprocess.run(
        [sys.executable, "-m", "pdors_cli.main", "ray", *cmd], env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise RuntimeError(f"pdors ray {cmd[0]} failed: {done.stdout}{done.stderr}")


def bench_sweep_latency(
    scale_seeds: int, ratio_seeds: int, growth: tuple[int, ...], before_rev: str, seed: int
) -> dict[str, Any]:
    from mlflow.tracking import MlflowClient

    with tempfile.TemporaryDirectory(prefix="pdl", dir="/tmp") as tmp:
        where = Path(tmp)
        before_code = _export(before_rev, where)
        base = {
            **os.environ,
            "RAY_USAGE_STATS_ENABLED": "0",
            "PDORS_MLFLOW_TEMPLATE_DIR": str(where / "template"),
            "PDORS_RAY_HOME": str(where / "h"),  # no head there unless this bench starts one
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        (where / "template").mkdir()
        from importlib.metadata import version

        template = where / "template" / f"mlflow-{version('mlflow')}-empty.db"
        MlflowClient(f"sqlite:///{template}").search_experiments()
        codes = {"before": before_code, "now": ROOT}
        scale = _tiny_config(where, "scale", scale_seeds)
        ratio = _tiny_config(where, "ratio", ratio_seeds)
        tiny = _tiny_config(where, "tiny", 2)
        rows: dict[str, Any] = {"before_rev": before_rev, "load_start": os.getloadavg()}
        stores = itertools.count()
        for name, code in codes.items():
            path = os.pathsep.join([str(code), os.environ.get("PYTHONPATH", "")])

            def env(path: str = path) -> dict[str, str]:  # the code's, with an MLflow store of its own
                return {**base, "PYTHONPATH": path, "MLFLOW_TRACKING_URI": f"sqlite:///{where / f'{next(stores)}.db'}"}

            r: dict[str, Any] = {}
            if name == "now":  # right before its sweep, at the load that sweep meets
                rows["floor"] = _floor(base, scale)
            r["scale"] = _sweep(env(), where, scale, where / f"{name}-scale", "--num-cpus", "2")
            for workers in (1, 2):
                out = where / f"{name}-w{workers}"
                off = _sweep(env(), where, ratio, out, "--num-cpus", str(workers), "mlflow.enabled=false")
                r[f"runs_per_s_{workers}"] = ratio_seeds * 4 / off["stages"]["runs"]
            r["quickstart_cold"] = _sweep(env(), where, QUICKSTART, where / f"{name}-q", "--num-cpus", "2")
            r["tiny_cold"] = _sweep(env(), where, tiny, where / f"{name}-t", "--num-cpus", "2")
            if name == "now":
                _head(base, True)
                try:
                    r["quickstart_head"] = _sweep(env(), where, QUICKSTART, where / f"{name}-qh")
                    r["tiny_head"] = _sweep(env(), where, tiny, where / f"{name}-th")
                finally:
                    _head(base, False)
            r["growth"] = algorithm_speed.growth(growth, 80, seed, {**base, "PYTHONPATH": env()["PYTHONPATH"]})
            rows[name] = r
        rows["load_end"] = os.getloadavg()
    return rows


def report(r: dict[str, Any]) -> list[str]:
    """Markdown lines for ``r`` (:func:`bench_sweep_latency`): each target's figure beside its before figure."""
    b, n, floor = r["before"], r["now"], r["floor"]

    def s(v: float | None) -> str:
        return "-" if v is None else f"{v:.1f} s"

    def stages(x: dict[str, Any]) -> str:
        return ", ".join(f"{k} {v:.1f}" for k, v in x["stages"].items())

    grow_b = {row["size"]: row for row in b["growth"]["rows"]}
    grow = [
        f"| PD-ORS H = I = {row['size']}, T = 80: CPU | {row['cpu_s']:.1f} s, digest {row['digest']} | "
        f"{grow_b[row['size']]['cpu_s']:.1f} s, digest {grow_b[row['size']]['digest']} | same digest: "
        f"{row['digest'] == grow_b[row['size']]['digest']} |"
        for row in n["growth"]["rows"]
    ]
    return [
        f"\n## Sweep latency (issue 49), against {r['before_rev']} in the same run; load {r['load_start']} -> "
        f"{r['load_end']}",
        "| figure | now | before | target |",
        "| --- | --- | --- | --- |",
        f"| 10,000-run sweep end to end | {s(n['scale']['wall_s'])} | {s(b['scale']['wall_s'])} | "
        "<= 15 s at load < 1.5 |",
        f"| its runs stage / process-pool floor ({floor['wall_s']:.1f} s, median of {floor['walls']} s) | "
        f"{n['scale']['stages']['runs'] / floor['wall_s']:.2f} | {b['scale']['stages']['runs'] / floor['wall_s']:.2f} "
        "| <= 1.3 |",
        f"| 2 workers / 1 worker (runs/s) | {n['runs_per_s_2'] / n['runs_per_s_1']:.2f} | "
        f"{b['runs_per_s_2'] / b['runs_per_s_1']:.2f} | >= 1.7 |",
        f"| quickstart: headline after the last run, cold Ray | {s(n['quickstart_cold']['headline_after_runs_s'])} | "
        f"{s(b['quickstart_cold']['headline_after_runs_s'])} | <= 2 s |",
        f"| quickstart: headline after the last run, `pdors ray up` | "
        f"{s(n['quickstart_head']['headline_after_runs_s'])} | - | <= 2 s |",
        f"| quickstart: beyond the runs, cold Ray | {s(n['quickstart_cold']['beyond_runs_s'])} | "
        f"{s(b['quickstart_cold']['beyond_runs_s'])} | <= 6 s |",
        f"| quickstart: beyond the runs, `pdors ray up` | {s(n['quickstart_head']['beyond_runs_s'])} | "
        f"{s(b['quickstart_cold']['beyond_runs_s'])} (cold) | <= 3 s |",
        f"| 8 tiny runs end to end, `pdors ray up` | {s(n['tiny_head']['wall_s'])} | "
        f"{s(b['tiny_cold']['wall_s'])} (cold) | <= 5 s |",
        f"| 8 tiny runs end to end, cold Ray | {s(n['tiny_cold']['wall_s'])} | {s(b['tiny_cold']['wall_s'])} | - |",
        *grow,
        f"stages (s), 10,000 runs, now: {stages(n['scale'])}; before: {stages(b['scale'])}",
        f"floor: pools of {floor['walls']} s at load {floor['loads']}, {floor['cpu_ms_per_run']:.2f} ms of CPU per run",
        f"stages (s), quickstart cold, now: {stages(n['quickstart_cold'])}; before: {stages(b['quickstart_cold'])}",
        f"stages (s), quickstart with the head: {stages(n['quickstart_head'])}",
        "Figures under load (load average above 1.5) are not verdicts on the targets.",
    ]
