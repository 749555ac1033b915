"""``pdors nightly``: a regression check that is green while PD-ORS is healthy and red when it regresses.

Two parts, both on the instance profile named by ``--profile`` (``offline_opt.profile.INSTANCE_PROFILES``;
default ``small``: H = 4, I = 10, T = 10, the small workload), every schedule judged by the validator:

* the pinned set (``pipeline.nightly.record``, committed at ``configs/nightly_record.json``): every policy is
  re-run on the recorded instances; the night fails when PD-ORS's utility on any of them falls below its
  record (relative ``--tolerance``), a schedule violates the model, or a policy earns more than the recorded
  OPT allows. Every change from the record is reported. ``--record`` re-writes the record;
* fresh instances (seeds S .. S+M-1, S from the date unless ``--seed``): OPT by the MILP within the
  per-instance budget, every policy; the night fails only on hard violations: a validator violation, a policy
  above OPT by more than the gap, a solver failure (DMLRS always has the empty schedule), or PD-ORS's ratio
  (the lower end of its interval when OPT is unproven) above its theoretical bound 6 G_delta / delta
  max_r(1, ln U^r / L) (paper Theorems 5-6). PD-ORS's ratios are reported against the paper's band
  1.0-1.4; every instance whose ratio is, or may be, outside it is saved for ``pdors opt --instance``.

Everything lands in ``<out>/<run name>/``: ``report.json``, ``summary.md``, ``ratios.png``,
``offenders/seed-<k>.json`` (failing fresh instances) and ``outside_band/seed-<k>.json``; then one MLflow run
in experiment ``nightly-competitive-ratio`` with median, p90 and max ratio as metrics.
Exit status: 0 pass, 1 some check failed (or ``--record`` found too few proven seeds), 2 bad input (also a
missing record, or one made for another profile), 3 pass but MLflow logging failed.
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pdors.config import JSON
from pdors.errors import ExitStatus
from pdors.markdown import number, table
from pipeline.nightly import paper as nightly_paper
from pipeline.nightly import paper_record, power
from pipeline.nightly import record as nightly_record

if TYPE_CHECKING:  # offline_opt imports Pyomo: only where the check runs
    from offline_opt.compare import Comparison, PolicyRatio

EXPERIMENT = "nightly-competitive-ratio"
BAND = (1.0, 1.4)  # the paper's Fig. 10: OPT / PD-ORS between 1.0 and 1.4
DEFAULT_OUT = "results/nightly"
BATCH = 1000  # MLflow's limit of metrics per log_batch
TAG_CHARS = 5000  # below MLflow's tag value limit (report.json has everything)


def date_seed(day: date) -> int:
    """Tonight's first fresh seed: YYYYMMDD * 100, so nights never share an instance (M < 100)."""
    return int(day.strftime("%Y%m%d")) * 100


