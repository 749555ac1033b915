"""``pdors bench``: the speed figures of docs/PERFORMANCE.md (:mod:`studies.speed`), printed as tables."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pdors.errors import ExitStatus
from studies.speed import EXTRA_SECTIONS, FULL, QUICK, SECTIONS, report, run_bench


def cmd_bench(args: argparse.Namespace) -> int:
    from pdors.errors import ConfigError

    sections = [s.strip() for s in args.only.split(",")] if args.only else list(SECTIONS)
    if "scale" in sections and "scale-pipeline" not in sections:  # the scale section is both halves
        sections.insert(sections.index("scale") + 1, "scale-pipeline")
    unknown = [s for s in sections if s not in SECTIONS + EXTRA_SECTIONS]
    if unknown:
        raise ConfigError("--only", f"unknown section {unknown[0]!r} (known: {', '.join(SECTIONS + EXTRA_SECTIONS)})")
    results = run_bench(sections, QUICK if args.quick else FULL, args.seed, args.before)
    print(report(results))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=1))
    bad = [r for s in ("latency", "policies", "scale") for r in results.get(s, []) if r["violations"]]
    same = results.get("reference", {}).get("same_decisions", True)
    return ExitStatus.FAILED if bad or not same else ExitStatus.OK


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("bench")
    p.add_argument("--quick", action="store_true", help="small sizes: about 2 minutes instead of about 13")
    p.add_argument(
        "--only",
        help=f"comma-separated sections (default: {','.join(SECTIONS)}; also {','.join(EXTRA_SECTIONS)}, about 15 min)",
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--before", default="main", help="sweep-latency: the git revision to measure beside (default main)")
    p.add_argument("--json", help="write every figure here")
    p.set_defaults(func=cmd_bench)
