"""``pdors simulate``: one policy on one instance, its schedule validated, the summary printed (and saved)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pdors.errors import ExitStatus

from .run_spec import add_run_args, run_spec_from_args


def cmd_simulate(args: argparse.Namespace) -> int:
    from pdors.instance_io import load  # here: `pdors simulate --help` needs neither PyArrow nor the simulator
    from pdors.run import run
    from pdors.schedule_io import write as write_schedule

    instance = load(args.instance) if args.instance else None
    if instance is not None:  # the memory check (in run_spec_from_args) takes the file's sizes
        args.machines, args.jobs, args.slots = instance.num_machines, instance.num_jobs, instance.slots
        args.resources = len(instance.cluster.resources)
    spec = run_spec_from_args(args)
    result = run(spec, instance)
    s = result.summary
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(s.to_dict(), indent=1))
    if args.schedule:
        write_schedule(args.schedule, result.simulation.schedule)
    lat, cpu = s.decision_latency_ms, s.decision_cpu_ms
    print(
        f"{s.policy}: H={s.machines} I={s.num_jobs} T={s.slots} seed={s.seed}\n"
        f"  total utility {s.total_utility:.3f}; admitted {s.admitted}, completed {s.completed}, "
        f"rejected {s.rejected}; median training time {s.median_training_time:g} slots\n"
        f"  utilisation " + ", ".join(f"{k} {v:.1%}" for k, v in s.utilisation.items()) + "\n"
        "  offered load "
        + ", ".join(f"{k} {v:.3g}" for k, v in s.offered_load.items())
        + f"; at most {s.fluid_completable} jobs can complete (fluid bound)\n"
        f"  decision latency p50 {lat.p50:.1f} ms, p99 {lat.p99:.1f} ms (CPU p50 {cpu.p50:.1f} ms, p99 {cpu.p99:.1f} "
        f"ms); wall {s.wall_s:.2f} s\n"
        f"  validator: {len(s.violations)} violation(s)"
        + (f"; JSON written to {args.json}" if args.json else "")
        + (f"; schedule written to {args.schedule}" if args.schedule else "")
    )
    for v in s.violations[:10]:
        print(f"    {v['kind']}: {v['detail']} (slot {v['slot']}, job {v['job']}, machine {v['machine']})")
    return ExitStatus.FAILED if s.violations else ExitStatus.OK


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("simulate")
    add_run_args(p)
    p.add_argument("--instance", help="instance JSON to use instead of generating one")
    p.add_argument("--json", help="write the run summary here")
    p.add_argument(
        "--schedule",
        metavar="FILE.parquet",
        help="write the schedule here: one row per (job, machine, slot) with workers, PSs, internal",
    )
    p.set_defaults(func=cmd_simulate)