@dataclass(frozen=True, kw_only=True)
class Settings:
    """The command line of ``pdors nightly`` (checked by ``pdors.config.build``). Defaults: the whole night
    (10 pinned instances, 8 fresh ones of at most 60 s + the guard's slack each) stays under 20 minutes."""

    profile: str = "small"
    fresh: int = 8
    paper: int = 3  # fresh paper-scale instances (pipeline.nightly.paper), certified by the dual bound
    fig09: int = 2  # fresh instances of Fig. 9's setting (H = 30, I = 100, T = 80), likewise
    pinned: int = 10  # with --record: how many instances to pin
    paper_pinned: int = paper_record.SEEDS  # with --record paper: seeds per setting of the paper-scale record
    calibration: int | None = None  # with --record paper: seeds per setting of the fresh check (power.CALIBRATION)
    seed: int | None = None  # first fresh seed (default: from the date); with --record the first seed scanned
    solver: str = "highs"
    time_limit: float = 60.0
    mip_gap: float = 1e-6
    tolerance: float = 1e-6
    record_file: str = nightly_record.DEFAULT_RECORD
    out: str = DEFAULT_OUT
    # the policies judged against OPT on the fresh instances (built-in or external; PD-ORS among them); empty: the
    # built-ins
    policies: tuple[str, ...] = ()

    def check(self) -> list[str]:
        from offline_opt.profile import INSTANCE_PROFILES
        from offline_opt.solve import limit_problems
        from offline_opt.solvers import SOLVERS, available
        from pdors.errors import InputError
        from pdors.policies import resolve

        out = []
        if self.policies and "pdors" not in self.policies:
            out.append(f"policies: the nightly guards PD-ORS: name pdors among {', '.join(self.policies)}")
        for name in self.policies:
            try:
                resolve(name)
            except InputError as e:
                out.append(f"policies: {str(e).removeprefix('policy').lstrip(': ')}")
        if self.profile not in INSTANCE_PROFILES:
            out.append(f"profile: must be one of {', '.join(INSTANCE_PROFILES)}, got {self.profile!r}")
        if self.fresh < 0:
            out.append(f"fresh: must be >= 0, got {self.fresh}")
        if self.paper < 0:
            out.append(f"paper: must be >= 0, got {self.paper}")
        if self.fig09 < 0:
            out.append(f"fig09: must be >= 0, got {self.fig09}")
        if self.pinned < 1:
            out.append(f"pinned: must be >= 1, got {self.pinned}")
        if self.paper_pinned < 1:
            out.append(f"paper_pinned: must be >= 1, got {self.paper_pinned}")
        if self.calibration is not None and self.calibration < 1:
            out.append(f"calibration: must be >= 1, got {self.calibration}")
        if self.solver not in SOLVERS:
            out.append(f"solver: must be one of {', '.join(SOLVERS)}, got {self.solver!r}")
        elif not available(self.solver):
            out.append(
                f"solver: {self.solver} is not installed here (highs: pip install highspy; "
                "cbc/glpk: apt-get install coinor-cbc glpk-utils)"
            )
        if self.seed is not None and self.seed < 0:
            out.append(f"seed: must be >= 0, got {self.seed}")
        if not 0 <= self.tolerance < 1:
            out.append(f"tolerance: must lie in [0, 1), got {self.tolerance}")
        return out + limit_problems(self.time_limit, self.mip_gap)

    def fresh_seeds(self, today: date) -> list[int]:
        first = date_seed(today) if self.seed is None else self.seed
        return list(range(first, first + self.fresh))

    def paper_seeds(self, today: date) -> list[int]:
        first = (date_seed(today) if self.seed is None else self.seed) + nightly_paper.SEED_OFFSET
        return list(range(first, first + self.paper))

    def fig09_seeds(self, today: date) -> list[int]:
        first = (date_seed(today) if self.seed is None else self.seed) + nightly_paper.FIG09_SEED_OFFSET
        return list(range(first, first + self.fig09))


@dataclass(kw_only=True)
class FreshInstance:
    """One fresh instance: its seed, the comparison (``offline_opt.Comparison``), what failed, PD-ORS's
    ratio interval (equal ends when OPT is proven; None: unknown) and where the instance was saved."""

    seed: int
    comparison: Comparison
    offences: list[str]
    interval: tuple[float, float] | None
    saved: Path | None = None

    @property
    def pdors(self) -> PolicyRatio:
        return next(p for p in self.comparison.policies if p.policy == "pdors")

    @property
    def outside_band(self) -> bool:
        return self.interval is not None and self.interval[1] > BAND[1] + 1e-9


@dataclass(kw_only=True)
class Regressions:
    """The checks that catch a PD-ORS regression: the pinned small set, the paper-scale record, the fresh
    paper-scale power check (``pipeline.nightly.power``)."""

    pinned: list[nightly_record.Pinned] = field(default_factory=list)
    paper_record: list[paper_record.Verdict] = field(default_factory=list)
    power: list[power.CellVerdict] = field(default_factory=list)

    @property
    def reasons(self) -> list[str]:
        out = [f"paper record {v.reason}" for v in self.paper_record if v.red]
        out += [f"fresh power {v.reason}" for v in self.power if v.red]
        return out + [f"pinned seed {p.seed}: {why}" for p in self.pinned for why in p.problems]

    def parts_red(self) -> list[str]:
        parts = {
            "pinned small": any(p.problems for p in self.pinned),
            "paper record": any(v.red for v in self.paper_record),
            "fresh power": any(v.red for v in self.power),
        }
        return [k for k, red in parts.items() if red]


