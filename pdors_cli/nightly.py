"""``pdors nightly``: the arguments of :mod:`pipeline.nightly.run`'s regression check."""

from __future__ import annotations

import argparse
import sys

from pdors.errors import ExitStatus


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from offline_opt.solvers import SOLVERS
    from pipeline.nightly.run import Settings

    d = Settings()
    p = subparsers.add_parser("nightly")
    p.add_argument(
        "--record", action="store_true", help="re-write the pinned set (--record-file) by its rule instead of checking"
    )
    p.add_argument("--profile", default=d.profile, help="instance profile (offline_opt/profile.py)")
    p.add_argument("--fresh", type=int, default=d.fresh, help="M fresh instances: seeds S .. S+M-1")
    p.add_argument(
        "--paper",
        type=int,
        default=d.paper,
        help="fresh instances at the paper's size (H = 100, I = 100, T = 80; seeds S+50 ..), judged against the "
        "certified dual bound",
    )
    p.add_argument(
        "--fig09",
        type=int,
        default=d.fig09,
        help="fresh instances in Fig. 9's setting (H = 30, I = 100, T = 80; seeds S+70 ..), judged likewise",
    )
    p.add_argument("--pinned", type=int, default=d.pinned, help="with --record: N instances to pin")
    p.add_argument(
        "--seed",
        type=int,
        default=d.seed,
        help="S, the first fresh seed (default: YYYYMMDD * 100 of today, UTC); with --record the "
        "first seed scanned (default 1)",
    )
    p.add_argument("--solver", choices=SOLVERS, default=d.solver)
    p.add_argument("--time-limit", type=float, default=d.time_limit, help="seconds per OPT solve, in (0, 1e6]")
    p.add_argument("--mip-gap", type=float, default=d.mip_gap, help="relative gap target of OPT, in [0, 1)")
    p.add_argument(
        "--tolerance",
        type=float,
        default=d.tolerance,
        help="relative drop of PD-ORS's utility below its record that fails the night",
    )
    p.add_argument("--record-file", default=d.record_file, help="the pinned set's record (JSON)")
    p.add_argument("--out", default=d.out, help="output root; each run writes <out>/nightly-<UTC time>-...")
    p.add_argument("--no-mlflow", action="store_true", help="write the files only")
    p.add_argument(
        "--policies",
        default="",
        help="comma-separated policies judged on the fresh instances, pdors among them, built-in or external "
        "(default: the built-ins)",
    )
    p.set_defaults(func=cmd_nightly)


def cmd_nightly(args: argparse.Namespace) -> int:
    from pdors.config import build
    from pipeline.nightly import record as nightly_record
    from pipeline.nightly.run import Settings, rerecord, run

    settings = build(
        Settings,
        {
            k: getattr(args, k)
            for k in (
                "profile",
                "fresh",
                "paper",
                "fig09",
                "pinned",
                "seed",
                "solver",
                "time_limit",
                "mip_gap",
                "tolerance",
                "record_file",
                "out",
            )
        }
        | {"policies": [p.strip() for p in args.policies.split(",") if p.strip()]},
    )
    if args.record:
        try:
            return rerecord(settings)
        except nightly_record.RecordError as e:  # too few proven seeds, or a hard violation: a verdict
            print(f"pdors nightly --record: {e}", file=sys.stderr)
            return ExitStatus.FAILED
    nightly_record.load(settings.record_file, settings.profile)  # bad input: before anything runs
    return run(settings, track=not args.no_mlflow)
