"""The ``pdors`` command line. Each subcommand is a thin shell over a library function."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .config import ConfigError


def _load_yaml(path: str) -> dict:
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError("--config", f"no such file: {path}") from None
    except yaml.YAMLError as e:
        raise ConfigError("--config", f"{path} is not valid YAML: {e}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError("--config", f"{path} must hold a mapping")
    return data


def run_spec_from_args(args) -> dict:
    """A run spec dict: the config file's ``workload`` and ``policies.<name>`` plus command-line sizes."""
    file = _load_yaml(args.config) if args.config else {}
    unknown = sorted(set(file) - {"workload", "policies"})
    if unknown:
        raise ConfigError(unknown[0], "unknown key in a run config (known: policies, workload)")
    policies = file.get("policies") or {}
    if not isinstance(policies, dict):
        raise ConfigError("policies", "must map policy names to their parameters")
    return {
        "policy": args.policy, "machines": args.machines, "jobs": args.jobs, "slots": args.slots,
        "seed": args.seed, "workload": file.get("workload") or {}, "params": policies.get(args.policy) or {},
    }


def cmd_simulate(args) -> int:
    from .instance_io import load
    from .run import run

    instance = load(args.instance) if args.instance else None
    spec = run_spec_from_args(args)
    if instance is not None:
        spec.update(machines=instance.num_machines, jobs=instance.num_jobs, slots=instance.slots)
    result = run(spec, instance)
    s = result.summary
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(s, indent=1))
    if args.schedule:
        from .schedule_io import write

        write(args.schedule, result.simulation.schedule)
    lat = s["decision_latency_ms"]
    print(f"{s['policy']}: H={s['machines']} I={s['num_jobs']} T={s['slots']} seed={s['seed']}\n"
          f"  total utility {s['total_utility']:.3f}; admitted {s['admitted']}, completed {s['completed']}, "
          f"rejected {s['rejected']}; median training time {s['median_training_time']:g} slots\n"
          f"  utilisation " + ", ".join(f"{k} {v:.1%}" for k, v in s["utilisation"].items()) + "\n"
          f"  decision latency p50 {lat['p50']:.1f} ms, p99 {lat['p99']:.1f} ms; wall {s['wall_s']:.2f} s\n"
          f"  validator: {len(s['violations'])} violation(s)"
          + (f"; JSON written to {args.json}" if args.json else "")
          + (f"; schedule written to {args.schedule}" if args.schedule else ""))
    for v in s["violations"][:10]:
        print(f"    {v['kind']}: {v['detail']} (slot {v['slot']}, job {v['job']}, machine {v['machine']})")
    return 1 if s["violations"] else 0


def _add_run_args(p, policy_default="pdors") -> None:
    from .policies import POLICIES

    p.add_argument("--policy", default=policy_default, choices=POLICIES)
    p.add_argument("--machines", type=int, default=30, help="H, machines")
    p.add_argument("--jobs", type=int, default=50, help="I, jobs")
    p.add_argument("--slots", type=int, default=20, help="T, slots in the horizon")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--config", help="YAML with optional 'workload' and 'policies.<name>' sections")


# Modules that add subcommands: each defines ``register(subparsers)``; handlers are ``func(args) -> int``.
SUBCOMMAND_MODULES: tuple[str, ...] = ("pdors.compare", "pipeline.cli", "offline_opt.cli", "pipeline.nightly",
                                        "pdors.bench", "pipeline.show")


def parser() -> argparse.ArgumentParser:
    import importlib

    ap = argparse.ArgumentParser(prog="pdors", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    sim = sub.add_parser("simulate", help="simulate one policy on one instance and validate the schedule")
    _add_run_args(sim)
    sim.add_argument("--instance", help="instance JSON to use instead of generating one")
    sim.add_argument("--json", help="write the run summary here")
    sim.add_argument("--schedule", metavar="FILE.parquet",
                     help="write the schedule here: one row per (job, machine, slot) with workers, PSs, internal")
    sim.set_defaults(func=cmd_simulate)
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return ap


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, ValueError) as e:
        print(f"pdors {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
