"""``pdors compare``: several policies on the same instances (one per seed), summarised as a Markdown table.

Every policy of a seed runs on the one instance generated for that seed, and every number comes from the
validator (through ``run``). Progress goes to stderr; the table to stdout. ``--retime`` adds a second table:
every schedule re-timed with the actual worker:PS ratio (:mod:`pdors.retime`; docs/MODEL.md, "Three readings" (b)).
``--bound`` certifies each seed's instance and adds each policy's certified OPT / ALG interval to the headline.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pdors.config import JSON, parse_seeds

from .run_spec import add_memory_arg


def cmd_compare(args: argparse.Namespace) -> int:
    from pipeline.results import headline
    from pipeline.results.compare import aggregate, markdown, retime_markdown, run_all
    from pipeline.results.compare import headline as headline_table

    from .run_spec import policy_list, run_spec_from_args

    policies = policy_list(args.policies)

    def spec_of(policy: str, seed: int) -> JSON:
        return run_spec_from_args(argparse.Namespace(**{**vars(args), "policy": policy, "seed": seed}))

    rows = run_all(spec_of, policies, parse_seeds(args.seeds), args.retime, args.bound)
    table = aggregate(rows, policies)
    reference = "pdors" if "pdors" in policies else policies[0]
    print(headline.text(headline_table(rows, policies, reference, args.jobs), reference))
    print(markdown(table))
    if args.retime:
        print("\nRe-timed with the actual worker:PS ratio (counts summed over seeds; utilities, completions: means):\n")
        print(retime_markdown(rows, policies))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"argv": sys.argv[1:], "table": table, "runs": rows}, indent=1))
    above = [r for r in rows if r.get("certified", {}).get("error")]
    for r in above:
        print(
            f"error: {r['policy']} seed {r['seed']} has utility {r['total_utility']:.10g}, above the certified bound "
            f"{r['certified']['bound']:.10g}: a bug in the model, the validator or the bound",
            file=sys.stderr,
        )
    return 1 if above or any(t["violations"] for t in table) else 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("compare")
    p.add_argument("--policies", default="fifo,drf,dorm,oasis,pdors", help="comma-separated policy names")
    p.add_argument("--machines", type=int, default=100, help="H, machines")
    p.add_argument("--jobs", type=int, default=50, help="I, jobs")
    p.add_argument("--slots", type=int, default=20, help="T, slots in the horizon")
    p.add_argument("--seeds", default="1-5", help="seeds: ranges and lists, e.g. 1-5 or 1,3,8")
    p.add_argument("--config", help="YAML with optional 'workload' and 'policies.<name>' sections")
    p.add_argument("--json", help="write the table and every run's totals here")
    p.add_argument(
        "--retime",
        action="store_true",
        help="also re-time every schedule with the actual worker:PS ratio instead of the nominal gamma "
        '(docs/MODEL.md, "Three readings" (b)) and print a table of the effect per policy',
    )
    p.add_argument(
        "--bound",
        action="store_true",
        help="also certify each seed's instance (offline_opt/certified.py: the dual bound on OPT and the best "
        "schedule known) and add each policy's certified interval on OPT / ALG to the headline table",
    )
    add_memory_arg(p)
    p.set_defaults(func=cmd_compare)
