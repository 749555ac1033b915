"""The nightly's pinned regression set: instances with their proven OPT and every policy's recorded utility
(``pdors nightly --record``, a JSON file committed in the repository), and tonight's policies against it.

Which instances are pinned is decided by a rule that never looks at a ratio (:func:`rule`): the first N seeds,
in seed order from S (default 1), of the nightly's instance profile whose OPT the solver proves within the
nightly's per-instance budget (its time limit and gap target). Seeds whose OPT is not proven are skipped and
listed in the record. The instances themselves are stored (``pdors.instance_io``), so a change in the
generator cannot silently change the set.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from pdors.config import JSON
from pdors.errors import InputError


class RecordSettings(Protocol):
    """What recording reads of :class:`pipeline.nightly.run.Settings` (a protocol: nightly imports this module)."""

    @property
    def profile(self) -> str: ...
    @property
    def pinned(self) -> int: ...
    @property
    def solver(self) -> str: ...
    @property
    def time_limit(self) -> float: ...
    @property
    def mip_gap(self) -> float: ...


FORMAT = "pdors-nightly-record/1"
# The record committed with the code (a checkout, or an editable install of one), wherever the command runs from.
DEFAULT_RECORD = str(Path(__file__).resolve().parents[2] / "configs" / "nightly_record.json")
# the paper-scale record (pipeline.nightly.paper_record) and the fresh check's distribution (pipeline.nightly.power)
PAPER_SECTIONS = ("paper_record", "power")
SCAN_FACTOR = 4  # --record tries at most N * SCAN_FACTOR seeds before giving up


class RecordError(InputError):
    """The record file is missing, malformed or made for other settings."""


def rule(profile: str, count: int, first_seed: int, solver: str, time_limit: float, mip_gap: float) -> str:
    return (
        f"the first {count} seeds, in seed order from {first_seed}, of instance profile {profile!r} whose OPT "
        f"{solver} proves within the nightly's per-instance budget ({time_limit:g} s, gap target "
        f"{mip_gap:g}); unproven seeds are skipped. No ratio is looked at."
    )


def record(settings: RecordSettings, first_seed: int, code: JSON, progress: bool = True) -> JSON:
    """Scan seeds from ``first_seed`` and pin the first ``settings.pinned`` whose OPT is proven. Raises
    :class:`RecordError` (nothing written) when ``N * SCAN_FACTOR`` seeds give fewer."""
    from tqdm import tqdm

    from offline_opt import compare
    from offline_opt.profile import INSTANCE_PROFILES
    from pdors.config import to_dict
    from pdors.instance_io import to_dict as instance_dict

    profile = INSTANCE_PROFILES[settings.profile]
    pinned, skipped = [], []
    bar = tqdm(
        range(first_seed, first_seed + settings.pinned * SCAN_FACTOR),
        unit="seed",
        file=sys.stderr,
        disable=not progress,
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
        )
        o = c.opt
        if not o.proven_optimal:
            skipped.append({"seed": seed, "status": o.status, "gap": o.gap, "wall_s": o.wall_s})
            continue
        if c.errors or o.violations or any(p.violations for p in c.policies):
            raise RecordError(
                f"seed {seed}: will not pin an instance with a hard violation: "
                f"{'; '.join(c.errors) or 'validator violations'}"
            )
        pinned.append(
            {
                "seed": seed,
                "instance": instance_dict(instance),
                "opt": {k: getattr(o, k) for k in ("objective", "bound", "gap", "status", "wall_s")},
                "utilities": {p.policy: p.utility for p in c.policies},
            }
        )
        bar.set_postfix(pinned=len(pinned), skipped=len(skipped), refresh=False)
        if len(pinned) == settings.pinned:
            break
    bar.close()
    if len(pinned) < settings.pinned:
        raise RecordError(
            f"pinned: only {len(pinned)} of the first {settings.pinned * SCAN_FACTOR} seeds from "
            f"{first_seed} have an OPT proven within {settings.time_limit:g} s; nothing written"
        )
    return {
        "format": FORMAT,
        "rule": rule(
            settings.profile, settings.pinned, first_seed, settings.solver, settings.time_limit, settings.mip_gap
        ),
        "profile": settings.profile,
        "size": profile.size,
        "workload": to_dict(profile.workload()),
        "solver": settings.solver,
        "time_limit": settings.time_limit,
        "mip_gap": settings.mip_gap,
        "first_seed": first_seed,
        "skipped": skipped,
        "code": code,
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "instances": pinned,
    }


def save(rec: JSON, path: str | Path) -> None:
    """One line per top-level field and per pinned instance: small diffs when the lead re-records."""
    head = [f" {json.dumps(k)}: {json.dumps(v)}" for k, v in rec.items() if k != "instances"]
    rows = ",\n  ".join(json.dumps(row) for row in rec["instances"])
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("{\n" + ",\n".join(head) + f',\n "instances": [\n  {rows}\n ]\n}}\n')


def load(path: str | Path, profile: str, paper: bool = True) -> JSON:
    """The record at ``path``, checked to be one and to be made for ``profile`` (and, with ``paper``, to hold the
    paper-scale sections)."""
    try:
        rec = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise RecordError(f"--record-file: no such file: {path} (write one with `pdors nightly --record`)") from None
    except json.JSONDecodeError as e:
        raise RecordError(f"--record-file: {path} is not JSON ({e})") from None
    if not isinstance(rec, dict) or rec.get("format") != FORMAT or not isinstance(rec.get("instances"), list):
        raise RecordError(f"--record-file: {path} is not a {FORMAT} document")
    if rec.get("profile") != profile:
        raise RecordError(
            f"--profile: the record {path} pins profile {rec.get('profile')!r}, not {profile!r}; "
            f"re-record with `pdors nightly --record --profile {profile}`"
        )
    missing = [k for k in PAPER_SECTIONS if not isinstance(rec.get(k), dict)]
    if paper and missing:
        raise RecordError(
            f"--record-file: {path} has no {' or '.join(missing)} section (the paper-scale record); write it with "
            "`pdors nightly --record paper`"
        )
    return rec


@dataclass(kw_only=True)
class Pinned:
    """Tonight's policies on one pinned instance against its record."""

    seed: int
    opt: float
    recorded: dict[str, float]
    utilities: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # failures
    changes: list[str] = field(default_factory=list)  # every difference from the record, reported
    premise: JSON = field(default_factory=dict)  # PD-ORS's Definition 1 on this instance (pdors.premise.Premise)

    def to_dict(self) -> JSON:
        return dict(self.__dict__)


