"""The absurd-override probe (issue 47): every config field of a tiny sweep set, one at a time, to absurd values
(huge, tiny, negative, zero, NaN, infinite, of the wrong type, a long string) on the command line of a real
``pdors sweep run --in-process``, each with a time limit, in one of two worker processes that run them one after
another (tests/cli_worker.py: the start-up of a process a sweep cost more than most sweeps). Counted: tracebacks,
hangs, and runs recorded ``ok`` with validator violations; each must be 0. The table is printed (``-s`` shows it).
Slow: about 470 sweeps, most refused in one line before anything runs.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from queue import Queue

import pytest
import yaml
from cli_worker import CliWorker

from pdors.policies import POLICIES, policy_module
from pdors.workload import WorkloadConfig

HANG_SECONDS = 300  # a tiny sweep takes seconds; one still running after this is counted as a hang
BASE = {
    "name": "absurd",
    "instance": {"jobs": 3, "slots": 4},
    "policies": {p: {} for p in POLICIES},
    "grid": {"machines": [2]},
    "seeds": {"start": 1, "count": 1},
    "mlflow": {"enabled": False},
}
ABSURD = ["1.0e+300", "-1", "0", "1.0e-300", ".nan", "-.inf", "99999999999999999999", "[1, 2]", "x" * 5000]
TOP_FIELDS = [
    "name",
    "instance.jobs",
    "instance.slots",
    "grid.machines",
    "seeds.start",
    "seeds.count",
    "opt.time_limit",
    "opt.mip_gap",
    "opt.solver",
    "opt.method",
    "mlflow.experiment",
    "schedules",
    "reference",
]


def _leaves(cls: type, prefix: str) -> list[str]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        out += _leaves(tp, f"{prefix}{f.name}.") if dataclasses.is_dataclass(tp) else [f"{prefix}{f.name}"]
    return out


def fields() -> list[str]:
    """Every field of the sweep config: the top-level ones, the generator's, and each policy's."""
    out = [*TOP_FIELDS, *_leaves(WorkloadConfig, "instance.workload.")]
    for p in POLICIES:
        out += _leaves(policy_module(p).Config, f"policies.{p}.")
    return out


@dataclasses.dataclass(frozen=True)
class Outcome:
    field: str
    value: str
    kind: str  # refused | ran | traceback | hang | ok_with_violations | other
    detail: str


def worker() -> CliWorker:
    return CliWorker({**os.environ, "MLFLOW_TRACKING_URI": ""})


def probe_one(pdors: CliWorker, config: Path, root: Path, field: str, value: str) -> Outcome:
    out = root / f"{abs(hash((field, value))):x}"
    done = pdors.run(["sweep", "run", str(config), f"{field}={value}", "--in-process", "--out", str(out)], HANG_SECONDS)
    if done.code is None:
        return Outcome(field, value[:20], "hang", "")
    shown = value[:20]
    if "Traceback (most recent call last)" in done.err:
        return Outcome(field, shown, "traceback", done.err.strip().splitlines()[-1][:200])
    if done.code == 2:
        lines = [ln for ln in done.err.splitlines() if "error:" in ln]
        return Outcome(field, shown, "refused" if len(lines) == 1 else "other", done.err[-200:])
    if done.code in (0, 1) and (out / "runs").exists():
        from pipeline import load_runs

        runs = load_runs(str(out))
        bad = runs[(runs["status"] == "ok") & (runs["violations"].fillna(0) > 0)] if "violations" in runs else []
        if len(bad):
            return Outcome(field, shown, "ok_with_violations", f"{len(bad)} runs")
        return Outcome(field, shown, "ran", f"exit {done.code}, {Counter(runs['status'])}")
    return Outcome(field, shown, "other", f"exit {done.code}: {done.err[-200:]}")


def probe(root: Path, workers: int = 2) -> list[Outcome]:
    config = root / "absurd.yaml"
    config.write_text(yaml.safe_dump(BASE))
    jobs = [(f, v) for f in fields() for v in ABSURD]
    idle: Queue[CliWorker] = Queue()
    for _ in range(workers):
        idle.put(worker())

    def one(field: str, value: str) -> Outcome:
        pdors = idle.get()
        try:
            return probe_one(pdors, config, root, field, value)
        finally:
            idle.put(pdors)

    try:
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(lambda fv: one(*fv), jobs))
    finally:
        while not idle.empty():
            idle.get().close()


def table(outcomes: list[Outcome]) -> str:
    kinds = Counter(o.kind for o in outcomes)
    lines = [f"{len(outcomes)} overrides over {len({o.field for o in outcomes})} fields"]
    lines += [
        f"  {k}: {kinds.get(k, 0)}" for k in ("refused", "ran", "traceback", "hang", "ok_with_violations", "other")
    ]
    lines += [f"  {o.kind}: {o.field}={o.value}: {o.detail}" for o in outcomes if o.kind not in ("refused", "ran")]
    return "\n".join(lines)


@pytest.mark.slow
def test_absurd_overrides_never_traceback_hang_or_record_violations_as_ok(tmp_path: Path) -> None:
    outcomes = probe(tmp_path)
    print(table(outcomes))
    bad = [o for o in outcomes if o.kind in ("traceback", "hang", "ok_with_violations", "other")]
    assert not bad, table(outcomes)


@pytest.mark.parametrize("field, value", [("name", "x" * 5000), ("policies.pdors.rounding.theorem", "[1, 2]")])
def test_the_probes_tracebacks_are_refusals(field: str, value: str, tmp_path: Path) -> None:
    """The two tracebacks the probe found (OSError: File name too long; TypeError: unhashable type: 'list')."""
    config = tmp_path / "absurd.yaml"
    config.write_text(yaml.safe_dump(BASE))
    pdors = worker()
    try:
        outcome = probe_one(pdors, config, tmp_path, field, value)
    finally:
        pdors.close()
    assert outcome.kind == "refused", outcome


def test_the_worker_sees_a_planted_traceback_hang_and_death(tmp_path: Path) -> None:
    """The probe's counters as the worker feeds them: a ``pdors`` whose main raises, sleeps past the limit or
    ends its process is counted a traceback, a hang and other; the worker goes on with a fresh process."""
    plant = tmp_path / "plant" / "pdors_cli"
    plant.mkdir(parents=True)
    (plant / "__init__.py").write_text("")
    (plant / "main.py").write_text(
        "import os, sys, time\n"
        "def main(args):\n"
        "    fault = args[3].split('=')[1]\n"
        "    if fault == 'raise': raise ValueError('planted')\n"
        "    if fault == 'hang': time.sleep(600)\n"
        "    if fault == 'die': os._exit(7)\n"
        "    os.write(2, b'pdors sweep: error: planted: refused\\n')\n"
        "    return 2\n"
    )
    pdors = CliWorker({**os.environ, "PYTHONPATH": str(plant.parent)})
    config = tmp_path / "absurd.yaml"
    try:
        kinds = [probe_one(pdors, config, tmp_path, "name", v).kind for v in ("refuse", "raise", "refuse", "die")]
        assert kinds == ["refused", "traceback", "refused", "other"]
        assert pdors.run(["sweep", "run", str(config), "name=hang"], 1.0).code is None
        assert probe_one(pdors, config, tmp_path, "name", "refuse").kind == "refused"
    finally:
        pdors.close()
