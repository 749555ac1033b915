"""The ``pdors`` command line. Each subcommand is a thin shell over a library function."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pdors.config import ConfigError

from . import bench, compare, nightly, opt, show, simulate, study, sweep, ui

# Each module adds its subcommands with ``register(subparsers)``; handlers are ``func(args) -> int``.
SUBCOMMANDS = (simulate, compare, sweep, opt, nightly, bench, show, study, ui)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="pdors", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    for module in SUBCOMMANDS:
        module.register(sub)
    return ap


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The arguments; ``KEY=VALUE`` overrides are taken after options too (``sweep run CONFIG --in-process
    seeds.count=5``): argparse's plain parsing stops collecting a positional list at the first option."""
    ap = parser()
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
    except (ConfigError, ValueError) as e:
        print(f"pdors {args.command}: error: {e}", file=sys.stderr)
        return 2
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as e:  # a path given
        print(f"pdors {args.command}: error: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    except Exception as e:
        from pipeline.storage import RecordDamaged  # here, not at the top: the record's module imports pyarrow

        if not isinstance(e, RecordDamaged):
            raise
        print(f"pdors {args.command}: error: {e}", file=sys.stderr)  # the file and how to repair it
        return 1


if __name__ == "__main__":
    sys.exit(main())