def regressions(
    settings: Settings,
    today: date,
    bounds: dict[tuple[str, int], float],
    pinned: bool = True,
    policies: tuple[str, ...] | None = None,
) -> Regressions:
    """The regression checks of tonight (``pinned``: also the two pinned records; ``policies``: the policies re-run
    on the small pinned set, default all). ``bounds``: the fresh instances' dual bounds by (setting, seed),
    computed where missing."""
    rec = nightly_record.load(settings.record_file, settings.profile)
    out = Regressions()
    if pinned:
        out.pinned = nightly_record.check(rec, settings.tolerance, policies)
        out.paper_record = paper_record.check(rec["paper_record"])
    out.power = power.night(rec["power"], {"paper": settings.paper_seeds(today)}, bounds)
    return out


@dataclass(kw_only=True)
class Report:
    settings: Settings
    name: str
    directory: Path
    code: JSON  # pdors version, git commit, package versions
    record: JSON
    regressions: Regressions = field(default_factory=Regressions)
    fresh: list[FreshInstance] = field(default_factory=list)
    paper: list[nightly_paper.PaperScale] = field(default_factory=list)

    @property
    def pinned(self) -> list[nightly_record.Pinned]:
        return self.regressions.pinned

    @property
    def failures(self) -> int:
        """Failed instances, pinned rows and fresh power cells."""
        return (
            sum(bool(p.problems) for p in self.pinned)
            + sum(v.red for v in self.regressions.paper_record)
            + sum(v.red for v in self.regressions.power)
            + sum(bool(f.offences) for f in self.fresh)
            + sum(bool(p.offences) for p in self.paper)
        )

    @property
    def passed(self) -> bool:
        return self.failures == 0

    def ratios(self, policy: str) -> list[float]:
        """OPT / ALG of ``policy`` on the fresh instances where OPT is proven and the ratio defined."""
        out = []
        for f in self.fresh:
            p = next(p for p in f.comparison.policies if p.policy == policy)
            if p.ratio_kind == "opt" and p.ratio is not None:
                out.append(p.ratio)
        return out

    def policies(self) -> list[str]:
        return [p.policy for p in self.fresh[0].comparison.policies] if self.fresh else []


def interval(comparison: Comparison) -> tuple[float, float] | None:
    """PD-ORS's OPT / ALG: [r, r] with OPT proven, [max(1, best found / ALG), bound / ALG] without;
    infinite when PD-ORS earns nothing while OPT does; None when nothing is known (or both are 0)."""
    opt = comparison.opt
    pd_ = next(p for p in comparison.policies if p.policy == "pdors")
    if pd_.ratio_kind == "opt" and pd_.ratio is not None:
        return pd_.ratio, pd_.ratio
    if pd_.ratio_kind == "upper" and pd_.ratio is not None:
        return max(1.0, (opt.objective or 0.0) / pd_.utility), pd_.ratio
    if pd_.ratio_kind == "none" and pd_.utility <= 0 and (opt.objective or 0.0) > 0:
        return math.inf, math.inf
    return None


def offences(comparison: Comparison) -> list[str]:
    """The hard violations on a fresh instance (empty: it passes). Pure: reads ``comparison`` only."""
    opt, out = comparison.opt, []
    if opt.violations:
        out.append(f"OPT schedule has {len(opt.violations)} validator violation(s)")
    elif opt.status in ("error", "invalid"):
        out.append(f"OPT solve failed ({opt.solver} status {opt.status}; {opt.message or 'no message'})")
    for p in comparison.policies:
        if p.violations:
            out.append(f"{p.policy} schedule has {p.violations} validator violation(s)")
    out += comparison.errors
    pd_, span = next(p for p in comparison.policies if p.policy == "pdors"), interval(comparison)
    if span is not None and not pd_.violations:
        if pd_.competitive_bound is None:
            out.append("pdors reported no theoretical bound")
        elif span[0] > pd_.competitive_bound:
            out.append(
                f"pdors OPT / ALG >= {span[0]:.4f} > theoretical bound {pd_.competitive_bound:.4g} (Theorems 5-6)"
            )
    return out


def stats(values: list[float]) -> dict[str, float | None]:
    """max / median / p90 (None for no values)."""
    if not values:
        return {"max": None, "median": None, "p90": None}
    a = np.asarray(values, float)
    return {"max": float(a.max()), "median": float(np.median(a)), "p90": float(np.percentile(a, 90))}