def check(rec: JSON, tolerance: float, policies: tuple[str, ...] | None = None) -> list[Pinned]:
    """Re-run every policy (or ``policies``) on every pinned instance. Fails an instance when a schedule has a
    validator violation, a policy earns more than OPT allows, or PD-ORS earns less than its record by more than
    ``tolerance`` (relative)."""
    from offline_opt.compare import judge, run_policies
    from pdors.instance_io import from_dict
    from pdors.premise import theorem_violation

    out = []
    for row in rec["instances"]:
        o = row["opt"]
        runs = run_policies(from_dict(row["instance"]), row["seed"], rec["workload"], policies=policies)
        p = Pinned(seed=row["seed"], opt=o["objective"], recorded=row["utilities"])
        for name, r in runs.items():
            u = p.utilities[name] = r.validation.total_utility
            if r.validation.violations:
                p.problems.append(f"{name} schedule has {len(r.validation.violations)} validator violation(s)")
            _, kind, note = judge(u, o["objective"], o["bound"], True, rec["mip_gap"], o["status"])
            if kind == "error":
                p.problems.append(f"{name}: {note}")
            before = p.recorded.get(name)
            if before is None:
                p.changes.append(f"{name}: new policy, utility {u:.6f} (not in the record)")
            elif abs(u - before) > 1e-9 * max(1.0, abs(before)):
                p.changes.append(f"{name}: {before:.6f} -> {u:.6f} ({(u - before) / max(abs(before), 1e-12):+.2%})")
        if "pdors" in runs:  # Theorems 5-6 against the proven OPT (pdors.premise)
            p.premise = asdict(runs["pdors"].summary.premise)
            u = runs["pdors"].validation.total_utility
            upper = o["objective"] / u if u > 0 else (math.inf if o["objective"] > 0 else None)
            why = theorem_violation(runs["pdors"].summary.premise, upper)
            p.problems += [f"pdors: {why}"] if why else []
        pd_before, pd_now = p.recorded.get("pdors"), p.utilities.get("pdors")
        if pd_before is not None and pd_now is not None and pd_now < pd_before - tolerance * max(1.0, abs(pd_before)):
            p.problems.append(
                f"pdors utility {pd_now:.6f} below its record {pd_before:.6f} "
                f"({(pd_before - pd_now) / max(abs(pd_before), 1e-12):.2%} below; tolerance {tolerance:g})"
            )
        out.append(p)
    return out
