"""The ``pdors`` command line. Each subcommand is a thin shell over a library function."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import os
import sys
import textwrap
import threading
from collections.abc import Sequence
from typing import NamedTuple, NoReturn

from pdors.errors import ExitStatus, PdorsError

DESCRIPTION = """Run PD-ORS, the online scheduler of Yu et al. (IEEE TNSE 2022), and its rivals on simulated
clusters, compare them with the offline optimum, and sweep them over grids of settings.

example:
  pdors sweep run configs/quickstart.yaml   # the quickstart sweep: a results table, figures, an MLflow link
  pdors sweep status                        # how the latest sweep under results/ is doing
  pdors COMMAND --help                      # what COMMAND does, with an example"""


class Command(NamedTuple):
    name: str
    module: str  # its module in pdors_cli
    summary: str  # one or two sentences: its line in `pdors --help`, the opening of `pdors NAME --help`
    example: str


# Only the module of the command invoked is imported and adds its options (``register(subparsers)``; handlers are
# ``func(args) -> int``), so `pdors X --help` costs X's imports alone: `sweep` and `simulate` import no Pyomo, Ray
# or MLflow. A command's own ``description`` wins over its summary here.
SUBCOMMANDS = (
    Command(
        "simulate",
        "simulate",
        "Simulate one policy on one instance and check the schedule with the validator.",
        "pdors simulate --policy pdors --machines 30 --jobs 50 --slots 20 --seed 1",
    ),
    Command(
        "compare",
        "compare",
        "Run several policies over seeds on the same instances and print a table of their total utility.",
        "pdors compare --policies pdors,fifo,drf --seeds 1-3",
    ),
    Command(
        "sweep",
        "sweep",
        "Run a sweep config (policies x grid x seeds) on Ray, record every run in Parquet and log it to MLflow; "
        "status, log, report and list look at recorded sweeps.",
        "pdors sweep run configs/quickstart.yaml seeds.count=2",
    ),
    Command(
        "report",
        "sweep",
        "Draw a recorded sweep's figures (PNG) and write its tables (CSV, Markdown) and an HTML page.",
        "pdors report results/quickstart",
    ),
    Command(
        "opt",
        "opt",
        "Solve one instance's offline optimum (MILP) and print each policy's ratio OPT/ALG.",
        "pdors opt --machines 4 --jobs 10 --slots 10 --seed 1",
    ),
    Command(
        "nightly",
        "nightly",
        "Check PD-ORS for regressions: against its records (small and paper scale) and on fresh paper-scale "
        "instances, and hard violations against the offline optimum; exit status 1 when a check fails.",
        "pdors nightly",
    ),
    Command(
        "bench",
        "bench",
        "Measure decision latency, run times per policy, OPT solve times, sweep throughput and peak memory.",
        "pdors bench --quick",
    ),
    Command(
        "show",
        "show",
        "Draw one run's schedule: machines over slots (Gantt-style).",
        "pdors simulate --policy pdors --schedule s.parquet && pdors show s.parquet",
    ),
    Command(
        "study",
        "study",
        "Run the measurement studies behind the docs (OPT formulation, ratio vs load).",
        "pdors study premise --out study-out",
    ),
    Command(
        "policies",
        "policies",
        "List the policies found, built-in and external (installed packages), with their origin and version.",
        "pdors policies",
    ),
    Command(
        "ui",
        "ui",
        "Serve the local MLflow store on the loopback so that the URLs sweeps print open.",
        "pdors ui",
    ),
    Command(
        "ray",
        "ray_head",
        "Start, stop or check a persistent local Ray head (loopback, token) that local sweeps use without flags.",
        "pdors ray up",
    ),
)


def parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser of ``argv``: every subcommand listed, the options of the one ``argv`` invokes."""
    raw = argparse.RawDescriptionHelpFormatter
    ap = argparse.ArgumentParser(prog="pdors", description=DESCRIPTION, formatter_class=raw)
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", required=True)
    invoked = next((a for a in argv if not a.startswith("-")), None)
    for c in SUBCOMMANDS:
        if c.name == invoked:
            importlib.import_module(f"{__package__}.{c.module}").register(sub)
    for c in SUBCOMMANDS:
        p = sub.choices.get(c.name) or sub.add_parser(c.name, help=c.summary)  # listed when none is invoked
        p.description = p.description or f"{textwrap.fill(c.summary, 100)}\n\nexample:\n  {c.example}"
        p.formatter_class = raw
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
    """The command ``argv`` (default: this process's command line, which then ends with the command: see
    :func:`_leave`); its exit status."""
    if argv is None:
        _leave(_main(sys.argv[1:]))
    return _main(argv)


def _leave(status: int) -> NoReturn:
    """End the process with ``status`` once the command is done: its threads joined, its exit handlers run and
    its output flushed, without the interpreter's teardown (freeing every module of Ray, MLflow, pandas and
    matplotlib and Ray's C++ state cost 0.6-0.9 s of wall after a sweep's last line, measured at load 2-5)."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (`| head`): nothing more to say
            stream.flush()
    os._exit(status)


def _main(argv: Sequence[str]) -> int:
    if not argv:  # plain `pdors`: the help, not a usage error
        parser().print_help()
        return ExitStatus.OK
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
