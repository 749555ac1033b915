"""The ``pdors`` command line. Each subcommand is a thin shell over a library function."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from pdors.errors import ExitStatus, PdorsError

# (subcommand, its module in pdors_cli, its line in `pdors --help`). Only the module of the command invoked is
# imported and adds its options (``register(subparsers)``; handlers are ``func(args) -> int``), so `pdors X --help`
# costs X's imports alone: `sweep` and `simulate` import no Pyomo, Ray or MLflow.
SUBCOMMANDS = (
    ("simulate", "simulate", "simulate one policy on one instance and validate the schedule"),
    (
        "compare",
        "compare",
        "run several policies over seeds on the same instances; print a Markdown table of total utility",
    ),
    ("sweep", "sweep", "parameter sweeps: YAML grid -> Ray -> Parquet -> MLflow"),
    ("report", "sweep", "a sweep's figures (PNG) and tables (CSV, Markdown), attached to its MLflow parent run"),
    ("opt", "opt", "offline optimum (MILP) of one instance and each policy's ratio OPT/ALG"),
    (
        "nightly",
        "nightly",
        "regression check: PD-ORS against its records (small and paper scale) and fresh paper-scale instances, "
        "and hard violations against OPT",
    ),
    (
        "bench",
        "bench",
        "measure decision latency, run times per policy, OPT solve times, Ray sweep throughput and peak memory; "
        "print tables",
    ),
    ("show", "show", "draw one run's schedule: machines over slots (Gantt-style)"),
    ("study", "study", "the measurement studies behind the docs (OPT formulation, ratio vs load)"),
    ("policies", "policies", "list the policies found, built-in and external, with their origin and version"),
    ("ui", "ui", "serve the local MLflow store's UI on 127.0.0.1 (the port the sweeps' URLs name)"),
)


def parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser of ``argv``: every subcommand listed, the options of the one ``argv`` invokes."""
    ap = argparse.ArgumentParser(prog="pdors", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    invoked = next((a for a in argv if not a.startswith("-")), None)
    for name, module, _ in SUBCOMMANDS:
        if name == invoked:
            importlib.import_module(f"{__package__}.{module}").register(sub)
    for name, _, help_ in SUBCOMMANDS:
        if name not in sub.choices:
            sub.add_parser(name, help=help_)
    return ap


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The arguments; ``KEY=VALUE`` overrides are taken after options too (``sweep run CONFIG --in-process
    seeds.count=5``): argparse's plain parsing stops collecting a positional list at the first option."""
    argv = sys.argv[1:] if argv is None else list(argv)
    ap = parser(argv)
    args, extra = ap.parse_known_args(argv)
    if extra and hasattr(args, "overrides") and not any(e.startswith("-") for e in extra):
        args.overrides = [*args.overrides, *extra]
    elif extra:
        ap.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    try:
        status: int = args.func(args)
        return status
    except PdorsError as e:  # the project's own errors (pdors.errors); any other exception keeps its traceback
        print(f"pdors {args.command}: error: {' '.join(str(e).split())}", file=sys.stderr)
        return e.status
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as e:  # a path given
        print(f"pdors {args.command}: error: {e.filename}: {e.strerror}", file=sys.stderr)
        return ExitStatus.BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
