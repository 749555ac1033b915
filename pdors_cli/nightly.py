"""``pdors nightly``: the arguments of :mod:`pipeline.nightly.run`'s regression check."""

from __future__ import annotations

import argparse
import sys

from pdors.errors import ExitStatus, InputError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from offline_opt.solvers import SOLVERS
    from pipeline.nightly import power
    from pipeline.nightly.run import Settings

    d = Settings()
    p = subparsers.add_parser(
        "nightly",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    p.add_argument(
        "--record",
        nargs="?",
        const="all",
        choices=("all", "small", "paper"),
        help="re-write the record (--record-file) by its rules instead of checking: all, the small pinned set "
        "(OPT solves) or the paper-scale part (PD-ORS's utilities and digests, the fresh check's distribution)",
    )
    p.add_argument(
        "--mutants",
        action="store_true",
        help="run the nightly's own mutation test (studies/nightly_mutants.py) instead: planted PD-ORS "
        "regressions, how many turn it red, and the false-alarm rate over --nights unmutated nights",
    )
    p.add_argument(
        "--nights",
        type=int,
        default=40,
        help="with --mutants: unmutated held-out nights (from 2026-12-01; seeds never calibrated on) for the "
        "false-alarm rate",
    )
    p.add_argument("--only", default="", help="with --mutants: comma-separated mutant names (default: all)")
    p.add_argument(
        "--workers", type=int, default=1, help="with --mutants: processes running the mutants and nights (default 1)"
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
        "--paper-pinned", type=int, default=d.paper_pinned, help="with --record paper: seeds per paper-scale setting"
    )
    p.add_argument(
        "--calibration",
        type=int,
        default=d.calibration,
        help="with --record paper: seeds per setting of the fresh check's recorded distribution (default "
        f"{power.CALIBRATION['paper']}, from {power.CALIBRATION_FIRST})",
    )
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


DESCRIPTION = """\
Checks PD-ORS for regressions, every schedule judged by the validator: its exact utility and schedule digest on
pinned instances (H = 4 with proven OPT; the paper's H = 100, Fig. 9's H = 30, Fig. 6's H = 10, both readings),
its certified efficiency ALG / bound on tonight's fresh paper-scale instances against a recorded distribution,
and hard violations (a schedule breaking the model, a policy above OPT or the bound, Theorems 5-6 contradicted).
Red (exit 1) when PD-ORS earns less than a record, a pinned digest changes (re-record with --record paper and a
MODEL_VERSION bump), the fresh mean ALG / bound of a reading falls below the 0.1 % quantile of healthy night means
(resampled from 200 recorded instances; printed with the drop it detects half the time), or a hard violation occurs."""

EPILOG = """\
example:
  pdors nightly --no-mlflow   # exit 0 green; exit 1 red, each reason under the verdict, e.g. 'paper record fig09
                              # seed 1 reject: PD-ORS utility ... is ...% below its record ...'
  pdors nightly --mutants     # the planted PD-ORS regressions it turns red, and its false alarms"""


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
                "paper_pinned",
                "calibration",
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
    if args.mutants:
        from studies.nightly_mutants import run as run_mutants

        if args.nights < 0:
            raise InputError(f"--nights: must be >= 0, got {args.nights}")
        if args.workers < 1:
            raise InputError(f"--workers: must be >= 1, got {args.workers}")
        only = [m for m in args.only.split(",") if m] or None
        print(run_mutants(settings.out, false_alarm_nights=args.nights, only=only, workers=args.workers), end="")
        return ExitStatus.OK
    if args.record:
        try:
            return rerecord(settings, args.record)
        except nightly_record.RecordError as e:  # too few proven seeds, or a hard violation: a verdict
            print(f"pdors nightly --record: {e}", file=sys.stderr)
            return ExitStatus.FAILED
    nightly_record.load(settings.record_file, settings.profile)  # bad input: before anything runs
    return run(settings, track=not args.no_mlflow)
