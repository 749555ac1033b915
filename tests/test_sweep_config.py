"""The sweep config without Ray: validation (one-line errors naming the field), grid expansion and ids."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pdors_cli.main import main
from pipeline import grid, schema, storage
from pipeline.executor import execute
from sweep_fixtures import TINY


def no_ray(*args, **kwargs):
    raise AssertionError("a bad config reached the executor")


def write_config(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


# --- validation: (config change, field path the one-line error must start with) ------------------------------
BAD = [
    ({"bogus": 1}, "bogus: unknown key"),
    ({"seeds": "1,2"}, "seeds: must be a list"),
    ({"seeds": [1, 1]}, "seeds[1]: duplicate seed 1"),
    ({"policies": {"nosuch": {}}}, "policies.nosuch: unknown policy"),
    ({"policies": {"pdors": {"rounding": {"delta": 2}}}}, "policies.pdors.rounding.delta: must lie in (0, 1]"),
    ({"instance": {"seed": 3}}, "instance.seed: unknown key"),
    ({"instance": {"jobs": 0}}, "instance.jobs: must be >= 1"),
    ({"grid": {"workload.nosuch": [1]}}, "grid.workload.nosuch: unknown parameter 'nosuch'"),
    ({"grid": {"machines": []}}, "grid.machines: list at least one value"),
    ({"grid": {"machines": [4, "x"]}}, "grid.machines[1]: must be an integer"),
    ({"grid": {"machines": [4, 0]}}, "grid.machines[1]: must be >= 1"),
    ({"grid": {"workload.mix": [[0.5, 0.5, 0.5]]}}, "grid.workload.mix[0]: three non-negative shares"),
    ({"grid": {"pdors.rounding.gain": [-1]}}, "grid.pdors.rounding.gain[0]: must be > 0"),
    ({"grid": {"seed": [1, 2]}}, "grid.seed: seeds are set by the top-level 'seeds'"),
    ({"grid": {"oasis.x": [1]}}, "grid.oasis.x: unknown axis"),
    ({"opt": {"time_limit": -5}}, "opt.time_limit: must be > 0"),
    ({"opt": {"mip_gap": 2}}, "opt.mip_gap: must lie in [0, 1)"),
    ({"mlflow": {"experiment": " "}}, "mlflow.experiment: must not be empty"),
    ({"name": "a/b"}, "name: letters, digits"),
    ({"policies": {"pdors": {"rounding": {"feasible_solutions": 10, "max_attempts": 20}}},
      "grid": {"pdors.rounding.max_attempts": [5]}}, "grid.pdors.rounding.max_attempts[0]: must be >= feasible"),
]


@pytest.mark.parametrize("change, expected", BAD, ids=[e.split(":")[0] for _, e in BAD])
def test_bad_config_is_one_line_naming_the_field_and_writes_nothing(tmp_path, capsys, monkeypatch, change,
                                                                    expected):
    monkeypatch.setattr("pipeline.executor.fan_out", no_ray)
    cfg = write_config(tmp_path / "bad.yaml", {**TINY, **change})
    out = tmp_path / "out"
    assert main(["sweep", "run", str(cfg), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"pdors sweep: error: {expected}") and "\n" not in err, err
    assert not out.exists()


def test_unreadable_config_files(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("pipeline.executor.fan_out", no_ray)
    (tmp_path / "broken.yaml").write_text("grid: [\n")
    for path in (tmp_path / "missing.yaml", tmp_path / "broken.yaml"):
        assert main(["sweep", "run", str(path), "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("pdors sweep: error: CONFIG: ") and "\n" not in err
    assert not (tmp_path / "out").exists()


def test_num_cpus_is_for_a_local_ray_only(tmp_path, capsys, monkeypatch):
    seen = []
    monkeypatch.setattr("pipeline.executor.fan_out", lambda *a, **k: seen.append(a) or iter(()))
    cfg = write_config(tmp_path / "ok.yaml", TINY)
    assert main(["sweep", "run", str(cfg), "--out", str(tmp_path / "out"), "--ray-address", "127.0.0.1:1",
                 "--num-cpus", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pdors sweep: error: --num-cpus: applies to a local Ray only") and not seen
    assert not (tmp_path / "out").exists()


# --- expansion and ids -------------------------------------------------------------------------------------------
def test_expansion_counts_and_policy_axes():
    plan = grid.expand(schema.parse(dict(TINY)))
    sims = [t for t in plan.tasks if t.kind == "sim"]
    # machines (2) x [pdors x gain (2) + fifo] x seeds (2)
    assert len(sims) == 2 * 3 * 2 and len({t.run_id for t in sims}) == 12
    assert len({t.point_id for t in sims}) == 6 and len({t.instance_id for t in sims}) == 4
    fifo = [t for t in sims if t.policy == "fifo"]
    assert all("pdors.rounding.gain" not in t.axes and "rounding" not in t.spec["params"] for t in fifo)
    gains = sorted({t.spec["params"]["rounding"]["gain"] for t in sims if t.policy == "pdors"})
    assert gains == [0.5, 1.0]
    # specs are fully resolved: defaults filled in, so ``run(spec)`` needs nothing else
    assert sims[0].spec["params"]["workload_levels"] == 100 and "mix" in sims[0].spec["workload"]
    assert plan.sweep_id.startswith("tiny-") and plan.axes == ["machines", "pdors.rounding.gain"]


def test_ids_are_stable_and_follow_the_resolved_spec():
    a = grid.expand(schema.parse(dict(TINY)))
    shuffled = {k: TINY[k] for k in reversed(list(TINY))}
    b = grid.expand(schema.parse(shuffled))
    assert a.sweep_id == b.sweep_id and {t.run_id for t in a.tasks} == {t.run_id for t in b.tasks}
    # an explicit default is the same run; a changed value is another
    explicit = grid.expand(schema.parse({**TINY, "instance": {"jobs": 4, "slots": 4, "workload": {
        "bandwidth_ratio": 40.0}}}))
    assert {t.run_id for t in explicit.tasks} == {t.run_id for t in a.tasks}
    other = grid.expand(schema.parse({**TINY, "seeds": {"start": 2, "count": 2}}))
    assert len({t.run_id for t in other.tasks} & {t.run_id for t in a.tasks}) == len(a.tasks) // 2
    assert other.sweep_id != a.sweep_id


def test_opt_block_adds_one_opt_task_per_instance():
    plan = grid.expand(schema.parse({**TINY, "opt": {"solver": "highs", "time_limit": 5}}))
    opts = [t for t in plan.tasks if t.kind == "opt"]
    assert len(opts) == 4 and {t.instance_id for t in opts} == {t.instance_id for t in plan.tasks}


def test_opt_task_through_the_adapter():
    plan = grid.expand(schema.parse({**TINY, "instance": {"jobs": 3, "slots": 3}, "grid": {}, "seeds": [1],
                                     "policies": {"pdors": {}}, "opt": {"time_limit": 30}}))
    task = next(t for t in plan.tasks if t.kind == "opt")
    outcome = execute(task)
    assert outcome.status == "ok", outcome.error
    row = storage.run_row(task, outcome, "x")
    assert row["policy"] == "opt" and json.loads(json.dumps(row["opt.result"])) == outcome.result
