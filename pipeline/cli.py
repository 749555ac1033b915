"""``pdors sweep run|log|status`` and ``pdors report``: thin shells over :mod:`pipeline.sweep` and
:mod:`pipeline.report`."""
from __future__ import annotations

import argparse
import sys

from .schema import DEFAULT_OUTPUT


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def cmd_run(args) -> int:
    from . import sweep

    try:
        return sweep.run(args.config, args.out, args.resume, args.max_parallel, args.ray_address, args.in_process,
                         args.num_cpus)
    except (ConnectionError, RuntimeError) as e:   # Ray unreachable, sweep locked by another process
        print(f"pdors sweep run: error: {e}", file=sys.stderr)
        return 2


def cmd_log(args) -> int:
    from . import sweep

    return sweep.log(args.sweep, args.out)


def cmd_status(args) -> int:
    from . import sweep

    return sweep.status(args.sweep, args.out)


def cmd_report(args) -> int:
    from . import report

    return report.report_sweeps(args.sweep, args.out, track=not args.no_mlflow)


def register(subparsers) -> None:
    p = subparsers.add_parser("sweep", help="parameter sweeps: YAML grid -> Ray -> Parquet -> MLflow")
    sub = p.add_subparsers(dest="sweep_command", required=True)
    r = sub.add_parser("run", help="expand a sweep config and run it on Ray")
    r.add_argument("config", help="sweep config (YAML), e.g. configs/quickstart.yaml")
    r.add_argument("--ray-address", help="Ray cluster to use (default: $RAY_ADDRESS, else a local Ray)")
    r.add_argument("--out", help="output root (default: the config's 'output')")
    r.add_argument("--resume", action="store_true", help="continue a sweep: skip runs already recorded")
    r.add_argument("--max-parallel", type=_positive, help="tasks in flight at once (default: 2 x cluster CPUs)")
    r.add_argument("--num-cpus", type=_positive, help="CPUs of the local Ray (default: all; not with a cluster)")
    r.add_argument("--in-process", action="store_true",
                   help="run the tasks one by one in this process, without Ray (small sweeps, debugging)")
    r.set_defaults(func=cmd_run)
    lg = sub.add_parser("log", help="(re-)log a recorded sweep to MLflow from its Parquet record")
    lg.add_argument("sweep", help="sweep id (printed by 'sweep run'; see 'sweep status')")
    lg.add_argument("--out", default=DEFAULT_OUTPUT, help=f"output root (default: {DEFAULT_OUTPUT})")
    lg.set_defaults(func=cmd_log)
    st = sub.add_parser("status", help="progress of recorded sweeps")
    st.add_argument("sweep", nargs="?", help="sweep id (default: every sweep under --out)")
    st.add_argument("--out", default=DEFAULT_OUTPUT, help=f"output root (default: {DEFAULT_OUTPUT})")
    st.set_defaults(func=cmd_status)
    rp = subparsers.add_parser("report", help="a sweep's figures (PNG) and tables (CSV, Markdown), attached to its "
                                              "MLflow parent run")
    rp.add_argument("sweep", metavar="SWEEP_OR_DIR",
                    help="a sweep directory (<root>/sweeps/<id>), an output root (every sweep in it) or a sweep id")
    rp.add_argument("--out", help="write the files here (default: <root>/sweeps/<id>/report)")
    rp.add_argument("--no-mlflow", action="store_true", help="do not attach the files to MLflow")
    rp.set_defaults(func=cmd_report)