def replay_command(fresh: FreshInstance, settings: Settings) -> str:
    return (
        f"pdors opt --instance {fresh.saved} --seed {fresh.seed} --solver {settings.solver} "
        f"--time-limit {settings.time_limit:g} --mip-gap {settings.mip_gap:g}"
    )


def code_version() -> JSON:
    import pdors
    from pipeline.record.provenance import git_commit, packages

    # in the container image there is no .git: infra/Dockerfile records the commit in PDORS_GIT_COMMIT
    commit = git_commit()
    commit = os.environ.get("PDORS_GIT_COMMIT", commit) if commit == "unknown" else commit
    return {"pdors": pdors.version.CODE_VERSION, "git_commit": commit, "packages": packages()}


def check(settings: Settings, today: date, progress: bool = True) -> Report:
    """The pinned set against its record, then the fresh instances; writes the run directory. No MLflow."""
    from tqdm import tqdm

    from offline_opt import compare
    from offline_opt.profile import INSTANCE_PROFILES
    from pdors.config import to_dict
    from pdors.instance_io import save

    rec = nightly_record.load(settings.record_file, settings.profile)
    seeds = settings.fresh_seeds(today)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    name = f"nightly-{stamp}-seed{seeds[0] if seeds else '-'}-n{settings.fresh}"
    while (Path(settings.out) / name).exists():  # two runs in one second: never mix their files
        name += "+"
    report = Report(settings=settings, name=name, directory=Path(settings.out) / name, code=code_version(), record=rec)
    profile = INSTANCE_PROFILES[settings.profile]
    bar = tqdm(
        seeds,
        unit="instance",
        file=sys.stderr,
        disable=not progress,
        dynamic_ncols=True,
        mininterval=0.5 if sys.stderr.isatty() else 30,
    )
    for seed in bar:
        bar.set_description(f"seed {seed}")
        instance = profile.draw(seed)
        c = compare(
            instance,
            settings.solver,
            settings.time_limit,
            settings.mip_gap,
            seed=seed,
            workload=to_dict(profile.workload()),
            policies=settings.policies or None,
        )
        f = FreshInstance(seed=seed, comparison=c, offences=offences(c), interval=interval(c))
        if f.offences or f.outside_band:
            f.saved = report.directory / ("offenders" if f.offences else "outside_band") / f"seed-{seed}.json"
            f.saved.parent.mkdir(parents=True, exist_ok=True)
            save(instance, f.saved)
        report.fresh.append(f)
        bar.set_postfix(failed=sum(bool(x.offences) for x in report.fresh), refresh=False)
    bar.close()
    offenders = report.directory / "offenders"
    report.paper = [nightly_paper.check_one(seed, "paper", offenders) for seed in settings.paper_seeds(today)]
    report.paper += [nightly_paper.check_one(seed, "fig09", offenders) for seed in settings.fig09_seeds(today)]
    bounds = {(p.setting, p.seed): p.certified.bound.bound for p in report.paper}
    report.regressions = regressions(settings, today, bounds)
    _write(report)
    return report


def reasons(report: Report) -> list[str]:
    """Why the night is red (empty when green): regressions, violations, policies above a bound, theorem checks."""
    out = report.regressions.reasons + [f"fresh seed {f.seed}: {why}" for f in report.fresh for why in f.offences]
    return out + [f"{p.setting} seed {p.seed}: {why}" for p in report.paper for why in p.offences]


def _span(span: tuple[float, float] | None) -> str:
    if span is None:
        return "n/a"
    return f"{span[0]:.3f}" if span[0] == span[1] else f"[{span[0]:.3f}, {span[1]:.3f}]"


