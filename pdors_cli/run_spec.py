"""A run spec from command-line arguments: the shared options of ``pdors simulate`` and ``pdors compare``."""

from __future__ import annotations

import argparse
from typing import Any

from pdors.config import JSON
from pdors.errors import ConfigError, InputError
from pdors.policies import known, resolve
from pipeline.spec.sizing import GENERATED_RESOURCES, MACHINE_SHARE, memory_problem


def _load_yaml(path: str) -> JSON:
    from pdors import bounded, safe_yaml  # here: `pdors simulate --help` needs no YAML parser

    try:
        data = safe_yaml.load(bounded.read(path, safe_yaml.MAX_BYTES), "--config")
    except bounded.InputTooLarge as e:
        raise ConfigError("--config", str(e)) from None
    except FileNotFoundError:
        raise ConfigError("--config", f"no such file: {path}") from None
    except ConfigError as e:
        raise ConfigError("--config", f"{path}: {e.reason}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError("--config", f"{path} must hold a mapping")
    return data


def run_spec_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """A run spec dict: the config file's ``workload`` and ``policies.<name>`` plus command-line sizes."""
    file = _load_yaml(args.config) if args.config else {}
    unknown = sorted(set(file) - {"workload", "policies"})
    if unknown:
        raise ConfigError(unknown[0], "unknown key in a run config (known: policies, workload)")
    policies = file.get("policies") or {}
    if not isinstance(policies, dict):
        raise ConfigError("policies", "must map policy names to their parameters")
    why = memory_problem(args.machines, args.jobs, args.slots, args.max_run_memory, resources=args.resources)
    if why is not None:
        raise InputError(f"too large: {why}")
    return {
        "policy": args.policy,
        "machines": args.machines,
        "jobs": args.jobs,
        "slots": args.slots,
        "seed": args.seed,
        "workload": file.get("workload") or {},
        "params": policies.get(args.policy) or {},
    }


def policy_list(text: str) -> list[str]:
    """The policy names of a ``--policies`` value (comma-separated); ``ConfigError`` on an unknown name or none."""
    policies = [p.strip() for p in text.split(",") if p.strip()]
    if not policies:
        raise ConfigError("--policies", f"name at least one policy (known: {', '.join(known())})")
    for name in policies:
        try:
            resolve(name)
        except InputError as e:
            raise ConfigError("--policies", str(e).removeprefix("policy").lstrip(": ")) from None
    return policies


def add_run_args(p: argparse.ArgumentParser, policy_default: str = "pdors") -> None:
    p.add_argument(
        "--policy", default=policy_default, help="a built-in policy, an installed one's name or package.module:Class"
    )
    p.add_argument("--machines", type=int, default=30, help="H, machines")
    p.add_argument("--jobs", type=int, default=50, help="I, jobs")
    p.add_argument("--slots", type=int, default=20, help="T, slots in the horizon")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--config", help="YAML with optional 'workload' and 'policies.<name>' sections")
    add_memory_arg(p)


def add_memory_arg(p: argparse.ArgumentParser) -> None:
    p.set_defaults(resources=GENERATED_RESOURCES)  # R for the memory check; an instance file sets its own
    p.add_argument(
        "--max-run-memory",
        type=float,
        metavar="GB",
        help=f"refuse a run estimated to need more (default: {MACHINE_SHARE * 100:.0f}%% of the available memory)",
    )
