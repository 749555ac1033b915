"""``pdors sweep run|status|log|report|list`` and ``pdors report``: thin shells over :mod:`pipeline.sweep` and
:mod:`pipeline.publish.report`."""

from __future__ import annotations

import argparse

from pdors.errors import InputError
from pipeline.spec.sizing import DEFAULT_MAX_TASKS, MACHINE_SHARE, MAX_TASKS_CEILING


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _task_limit(text: str) -> int:
    """``--max-tasks``: a whole number (``2e6`` too) in [1, MAX_TASKS_CEILING]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if not value.is_integer() or not 1 <= value <= MAX_TASKS_CEILING:
        raise argparse.ArgumentTypeError(
            f"{text} is outside [1, {MAX_TASKS_CEILING:,}]: a plan is expanded in memory, about 1 KB per task"
        )
    return int(value)


def _gigabytes(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def cmd_run(args: argparse.Namespace) -> int:
    from pipeline import sweep
    from pipeline.publish import publish_run as publish

    try:
        options = sweep.SweepOptions(
            out=args.out,
            resume=args.resume,
            max_parallel=args.max_parallel,
            ray_address=args.ray_address,
            in_process=args.in_process,
            num_cpus=args.num_cpus,
            overrides=args.overrides,
            dry_run=args.dry_run,
            retry_failed=args.retry_failed,
            max_run_memory=args.max_run_memory,
            max_tasks=args.max_tasks,
        )
        return publish.run_and_publish(args.config, options, sweep.say_out).status
    except ConnectionError as e:  # Ray or the MLflow server unreachable at the address given (the message names it)
        raise InputError(str(e)) from None


def cmd_log(args: argparse.Namespace) -> int:
    from pipeline.publish import publish_run as publish

    return publish.log(args.sweep, args.out, args.overrides)


def cmd_status(args: argparse.Namespace) -> int:
    from pipeline import sweep

    return sweep.status(args.sweep, args.out, args.overrides)


def cmd_list(args: argparse.Namespace) -> int:
    from pipeline import sweep

    return sweep.list_sweeps(args.out)


def cmd_report(args: argparse.Namespace) -> int:
    from pipeline.publish import report

    by = [a for a in (args.by or "").split(",") if a]
    return report.report_sweeps(
        args.sweep, args.out, not args.no_mlflow, getattr(args, "root", None), getattr(args, "overrides", []), by
    )


TARGET_HELP = (
    "a sweep config (its sweep under --out, default the config's output), a sweep id, a sweep "
    "directory or an output root (default: the latest sweep)"
)


def _report_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-mlflow", action="store_true", help="do not attach the files to MLflow")
    p.add_argument("--by", metavar="AXIS[,AXIS]", help="headline table: a row per policy and value of these grid axes")
    p.set_defaults(func=cmd_report)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("sweep")
    sub = p.add_subparsers(dest="sweep_command", required=True)
    r = sub.add_parser(
        "run",
        help="expand a sweep config and run what is not recorded yet",
        description="KEY=VALUE overrides after the config: seeds.count=3 grid.machines=[10,20] "
        "instance.jobs=20 policies.pdors.rounding.gain=0.8 grid.machines=range(10,50,10)",
    )
    r.add_argument("config", help="sweep config (YAML), e.g. configs/quickstart.yaml")
    r.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="override a config value (YAML value)")
    r.add_argument("--ray-address", help="Ray cluster to use (default: $RAY_ADDRESS, else a local Ray)")
    r.add_argument("--out", help="output root (default: the config's 'output')")
    r.add_argument("--resume", action="store_true", help="continue a sweep that already ran")
    r.add_argument("--retry-failed", action="store_true", help="run again the runs recorded as failed or invalid")
    r.add_argument("--dry-run", action="store_true", help="print the plan and a time estimate; write nothing")
    r.add_argument("--max-parallel", type=_positive, help="tasks in flight at once (default: 2 x cluster CPUs)")
    r.add_argument("--num-cpus", type=_positive, help="CPUs of the local Ray (default: all; not with a cluster)")
    r.add_argument(
        "--max-run-memory",
        type=_gigabytes,
        metavar="GB",
        help=f"refuse runs estimated to need more (default: {MACHINE_SHARE * 100:.0f}%% of the available memory "
        "over the runs at once)",
    )
    r.add_argument(
        "--max-tasks",
        type=_task_limit,
        default=DEFAULT_MAX_TASKS,
        metavar="N",
        help=f"refuse a sweep planning more tasks, before expanding it (default: {DEFAULT_MAX_TASKS:,})",
    )
    r.add_argument(
        "--in-process",
        action="store_true",
        help="run the tasks one by one in this process, without Ray (small sweeps, debugging)",
    )
    r.set_defaults(func=cmd_run)
    for name, func, help_ in (
        ("status", cmd_status, "progress and integrity of a sweep"),
        ("log", cmd_log, "(re-)log a sweep to MLflow from its Parquet record"),
        ("report", cmd_report, "a sweep's figures and tables (as `pdors report`)"),
    ):
        s = sub.add_parser(name, help=help_)
        s.add_argument("sweep", nargs="?", metavar="CONFIG_OR_SWEEP", help=TARGET_HELP)
        s.add_argument(
            "overrides", nargs="*", metavar="KEY=VALUE", help="after a config: the overrides `sweep run` was given"
        )
        s.add_argument(
            "--out",
            dest="root" if name == "report" else "out",
            help="output root to look in (default: the config's output, else every root under results/)",
        )
        if name == "report":
            s.add_argument("--report-dir", dest="out", help="write the files here (default: <root>/sweeps/<id>/report)")
            _report_args(s)
        else:
            s.set_defaults(func=func)
    ls = sub.add_parser("list", help="every sweep with its counts")
    ls.add_argument("--out", help="output root (default: every root under results/)")
    ls.set_defaults(func=cmd_list)
    rp = subparsers.add_parser("report")
    rp.add_argument("sweep", metavar="SWEEP_OR_DIR", help=TARGET_HELP)
    rp.add_argument("--out", help="write the files here (default: <root>/sweeps/<id>/report)")
    _report_args(rp)