def tables(report: Report) -> str:
    """Markdown: the pinned set against its record, the fresh instances, the verdict."""
    s, rec = report.settings, report.record
    lines = [
        f"# {report.name}",
        "",
        f"Profile {s.profile!r} (H={rec['size']['machines']}, I={rec['size']['jobs']}, "
        f"T={rec['size']['slots']}); code: pdors {report.code['pdors']}, commit {report.code['git_commit']}.",
        "",
        f"## Pinned set ({len(report.pinned)} instances, {s.record_file}, recorded "
        f"{rec['recorded_at']} at commit {rec['code']['git_commit']})",
        "",
        f"Rule: {rec['rule']}",
        "",
        "Premise: the share of PD-ORS's admissions on which Definition 1 (paper Appendix) holds, so that Theorems "
        "5-6 apply (pdors/premise.py), with the largest share of a machine's capacity one job takes in one slot.",
        "",
        "| seed | OPT | PD-ORS record | PD-ORS tonight | OPT / PD-ORS | premise share | job cell share max | "
        "theorem bound | changes | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for p in report.pinned:
        now = p.utilities.get("pdors")
        ratio = p.opt / now if now else None
        lines.append(
            f"| {p.seed} | {p.opt:.4f} | {number(p.recorded.get('pdors'))} | {number(now)} | "
            f"{number(ratio, '.3f')} | {number(p.premise.get('premise_share'), '.0%')} | "
            f"{number(p.premise.get('cell_share_max'), '.3f')} | {number(p.premise.get('competitive_bound'), '.1f')} | "
            f"{'; '.join(p.changes) or '-'} | "
            f"{'FAIL: ' + '; '.join(p.problems) if p.problems else 'pass'} |"
        )
    policies = report.policies()
    lines += [
        "",
        f"## Fresh instances (seeds {', '.join(str(f.seed) for f in report.fresh) or 'none'}; "
        f"{s.solver}, {s.time_limit:g} s, gap {s.mip_gap:g})",
        "",
        "OPT / ALG per policy; `(upper)`: OPT not proven, bound / ALG. PD-ORS: its interval "
        f"[best found / ALG, bound / ALG] where OPT is unproven; the paper's band is {BAND[0]}-{BAND[1]}.",
        "",
    ]
    head = [
        "seed",
        "OPT status",
        "OPT",
        "gap",
        "OPT s",
        *policies,
        "PD-ORS interval",
        "PD-ORS bound",
        "premise share",
        "band",
        "verdict",
    ]
    lines += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for f in report.fresh:
        o = f.comparison.opt
        ratios = [
            (number(p.ratio, ".3f") + (" (upper)" if p.ratio_kind == "upper" else ""))
            if p.ratio is not None
            else f"n/a ({p.ratio_note})"
            for p in f.comparison.policies
        ]
        band = (
            "n/a"
            if f.interval is None
            else ("outside" if f.interval[0] > BAND[1] + 1e-9 else "maybe outside" if f.outside_band else "inside")
        )
        lines.append(
            "| "
            + " | ".join(
                [
                    str(f.seed),
                    o.status,
                    number(o.objective),
                    number(o.gap, ".1e"),
                    f"{o.wall_s:.1f}",
                    *ratios,
                    _span(f.interval),
                    number(f.pdors.competitive_bound, ".1f"),
                    number(f.pdors.premise_share, ".0%"),
                    band,
                    "FAIL" if f.offences else "pass",
                ]
            )
            + " |"
        )
    pd_stats = stats(report.ratios("pdors"))
    proven = len(report.ratios("pdors"))
    lines += [
        "",
        f"PD-ORS OPT / ALG on the {proven} fresh instance(s) with OPT proven: median "
        f"{number(pd_stats['median'])}, p90 {number(pd_stats['p90'])}, max {number(pd_stats['max'])}; "
        f"{sum(f.outside_band for f in report.fresh)} of {len(report.fresh)} (possibly) outside "
        f"{BAND[0]}-{BAND[1]}, saved under outside_band/ (a report, not a failure).",
        *nightly_paper.markdown(report.paper),
        *regression_tables(report.regressions, report.record),
        "",
    ]
    lines.append("**PASS**" if report.passed else f"**FAIL**: {report.failures} instance(s)")
    lines += [f"- {why}" for why in reasons(report)]
    bad = [f for f in report.fresh if f.offences]
    if bad:
        lines += ["", "| seed | why | replay |", "| --- | --- | --- |"]
        lines += [f"| {f.seed} | {'; '.join(f.offences)} | `{replay_command(f, s)}` |" for f in bad]
    outside = [f for f in report.fresh if f.outside_band and not f.offences]
    if outside:
        lines += ["", "Outside the band (replay): " + "; ".join(f"`{replay_command(f, s)}`" for f in outside)]
    return "\n".join(lines) + "\n"


def regression_tables(g: Regressions, rec: JSON) -> list[str]:
    """Markdown: the paper-scale record and the fresh power check."""
    out = []
    if g.paper_record:
        out += [
            "",
            f"## Paper-scale record ({rec['paper_record']['rule']}; recorded at MODEL_VERSION "
            f"{rec['paper_record']['model_version']})",
            "",
            "Red: PD-ORS's utility below its record (a regression) or its schedule digest changed (a change to "
            "re-record with `pdors nightly --record paper`).",
            "",
            table(
                ["setting", "seed", "reading", "recorded", "tonight", "verdict"],
                [
                    [v.setting, v.seed, v.reading, f"{v.recorded:.4f}", f"{v.utility:.4f}", v.reason or "pass"]
                    for v in g.paper_record
                ],
            ),
        ]
    if g.power:
        p = rec["power"]
        out += [
            "",
            f"## Fresh paper-scale power check ({p['rule']})",
            "",
            table(
                ["cell", "K", "healthy median (of N recorded)", "tonight", "threshold", "detects a drop of", "verdict"],
                [
                    [
                        v.cell,
                        v.instances,
                        f"{v.median:.4f} ({v.recorded})",
                        f"{v.mean:.4f}",
                        f"{v.threshold:.4f}",
                        f"{v.detectable:.2%}",
                        "RED" if v.red else "pass",
                    ]
                    for v in g.power
                ],
            ),
        ]
    return out


def plot(report: Report, path: Path) -> Path:
    """PD-ORS's OPT / ALG per fresh instance (a point when OPT is proven, a bar over its interval when not;
    log y), the other policies as small marks, the paper's band shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.axhspan(*BAND, color="green", alpha=0.12, label=f"paper's band {BAND[0]}-{BAND[1]}")
    finite = [v for f in report.fresh if f.interval for v in f.interval if math.isfinite(v)]
    top = max([BAND[1], *finite]) * 1.1
    for k, f in enumerate(report.fresh):
        for p in f.comparison.policies:
            if p.policy != "pdors" and p.ratio is not None and p.ratio_kind == "opt":
                ax.plot(k, min(p.ratio, top), "x", color="grey", markersize=4, zorder=2)
        if f.interval is not None:
            lo, hi = (min(v, top) for v in f.interval)
            if lo == hi:
                ax.plot(k, lo, "o", color="C0", zorder=3)
            else:
                ax.plot([k, k], [lo, hi], "_-", color="C0", linewidth=3, markersize=10, zorder=3)
    ax.plot([], [], "o", color="C0", label="PD-ORS (bar: OPT unproven)")
    ax.plot([], [], "x", color="grey", label="other policies (proven OPT)")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
    ax.set_xticks(range(len(report.fresh)), [str(f.seed) for f in report.fresh], rotation=45, fontsize=7)
    ax.set_xlabel("fresh instance (seed)")
    ax.set_ylabel("OPT / ALG (log scale)")
    ax.set_title(report.name, fontsize=9)
    ax.margins(x=0.1)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _write(report: Report) -> None:
    d = report.directory
    d.mkdir(parents=True, exist_ok=True)
    (d / "report.json").write_text(
        json.dumps(
            {
                "name": report.name,
                "settings": asdict(report.settings),
                "band": BAND,
                "code": report.code,
                "passed": report.passed,
                "record": {
                    k: v for k, v in report.record.items() if k not in ("instances", *nightly_record.PAPER_SECTIONS)
                },
                "pinned": [p.to_dict() for p in report.pinned],
                "paper_record": [v.to_dict() for v in report.regressions.paper_record],
                "power": [v.to_dict() for v in report.regressions.power],
                "fresh": [
                    {
                        "seed": f.seed,
                        "offences": f.offences,
                        "interval": f.interval,
                        "outside_band": f.outside_band,
                        "saved": str(f.saved) if f.saved else None,
                        **f.comparison.to_dict(),
                    }
                    for f in report.fresh
                ],
                "paper": [p.to_dict() for p in report.paper],
            },
            indent=1,
            default=str,
        )
    )
    (d / "summary.md").write_text(tables(report))
    plot(report, d / "ratios.png")


def run_metrics(report: Report) -> dict[str, float | int | None]:
    """The night's summary metrics (median, p90, max ratio per policy, counts): the history across nights."""
    out: dict[str, float | int | None] = {
        "passed": int(report.passed),
        "failed_instances": report.failures,
        "pinned": len(report.pinned),
        "pinned_failed": sum(bool(p.problems) for p in report.pinned),
        "pinned_changed": sum(bool(p.changes) for p in report.pinned),
        "fresh": len(report.fresh),
        "fresh_failed": sum(bool(f.offences) for f in report.fresh),
        "opt_proven": sum(f.comparison.opt.proven_optimal for f in report.fresh),
        "outside_band": sum(f.outside_band for f in report.fresh),
        "opt_wall_s.max": max((f.comparison.opt.wall_s for f in report.fresh), default=None),
    }
    for policy in report.policies():
        out |= {f"ratio.{policy}.{k}": v for k, v in stats(report.ratios(policy)).items()}
    out["ratio_upper.pdors.max"] = max((f.interval[1] for f in report.fresh if f.interval), default=None)
    shares = {
        "pinned": [p.premise.get("premise_share") for p in report.pinned],
        "fresh": [f.pdors.premise_share for f in report.fresh],
        "paper": [p.premise.premise_share if p.premise else None for p in report.paper],
    }
    for part, values in shares.items():  # Definition 1's share of PD-ORS's admissions (pdors.premise)
        known = [v for v in values if v is not None]
        out[f"premise_share.{part}.mean"] = float(np.mean(known)) if known else None
    out["theorem_violations"] = sum(len(p.theorem) for p in report.paper) + sum(
        len(f.comparison.theorem) for f in report.fresh
    )
    return out


def run_series(report: Report) -> list[tuple[int, dict[str, float | None]]]:
    """Per-instance values, one ``(seed, {metric: value})`` per instance (logged with step = seed)."""
    out: list[tuple[int, dict[str, float | None]]] = []
    for f in report.fresh:
        values: dict[str, float | None] = {
            f"ratio.{p.policy}": p.ratio for p in f.comparison.policies if p.ratio_kind == "opt"
        }
        values |= {
            "opt": f.comparison.opt.objective,
            "bound.pdors": f.pdors.competitive_bound,
            "opt_wall_s": f.comparison.opt.wall_s,
            "offences": len(f.offences),
        }
        out.append((f.seed, values))
    out += [
        (p.seed, {"pinned.pdors": p.utilities.get("pdors"), "pinned.pdors.record": p.recorded.get("pdors")})
        for p in report.pinned
    ]
    return out


def run_params(report: Report) -> dict[str, object]:
    s = report.settings
    return {
        "profile": s.profile,
        "fresh": s.fresh,
        "seeds": ",".join(str(f.seed) for f in report.fresh)[:500] or "-",
        "pinned": len(report.pinned),
        "record_file": s.record_file,
        "solver": s.solver,
        "time_limit": s.time_limit,
        "mip_gap": s.mip_gap,
        "tolerance": s.tolerance,
        **report.record["size"],
        "policies": ",".join(report.policies()) or "-",
    }


def run_tags(report: Report) -> dict[str, str]:
    code = report.code
    statuses = ",".join(f"{f.seed}:{f.comparison.opt.status}" for f in report.fresh)[:TAG_CHARS]
    offenders = ",".join(
        [*(f"pinned {p.seed}" for p in report.pinned if p.problems), *(str(f.seed) for f in report.fresh if f.offences)]
    )[:TAG_CHARS]
    return {
        "result": "pass" if report.passed else "fail",
        "solver_statuses": statuses or "-",
        "offenders": offenders or "-",
        "pdors.version": str(code["pdors"]),
        "git_commit": str(code["git_commit"]),
        "mlflow.source.git.commit": str(code["git_commit"]),
        "output": str(report.directory),
        **{f"version.{k}": str(v) for k, v in code["packages"].items()},
    }


def log_run(report: Report) -> str:
    """One MLflow run in experiment ``nightly-competitive-ratio`` from :func:`run_metrics`, :func:`run_series`
    (step = seed), :func:`run_params` and :func:`run_tags`, plus the report's files; returns its id."""
    from mlflow.entities import Metric, RunTag

    from pipeline.publish import tracking

    tracking.check_reachable(tracking.tracking_uri())
    client = tracking.client()
    exp_id = tracking.experiment_id(client, EXPERIMENT)
    run_id = client.create_run(exp_id, run_name=report.name).info.run_id
    metrics = tracking.metrics(run_metrics(report))
    for seed, values in run_series(report):
        metrics += [Metric(m.key, m.value, m.timestamp, seed) for m in tracking.metrics(values)]
    for k in range(0, len(metrics), BATCH):
        client.log_batch(run_id, metrics=metrics[k : k + BATCH])
    tags = [RunTag(k, v) for k, v in run_tags(report).items()]
    client.log_batch(run_id, params=tracking.params(run_params(report)), tags=tags)
    client.log_artifacts(run_id, str(report.directory))
    client.set_terminated(run_id, "FINISHED" if report.passed else "FAILED")
    return str(run_id)


def run(settings: Settings, track: bool = True, progress: bool = True, today: date | None = None) -> int:
    """``pdors nightly``; returns the exit status."""
    report = check(settings, today or datetime.now(UTC).date(), progress)
    print(tables(report), end="")
    print(
        f"results: {report.directory} (report.json, summary.md, ratios.png"
        + (", offenders/" if any(f.offences for f in report.fresh) else "")
        + (", outside_band/" if any(f.outside_band and not f.offences for f in report.fresh) else "")
        + ")"
    )
    status = ExitStatus.OK if report.passed else ExitStatus.FAILED
    if not track:
        return status
    from pipeline.publish import tracking
    from pipeline.text.credentials import one_line

    try:
        run_id = log_run(report)
    except Exception as e:  # the files are the record; a tracking outage must not hide the verdict
        print(f"MLflow logging failed ({one_line(e)}); the results are in {report.directory}", file=sys.stderr)
        return status or ExitStatus.MLFLOW_FAILED
    print(f"MLflow: {tracking.shown_uri()} experiment {EXPERIMENT!r}, run {run_id}")
    return status


def rerecord(settings: Settings, part: str = "all", progress: bool = True) -> int:
    """``pdors nightly --record [all|small|paper]``: pin instances by the rules and write the record (``small``
    keeps the file's paper-scale sections, ``paper`` its small set); returns the exit status."""
    path = Path(settings.record_file)
    old = nightly_record.load(path, settings.profile, paper=False) if part != "all" and path.exists() else None
    if part == "paper" and old is None:
        raise nightly_record.RecordError(f"--record paper: {path} holds no small set to keep; use --record all")
    if part == "paper" and old is not None:
        rec = old
    else:
        first = 1 if settings.seed is None else settings.seed
        rec = nightly_record.record(settings, first, code_version(), progress)
        _print_small(rec, settings)
    if part == "small" and old is not None:
        rec |= {k: old[k] for k in nightly_record.PAPER_SECTIONS if k in old}
    if part in ("all", "paper"):
        rec["paper_record"] = paper_record.record(settings.paper_pinned)
        rec["power"] = power.record(settings.calibration)
        print(f"paper-scale record: {len(rec['paper_record']['rows'])} rows ({rec['paper_record']['rule']})")
        print(
            table(
                ["setting", "seed", "reading", "utility", "digest"],
                [
                    [r["setting"], r["seed"], r["reading"], f"{r['utility']:.4f}", r["digest"]]
                    for r in rec["paper_record"]["rows"]
                ],
            )
        )
        print(f"power: {rec['power']['rule']}")
    nightly_record.save(rec, path)
    print(f"recorded to {path}")
    return ExitStatus.OK


def _print_small(rec: JSON, settings: Settings) -> None:
    print(f"recorded {len(rec['instances'])} pinned instances to {settings.record_file}\nrule: {rec['rule']}")
    print("| seed | OPT | OPT s | " + " | ".join(rec["instances"][0]["utilities"]) + " |")
    for row in rec["instances"]:
        print(
            f"| {row['seed']} | {row['opt']['objective']:.4f} | {row['opt']['wall_s']:.1f} | "
            + " | ".join(f"{u:.4f}" for u in row["utilities"].values())
            + " |"
        )
    if rec["skipped"]:
        print("skipped (OPT not proven): " + ", ".join(f"{s['seed']} ({s['status']})" for s in rec["skipped"]))
