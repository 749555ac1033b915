"""``pdors bench --only algorithm``: issue 37's algorithm figures, each beside its before figure.

* ``tiny``: CPU milliseconds per tiny run (FIFO, I = 5, T = 5, H in {10, 20, 30, 40}), the unit of the 10,000-run
  sweep, in this process;
* ``growth``: one PD-ORS run per size H = I in ``sizes`` (T = 80), each alone in a fresh process: its CPU
  seconds (``getrusage`` of that process), peak resident memory (VmHWM), schedule digest, decision latency p50/p99
  in wall and in thread CPU time; the growth exponent of CPU time between the smallest and the largest size;
* ``long_horizon``: 3 jobs (FIFO) over ``slots`` slots against the same 3 jobs over 20: CPU seconds, the slots
  simulated, and whether the schedules and the utility are the same.

CPU time, not wall time, is the measure: the machine is shared. The before figures were measured on the code
before issue 37 (docs/performance_before.json, ``algorithm``: the same commands, same machine, same load).
"""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
import time
from typing import Any

TINY_MACHINES = (10, 20, 30, 40)
GROWTH_RUN = (
    "import json, resource, sys\nfrom pdors.run import run\n"
    "s = run(json.loads(sys.argv[1])).summary\nu = resource.getrusage(resource.RUSAGE_SELF)\n"
    "hwm = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:'))\n"
    "print(json.dumps({'cpu_s': u.ru_utime + u.ru_stime, 'peak_rss_mib': hwm / 1024, 'digest': s.schedule_digest,"
    " 'p50_ms': s.decision_latency_ms.p50, 'p99_ms': s.decision_latency_ms.p99, 'cpu_p50_ms': s.decision_cpu_ms.p50,"
    " 'cpu_p99_ms': s.decision_cpu_ms.p99, 'lp_solves': s.policy_stats['lp_solves']}))"
)


def tiny_runs(seeds: int) -> dict[str, Any]:
    from pdors.run import run

    specs = [
        dict(policy="fifo", machines=h, jobs=5, slots=5, seed=s) for h in TINY_MACHINES for s in range(1, seeds + 1)
    ]
    run(specs[0])  # imports and first-call set-up are not a run's cost
    cpu = time.process_time()
    for spec in specs:
        run(spec)
    return {"runs": len(specs), "cpu_ms_per_run": (time.process_time() - cpu) / len(specs) * 1e3}


def growth(sizes: tuple[int, ...], slots: int, seed: int, env: dict[str, str] | None = None) -> dict[str, Any]:
    """PD-ORS at H = I = each of ``sizes``, each alone in a fresh process (``env``: its environment, e.g. another
    code first on PYTHONPATH)."""
    rows = []
    for n in sizes:
        spec = json.dumps(dict(policy="pdors", machines=n, jobs=n, slots=slots, seed=seed))
        done = subprocess.run([sys.executable, "-c", GROWTH_RUN, spec], capture_output=True, text=True, env=env)
        if done.returncode:
            raise RuntimeError(f"PD-ORS run at {n} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        rows.append({"size": n, "slots": slots, **json.loads(done.stdout.splitlines()[-1])})
    first, last = rows[0], rows[-1]
    exponent = (
        math.log(last["cpu_s"] / first["cpu_s"]) / math.log(last["size"] / first["size"]) if len(rows) > 1 else None
    )
    return {"rows": rows, "cpu_exponent": exponent}


def long_horizon(slots: int) -> dict[str, Any]:
    from pdors.run import RunSpec, make_instance, run
    from pdors.workload import WorkloadConfig

    spec = RunSpec(policy="fifo", machines=10, jobs=3, slots=20, seed=2, workload=WorkloadConfig(workload_scale=0.01))
    instance = make_instance(spec)
    short = run(spec, instance)
    cpu = time.process_time()
    long = run(dataclasses.replace(spec, slots=slots), dataclasses.replace(instance, slots=slots))
    cpu = time.process_time() - cpu
    same = long.simulation.schedule.to_sparse()["cells"] == short.simulation.schedule.to_sparse()["cells"]
    return {
        "slots": slots,
        "cpu_s": cpu,
        "slots_simulated": long.simulation.slots_simulated,
        "same_result": bool(same and long.summary.total_utility == short.summary.total_utility),
    }


def bench_algorithm(growth_sizes: tuple[int, ...], long_slots: int, tiny_seeds: int, seed: int) -> dict[str, Any]:
    return {
        "tiny": tiny_runs(tiny_seeds),
        "growth": growth(growth_sizes, 80, seed),
        "long_horizon": long_horizon(long_slots),
    }


def report(r: dict[str, Any], before: dict[str, Any]) -> list[str]:
    """Markdown lines for ``r`` (:func:`bench_algorithm`) beside ``before`` (performance_before.json)."""
    tiny, grow, long = r["tiny"], r["growth"], r["long_horizon"]
    out = [
        "\n## Algorithm (issue 37): tiny runs, PD-ORS growth, long horizons (CPU time)",
        f"tiny run (FIFO, I = T = 5): {tiny['cpu_ms_per_run']:.2f} ms CPU per run "
        f"(before {before['tiny_cpu_ms_per_run']:.2f} ms)",
        "| H = I | T | CPU s | before CPU s | peak RSS MiB | before MiB | p50 / p99 ms wall | p50 / p99 ms CPU | "
        "LP solves | digest |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    old = {int(k): v for k, v in before["pdors_growth"].items() if not k.startswith("_")}
    for row in grow["rows"]:
        b = old.get(row["size"], {})
        out.append(
            f"| {row['size']} | {row['slots']} | {row['cpu_s']:.1f} | {b.get('cpu_s', '-')} | "
            f"{row['peak_rss_mib']:.0f} | {b.get('peak_rss_mib', '-')} | {row['p50_ms']:.0f} / {row['p99_ms']:.0f} | "
            f"{row['cpu_p50_ms']:.0f} / {row['cpu_p99_ms']:.0f} | {row['lp_solves']} | {row['digest']} |"
        )
    if grow["cpu_exponent"] is not None:
        sizes = [row["size"] for row in grow["rows"]]
        same = (sizes[0], sizes[-1]) == (min(old), max(old))  # the before exponent is over the stored sizes
        out.append(
            f"CPU growth exponent {sizes[0]} -> {sizes[-1]}: n^{grow['cpu_exponent']:.2f}"
            + (f" (before n^{before['pdors_cpu_exponent']:.2f})" if same else "")
        )
    out.append(
        f"3 jobs over {long['slots']:,} slots: {long['cpu_s']:.2f} s CPU, {long['slots_simulated']} slots simulated, "
        f"same result as over 20 slots: {long['same_result']} (before: {before['long_horizon']})"
    )
    return out
