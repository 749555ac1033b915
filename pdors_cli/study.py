"""``pdors study opt ...`` and ``pdors study ratio-vs-load ...``: the measurement studies behind the docs
(:mod:`studies.opt_formulation`, :mod:`studies.ratio_vs_load`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pdors.errors import ExitStatus


def cmd_opt(args: argparse.Namespace) -> int:
    from studies import opt_formulation as f

    a = args
    studies = {
        "ratio": lambda: f.ratio(a.seeds, a.solver, a.time_limit, a.out),
        "rerate": lambda: f.rerate(a.file, a.out),
        "relax": lambda: f.relax(a.seeds, a.variants, a.time_limit),
        "tightness": lambda: f.tightness(a.csv, a.out, a.diagnose, a.leaves, a.time_limit),
        "ablation": lambda: f.ablation(a.seeds, a.time_limit, a.out),
        "summary": lambda: f.summary(a.files),
    }
    studies[args.study]()
    return ExitStatus.OK


def cmd_solvers(args: argparse.Namespace) -> int:
    from studies import opt_formulation

    print(opt_formulation.solvers_table(args.files))
    return ExitStatus.OK


def cmd_ratio_vs_load(args: argparse.Namespace) -> int:
    from pdors.errors import ConfigError
    from studies import ratio_vs_load

    root = Path(args.results)
    ids = [args.sweep] if args.sweep else sorted(p.name for p in (root / "sweeps").glob("*") if p.is_dir())
    if len(ids) != 1:
        raise ConfigError("--sweep", f"name one of {', '.join(ids) or 'none'} under {root}")
    return ratio_vs_load.write(root, ids[0], Path(args.out))


def cmd_premise(args: argparse.Namespace) -> int:
    from pdors.errors import ConfigError
    from studies import premise_size

    if not 1 <= args.seeds <= 20:
        raise ConfigError("--seeds", f"must lie in [1, 20], got {args.seeds}")
    print(premise_size.markdown(premise_size.run(Path(args.out), args.seeds)), end="")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("study")
    studies = p.add_subparsers(dest="study_command", required=True)
    opt = studies.add_parser("opt", help="offline-optimum studies (docs/OFFLINE_OPT.md, docs/COMPETITIVE_RATIO.md)")
    sub = opt.add_subparsers(dest="study", required=True)
    r = sub.add_parser("ratio", help="compare() per seed of the small profile, one JSON line per seed")
    r.add_argument("--solver", default="highs")
    r.add_argument("--seeds", default="1-20")
    r.add_argument("--time-limit", type=float, default=300.0)
    r.add_argument("--out", required=True)
    e = sub.add_parser("rerate", help="re-run every policy against the stored OPT of a ratio file")
    e.add_argument("file")
    e.add_argument("--out", required=True)
    x = sub.add_parser("relax", help="the MILP with some count variables continuous")
    x.add_argument("--seeds", default="13,7")
    x.add_argument("--variants", default="all,external,internal,totals")
    x.add_argument("--time-limit", type=float, default=120.0)
    a = sub.add_parser("ablation", help="naive vs strong and each strengthening switched off (HiGHS)")
    a.add_argument("--seeds", default="1-5")
    a.add_argument("--time-limit", type=float, default=60.0)
    a.add_argument("--out", required=True)
    b = sub.add_parser("tightness", help="the dual bound / OPT over the ratio study's proven instances")
    b.add_argument("--csv", default="docs/figures/ratio_vs_load.csv")
    b.add_argument("--diagnose", type=int, default=5)
    b.add_argument("--leaves", type=int, default=32, help="branching budget (1: the root's bound alone)")
    b.add_argument("--time-limit", type=float, default=120.0)
    b.add_argument("--out", required=True)
    s = sub.add_parser("summary", help="the ratio / ablation tables of the docs from those files")
    s.add_argument("files", nargs="+")
    v = sub.add_parser("solvers", help="the per-seed solver table (one ratio file per solver)")
    v.add_argument("files", nargs="+")
    v.set_defaults(func=cmd_solvers)
    opt.set_defaults(func=cmd_opt)
    q = studies.add_parser("ratio-vs-load", help="the competitive ratio against load from a recorded sweep with OPT")
    q.add_argument("results", help="the sweep's output root (its config's `output`)")
    q.add_argument("--sweep", help="sweep id (default: the only sweep under RESULTS)")
    q.add_argument("--out", required=True, help="directory for ratio_vs_load.{csv,md,png,pdf}")
    q.set_defaults(func=cmd_ratio_vs_load)
    m = studies.add_parser(
        "premise", help="Definition 1's share and PD-ORS's certified ratio as jobs shrink at a fixed offered load"
    )
    m.add_argument("--out", required=True, help="directory for premise_size.{csv,md,png,pdf}")
    m.add_argument("--seeds", type=int, default=2, help="seeds 1..N per grid point (1-20)")
    m.set_defaults(func=cmd_premise)
