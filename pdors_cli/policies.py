"""``pdors policies``: every policy found (built-in, installed entry points of group ``pdors.policies``, or the
``package.module:Class`` names given) with where it came from and its version (pdors.policies.survey)."""

from __future__ import annotations

import argparse

from pdors.errors import ExitStatus


def cmd_policies(args: argparse.Namespace) -> int:
    from pdors.markdown import table
    from pdors.policies import survey

    found = survey(tuple(args.names))
    rows = [
        [name, o.kind, o.target, o.distribution or "-", o.version, o.digest or "-"]
        if not isinstance(o, str)
        else [name, "error", o, "-", "-", "-"]
        for name, o in found
    ]
    print(table(["policy", "origin", "class", "distribution", "version", "source digest"], rows))
    return ExitStatus.FAILED if any(isinstance(o, str) for _, o in found) else ExitStatus.OK


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "policies", help="list the policies found, built-in and external, with origin and version"
    )
    p.add_argument("names", nargs="*", help="only these (a name, or package.module:Class); default: every one found")
    p.set_defaults(func=cmd_policies)
