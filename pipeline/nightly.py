"""``pdors nightly``: PD-ORS against the proven offline optimum on freshly drawn small instances (SPEC section 6).

Instance k (k = 0 .. N-1) is the small profile (``offline_opt.profile.small_profile``: the paper's Fig. 10
size H = 4, I = 10, T = 10) drawn with generator seed S + k, so ``pdors opt --seed S+k`` is the same
instance. Each instance goes through ``offline_opt.compare``: OPT by the MILP and every registered policy,
all judged by the validator. An instance passes only if

* OPT is proven optimal (solver gap target met, validated schedule): an unproven OPT never passes;
* every schedule (OPT's and each policy's) has no validator violation;
* PD-ORS's OPT / ALG is <= the threshold and <= its theoretical competitive ratio
  6 G_delta / delta * max_r(1, ln(U^r / L)) (paper Theorems 5-6, U^r and L of eqs. (13)-(14));
* no policy beats OPT (OPT / ALG >= 1 - RATIO_TOL): otherwise OPT or the validator is wrong.

Everything lands in ``<out>/<run name>/``: ``report.json`` (every comparison), ``summary.md`` (the tables),
``ratios.png`` (histogram) and ``offenders/seed-<k>.json`` (each failing instance, replayable with
``pdors opt --instance FILE --seed k``); then one MLflow run in experiment ``nightly-competitive-ratio``.
Exit status: 0 pass, 1 some check failed, 2 bad input, 3 pass but MLflow logging failed.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

EXPERIMENT = "nightly-competitive-ratio"
SIZE = {"machines": 4, "jobs": 10, "slots": 10}   # the small profile's instance size (offline_opt/profile.py)
RATIO_TOL = 1e-6
DEFAULT_OUT = "results/nightly"
BATCH = 1000        # MLflow's limit of metrics per log_batch
TAG_CHARS = 5000    # below MLflow's tag value limit (report.json has everything)


@dataclass(frozen=True)
class Settings:
    """The command line of ``pdors nightly`` (checked by ``pdors.config.build``)."""

    instances: int = 5
    solver: str = "highs"
    threshold: float = 1.5
    seed: int = 1
    time_limit: float = 300.0
    mip_gap: float = 1e-6
    out: str = DEFAULT_OUT

    def check(self) -> list[str]:
        from offline_opt.solvers import SOLVERS, available

        out = []
        if self.instances < 1:
            out.append(f"instances: must be >= 1, got {self.instances}")
        if self.solver not in SOLVERS:
            out.append(f"solver: must be one of {', '.join(SOLVERS)}, got {self.solver!r}")
        elif not available(self.solver):
            out.append(f"solver: {self.solver} is not installed here (highs: pip install highspy; "
                       "cbc/glpk: apt-get install coinor-cbc glpk-utils)")
        if not self.threshold >= 1.0:
            out.append(f"threshold: an OPT / ALG threshold must be >= 1, got {self.threshold}")
        if self.seed < 0:
            out.append(f"seed: must be >= 0, got {self.seed}")
        if not self.time_limit > 0:
            out.append(f"time_limit: must be > 0 seconds, got {self.time_limit}")
        if not 0 <= self.mip_gap < 1:
            out.append(f"mip_gap: must lie in [0, 1), got {self.mip_gap}")
        return out

    @property
    def seeds(self) -> list[int]:
        return list(range(self.seed, self.seed + self.instances))


@dataclass
class Checked:
    """One instance: its seed, the comparison (``offline_opt.Comparison``) and what failed on it."""

    seed: int
    comparison: object
    offences: list[str]
    saved: Path | None = None

    @property
    def pdors(self):
        return next(p for p in self.comparison.policies if p.policy == "pdors")


@dataclass
class Report:
    settings: Settings
    name: str
    directory: Path
    code: dict                      # pdors version, git commit, package versions
    checked: list[Checked] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not any(c.offences for c in self.checked)

    def ratios(self, policy: str) -> list[float]:
        """OPT / ALG of ``policy`` on the instances where OPT is proven and the ratio defined."""
        out = []
        for c in self.checked:
            p = next(p for p in c.comparison.policies if p.policy == policy)
            if p.ratio_kind == "opt" and p.ratio is not None:
                out.append(p.ratio)
        return out

    def policies(self) -> list[str]:
        return [p.policy for p in self.checked[0].comparison.policies] if self.checked else []


def offences(comparison, threshold: float) -> list[str]:
    """Every reason this comparison fails the nightly (empty: it passes). Pure: reads ``comparison`` only."""
    opt, out = comparison.opt, []
    if not opt.proven_optimal:
        gap = "n/a" if opt.gap is None else f"{opt.gap:.2e}"
        out.append(f"OPT not proven optimal ({opt.solver} status {opt.status}, gap {gap}, {opt.wall_s:.0f} s)")
    if opt.violations:
        out.append(f"OPT schedule has {len(opt.violations)} validator violation(s)")
    for p in comparison.policies:
        if p.violations:
            out.append(f"{p.policy} schedule has {p.violations} validator violation(s)")
        elif p.ratio_kind == "opt" and p.ratio is not None and p.ratio < 1.0 - RATIO_TOL:
            out.append(f"{p.policy} beats OPT (OPT / ALG = {p.ratio:.6f}): OPT or the validator is wrong")
    pdors = next(p for p in comparison.policies if p.policy == "pdors")
    if opt.proven_optimal and not pdors.violations:
        if pdors.ratio is None and opt.objective > 0:
            out.append(f"pdors completed no job while OPT = {opt.objective:.4f} (OPT / ALG infinite)")
        elif pdors.ratio is not None:
            if pdors.ratio > threshold:
                out.append(f"pdors OPT / ALG = {pdors.ratio:.4f} > threshold {threshold:g}")
            if pdors.competitive_bound is None:
                out.append("pdors reported no theoretical bound")
            elif pdors.ratio > pdors.competitive_bound:
                out.append(f"pdors OPT / ALG = {pdors.ratio:.4f} > theoretical bound "
                           f"{pdors.competitive_bound:.4g} (Theorems 5-6)")
    return out


def stats(values: list[float]) -> dict[str, float | None]:
    """max / median / p90 (None for no values)."""
    if not values:
        return {"max": None, "median": None, "p90": None}
    a = np.asarray(values, float)
    return {"max": float(a.max()), "median": float(np.median(a)), "p90": float(np.percentile(a, 90))}


def replay_command(checked: Checked, settings: Settings) -> str:
    return (f"pdors opt --instance {checked.saved} --seed {checked.seed} --solver {settings.solver} "
            f"--time-limit {settings.time_limit:g} --mip-gap {settings.mip_gap:g}")


def check(settings: Settings, progress: bool = True) -> Report:
    """Draw, solve, compare and judge every instance; write the run directory. No MLflow here."""
    from tqdm import tqdm

    import pdors
    from offline_opt import compare
    from offline_opt.profile import small_profile
    from pdors.config import to_dict
    from pdors.instance_io import save
    from pdors.workload import generate

    from .sweep import git_commit, packages

    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    name = f"nightly-{stamp}-seed{settings.seed}-n{settings.instances}"
    while (Path(settings.out) / name).exists():   # two runs in one second: never mix their files
        name += "+"
    # in the container image there is no .git: infra/Dockerfile records the commit in PDORS_GIT_COMMIT
    commit = git_commit()
    commit = os.environ.get("PDORS_GIT_COMMIT", commit) if commit == "unknown" else commit
    report = Report(settings, name, Path(settings.out) / name,
                    {"pdors": pdors.__version__, "git_commit": commit, "packages": packages()})
    workload = small_profile()
    bar = tqdm(settings.seeds, unit="instance", file=sys.stderr, disable=not progress, dynamic_ncols=True,
               mininterval=0.5 if sys.stderr.isatty() else 30)
    for seed in bar:
        bar.set_description(f"seed {seed}")
        instance = generate(workload, SIZE["machines"], SIZE["jobs"], SIZE["slots"], seed)
        c = compare(instance, settings.solver, settings.time_limit, settings.mip_gap, seed=seed,
                    workload=to_dict(workload))
        checked = Checked(seed, c, offences(c, settings.threshold))
        if checked.offences:
            checked.saved = report.directory / "offenders" / f"seed-{seed}.json"
            checked.saved.parent.mkdir(parents=True, exist_ok=True)
            save(instance, checked.saved)
        report.checked.append(checked)
        bar.set_postfix(failed=sum(bool(c.offences) for c in report.checked), refresh=False)
    bar.close()
    _write(report)
    return report


def _fmt(x, spec: str = ".4f") -> str:
    return "n/a" if x is None else format(x, spec)


def tables(report: Report) -> str:
    """Markdown: one row per instance, then the offending instances with their replay commands."""
    s, policies = report.settings, report.policies()
    head = ["seed", "OPT status", "OPT", "gap", "OPT s", *policies, "PD-ORS bound", "verdict"]
    rows = []
    for c in report.checked:
        o = c.comparison.opt
        ratios = []
        for p in c.comparison.policies:
            r = _fmt(p.ratio, ".3f") + (" (upper)" if p.ratio_kind == "upper" else "")
            ratios.append(r if p.ratio is not None else f"n/a ({p.ratio_note})")
        rows.append([str(c.seed), o.status, _fmt(o.objective), _fmt(o.gap, ".1e"), f"{o.wall_s:.1f}", *ratios,
                     _fmt(c.pdors.competitive_bound, ".1f"), "FAIL" if c.offences else "pass"])
    lines = [f"# {report.name}", "",
             f"PD-ORS vs OPT on {s.instances} small-profile instances (H={SIZE['machines']}, I={SIZE['jobs']}, "
             f"T={SIZE['slots']}; seeds {s.seeds[0]}-{s.seeds[-1]}); {s.solver}, time limit {s.time_limit:g} s, "
             f"gap {s.mip_gap:g}; threshold {s.threshold:g}. Columns per policy: OPT / ALG. "
             f"Code: pdors {report.code['pdors']}, commit {report.code['git_commit']}.", "",
             "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    pd_stats = stats(report.ratios("pdors"))
    lines += ["", f"PD-ORS OPT / ALG over proven instances: max {_fmt(pd_stats['max'], '.4f')}, "
              f"median {_fmt(pd_stats['median'], '.4f')}, p90 {_fmt(pd_stats['p90'], '.4f')}.", ""]
    bad = [c for c in report.checked if c.offences]
    lines.append("**PASS**" if not bad else f"**FAIL**: {len(bad)} of {len(report.checked)} instance(s)")
    if bad:
        lines += ["", "| seed | why | replay |", "| --- | --- | --- |"]
        lines += [f"| {c.seed} | {'; '.join(c.offences)} | `{replay_command(c, s)}` |" for c in bad]
    return "\n".join(lines) + "\n"


def histogram(report: Report, path: Path) -> Path:
    """Histogram of OPT / ALG per policy over the proven instances (log x: a baseline that barely completes a
    job can be 10^6 off), PD-ORS filled, with the threshold as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter, MaxNLocator, NullFormatter

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    threshold = report.settings.threshold
    series = {p: report.ratios(p) for p in report.policies()}
    top = max([threshold, *(r for rs in series.values() for r in rs)]) * 1.05
    bins = np.geomspace(1.0 - RATIO_TOL, top, 30)
    for policy, values in series.items():
        if values:
            pd_ = policy == "pdors"
            ax.hist(values, bins=bins, histtype="stepfilled" if pd_ else "step", alpha=0.6 if pd_ else 1.0,
                    linewidth=2.5 if pd_ else 1.2, label=f"{policy} (n={len(values)})", zorder=3 if pd_ else 2)
    ax.axvline(threshold, color="red", linestyle="--", label=f"threshold {threshold:g}")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(FormatStrFormatter("%g") if top < 10 else NullFormatter())
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("OPT / ALG (proven OPT only; log scale)")
    ax.set_ylabel("instances")
    ax.set_title(report.name, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _write(report: Report) -> None:
    from dataclasses import asdict

    d = report.directory
    d.mkdir(parents=True, exist_ok=True)
    (d / "report.json").write_text(json.dumps({
        "name": report.name, "settings": asdict(report.settings), "size": SIZE, "code": report.code,
        "passed": report.passed,
        "instances": [{"seed": c.seed, "offences": c.offences, "saved": str(c.saved) if c.saved else None,
                       **c.comparison.to_dict()} for c in report.checked]}, indent=1))
    (d / "summary.md").write_text(tables(report))
    histogram(report, d / "ratios.png")


def log_run(report: Report) -> str:
    """One MLflow run in experiment ``nightly-competitive-ratio``; returns its id. Per-instance values are
    metric series with step = instance seed."""
    from mlflow.entities import Metric, RunTag

    from . import tracking

    tracking.check_reachable(tracking.tracking_uri())
    client = tracking.client()
    exp_id = tracking.experiment_id(client, EXPERIMENT)
    s, code = report.settings, report.code
    run_id = client.create_run(exp_id, run_name=report.name).info.run_id
    summary = {"passed": int(report.passed), "instances": len(report.checked),
               "failed_instances": sum(bool(c.offences) for c in report.checked),
               "opt_proven": sum(c.comparison.opt.proven_optimal for c in report.checked),
               "violations": sum(len(c.comparison.opt.violations) + sum(p.violations for p in c.comparison.policies)
                                 for c in report.checked),
               "opt_wall_s.max": max(c.comparison.opt.wall_s for c in report.checked)}
    for policy in report.policies():
        summary |= {f"ratio.{policy}.{k}": v for k, v in stats(report.ratios(policy)).items()}
    bounds = [c.pdors.competitive_bound for c in report.checked if c.pdors.competitive_bound is not None]
    summary["bound.pdors.min"] = min(bounds) if bounds else None
    series = []
    for c in report.checked:
        values = {f"ratio.{p.policy}": p.ratio for p in c.comparison.policies if p.ratio_kind == "opt"}
        values |= {"opt": c.comparison.opt.objective, "bound.pdors": c.pdors.competitive_bound,
                   "opt_wall_s": c.comparison.opt.wall_s, "offences": len(c.offences)}
        series += [Metric(m.key, m.value, m.timestamp, c.seed) for m in tracking.metrics(values)]
    statuses = ",".join(f"{c.seed}:{c.comparison.opt.status}" for c in report.checked)[:TAG_CHARS]
    offenders = ",".join(str(c.seed) for c in report.checked if c.offences)[:TAG_CHARS]
    metrics = tracking.metrics(summary) + series
    for k in range(0, len(metrics), BATCH):
        client.log_batch(run_id, metrics=metrics[k:k + BATCH])
    client.log_batch(run_id, params=tracking.params({
        "instances": s.instances, "seeds": f"{s.seeds[0]}-{s.seeds[-1]}", "solver": s.solver,
        "threshold": s.threshold, "time_limit": s.time_limit, "mip_gap": s.mip_gap, "profile": "small",
        **SIZE, "policies": ",".join(report.policies())}),
        tags=[RunTag(k, str(v)) for k, v in {
            "result": "pass" if report.passed else "fail", "solver_statuses": statuses,
            "offenders": offenders or "-", "pdors.version": code["pdors"], "git_commit": code["git_commit"],
            "mlflow.source.git.commit": code["git_commit"], "output": str(report.directory),
            **{f"version.{k}": v for k, v in code["packages"].items()}}.items()])
    client.log_artifacts(run_id, str(report.directory))
    client.set_terminated(run_id, "FINISHED" if report.passed else "FAILED")
    return run_id


def run(settings: Settings, track: bool = True, progress: bool = True) -> int:
    """``pdors nightly``; returns the exit status."""
    report = check(settings, progress)
    print(tables(report), end="")
    print(f"results: {report.directory} (report.json, summary.md, ratios.png"
          + (", offenders/" if not report.passed else "") + ")")
    status = 0 if report.passed else 1
    if not track:
        return status
    from . import tracking
    from .credentials import one_line

    try:
        run_id = log_run(report)
    except Exception as e:   # the files are the record; a tracking outage must not hide the verdict
        print(f"MLflow logging failed ({one_line(e)}); the results are "
              f"in {report.directory}", file=sys.stderr)
        return status or 3
    print(f"MLflow: {tracking.shown_uri()} experiment {EXPERIMENT!r}, run {run_id}")
    return status


def register(subparsers) -> None:
    from offline_opt.solvers import SOLVERS

    d = Settings()
    p = subparsers.add_parser("nightly", help="competitive-ratio check: PD-ORS vs proven OPT on small instances")
    p.add_argument("--instances", type=int, default=d.instances, help="N instances: seeds S .. S+N-1")
    p.add_argument("--solver", choices=SOLVERS, default=d.solver)
    p.add_argument("--threshold", type=float, default=d.threshold, help="largest acceptable PD-ORS OPT / ALG")
    p.add_argument("--seed", type=int, default=d.seed, help="S, the first instance's generator seed")
    p.add_argument("--time-limit", type=float, default=d.time_limit, help="seconds per OPT solve")
    p.add_argument("--mip-gap", type=float, default=d.mip_gap, help="relative gap OPT must be proven to")
    p.add_argument("--out", default=d.out, help="output root; each run writes <out>/nightly-<UTC time>-...")
    p.add_argument("--no-mlflow", action="store_true", help="write the files only")
    p.set_defaults(func=cmd_nightly)


def cmd_nightly(args) -> int:
    from pdors.config import build

    settings = build(Settings, {"instances": args.instances, "solver": args.solver, "threshold": args.threshold,
                                "seed": args.seed, "time_limit": args.time_limit, "mip_gap": args.mip_gap,
                                "out": args.out})
    return run(settings, track=not args.no_mlflow)
