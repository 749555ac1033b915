"""Sweep pipeline without Ray: config validation, grid expansion and ids, Parquet rows, MLflow, plots."""
from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pandas as pd
import pyarrow.dataset as ds
import pytest
import yaml

from pdors.cli import main
from pipeline import grid, schema, storage, summary
from pipeline.executor import execute
from pipeline.storage import Store

TINY = {"name": "tiny", "instance": {"jobs": 4, "slots": 4},
        "policies": {"pdors": {"rounding": {"gain": 1.0}}, "fifo": {}},
        "grid": {"machines": [4, 5], "pdors.rounding.gain": [0.5, 1.0]}, "seeds": [1, 2]}


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


def test_opt_block_is_rejected_until_offline_opt_solve_exists():
    from pipeline import opt

    data = {**TINY, "opt": {"solver": "highs", "time_limit": 5}}
    if opt.unavailable():
        with pytest.raises(ValueError, match=r"^opt: cannot compute the offline optimum"):
            schema.parse(data)
    else:
        plan = grid.expand(schema.parse(data))
        opts = [t for t in plan.tasks if t.kind == "opt"]
        assert len(opts) == 4 and {t.instance_id for t in opts} == {t.instance_id for t in plan.tasks}


def test_opt_task_through_the_adapter():
    offline_opt = pytest.importorskip("offline_opt")
    if not callable(getattr(offline_opt, "solve", None)):
        pytest.skip("offline_opt.solve not implemented yet")
    plan = grid.expand(schema.parse({**TINY, "instance": {"jobs": 3, "slots": 3}, "grid": {}, "seeds": [1],
                                     "policies": {"pdors": {}}, "opt": {"time_limit": 30}}))
    task = next(t for t in plan.tasks if t.kind == "opt")
    outcome = execute(task)
    assert outcome.status == "ok", outcome.error
    row = storage.run_row(task, outcome, "x")
    assert row["policy"] == "opt" and json.loads(json.dumps(row["opt.result"])) == outcome.result


# --- rows and Parquet ---------------------------------------------------------------------------------------------
def test_summary_keys_are_all_columns():
    """Guard: a metric added to pdors.run.summarise must get a typed column here."""
    task = grid.expand(schema.parse(dict(TINY))).tasks[0]
    result = execute(task).result
    metrics = storage.flatten({k: v for k, v in result.items()
                               if k not in storage.SUMMARY_IDENTITY + storage.JSON_SOURCES})
    assert set(metrics) | {"violations"} == {name for name, _ in storage.METRICS}   # violations: a count
    assert set(result["jobs"][0]) | {"run_id", "policy", "seed", "point_id", "instance_id"} == \
        set(storage.JOBS_SCHEMA.names)


def test_rows_written_atomically_and_readable(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    plan = grid.expand(schema.parse(dict(TINY)))
    store = Store(tmp_path, plan.sweep_id)
    table_schema = storage.runs_schema(plan)
    ok_task = plan.tasks[0]
    broken = dataclasses.replace(plan.tasks[1], spec={**plan.tasks[1].spec, "machines": 0})
    with store.lock():
        (store.part("runs")).mkdir(parents=True)
        (store.part("runs") / ".tmp-1-stale.parquet").write_bytes(b"partial")
    with store.lock():   # a new writer removes a dead writer's temp files
        assert not list(store.part("runs").glob(".tmp-*"))
        for task in (ok_task, broken, ok_task):   # writing a run again replaces it
            store.write(task, execute(task), table_schema, "abc123")
    assert store.recorded() == {ok_task.run_id: "ok", broken.run_id: "failed"}
    runs = store.read().to_pandas().set_index("run_id")
    failed = runs.loc[broken.run_id]
    assert failed["error"].startswith("ConfigError: machines: must be >= 1") and pd.isna(failed["total_utility"])
    good = runs.loc[ok_task.run_id]
    assert good["git_commit"] == "abc123" and good["pdors.rounding.gain"] == ok_task.spec["params"]["rounding"][
        "gain"] and json.loads(good["spec"]) == ok_task.spec
    # identical schema in every file; readable by pyarrow, pandas and DuckDB with a string sweep_id
    files = sorted(store.part("runs").glob("*.parquet"))
    assert all(ds.dataset(f).schema == table_schema for f in files)
    assert pd.read_parquet(store.part("runs")).shape[0] == 2
    assert pd.read_parquet(tmp_path / "runs", partitioning=storage.PARTITIONING)["sweep_id"].tolist() == [
        plan.sweep_id] * 2
    jobs = duckdb.sql(f"select count(*), min(sweep_id) from read_parquet('{tmp_path}/jobs/*/*.parquet', "
                      "hive_partitioning=true)").fetchall()[0]
    assert jobs == (ok_task.spec["jobs"], plan.sweep_id)
    numeric_id = Store(tmp_path, "001")   # hive values stay strings: '001' is not read back as 1
    numeric_id.write(ok_task, execute(ok_task), table_schema, "abc123")
    assert storage.read(tmp_path)["sweep_id"].to_pylist().count("001") == 1


def test_aggregate_tracking_and_plot(tmp_path, monkeypatch):
    from pipeline import plots, tracking

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    monkeypatch.chdir(tmp_path)   # the SQLite store's artifacts go to ./mlruns
    plan = grid.expand(schema.parse({**TINY, "grid": {**TINY["grid"], "workload.mix": [[0.1, 0.55, 0.35]]}}))
    store = Store(tmp_path / "out", plan.sweep_id)
    table_schema = storage.runs_schema(plan)
    for task in plan.tasks:
        store.write(task, execute(task), table_schema, "abc123")
    runs = store.read().to_pandas()
    agg = summary.aggregate(runs, plan.axes)
    assert len(agg) == 6 and set(agg["n"]) == {2} and "total_utility.std" in agg
    assert "| policy | machines | pdors.rounding.gain | workload.mix |" in summary.markdown(agg, plan.axes)
    for axes in (plan.axes, ["workload.mix"], []):
        png = plots.utility_vs_axis(runs, axes, tmp_path / f"plot{len(axes)}.png")
        assert png.read_bytes()[:4] == b"\x89PNG"
    manifest = {"sweep_id": plan.sweep_id, "name": "tiny", "experiment": "unit", "tasks": len(plan.tasks),
                "config_path": "x.yaml", "axes": plan.axes, "seeds": [1, 2], "output": "out",
                "config": {"policies": TINY["policies"], "opt": None}, "packages": {"pdors": "0"},
                "git_commit": "abc123"}
    first = tracking.log_sweep(manifest, runs, agg, [png], store.root)
    db = sqlite3.connect(tmp_path / "mlflow.db")
    points = db.execute("select count(*) from metrics").fetchone()[0]
    again = tracking.log_sweep(manifest, runs, agg, [png], store.root)   # re-logging updates, never duplicates
    assert first == again and db.execute("select count(*) from metrics").fetchone()[0] == points
    n_runs = db.execute("select count(*) from runs").fetchone()[0]
    n_children = db.execute("select count(*) from tags where key = 'mlflow.parentRunId' and value = ?",
                            (first,)).fetchone()[0]
    assert (n_runs, n_children) == (7, 6)
    other = tracking.log_sweep(manifest, runs, agg, [], tmp_path / "elsewhere")   # another output: own parent
    assert other != first and db.execute("select count(*) from runs").fetchone()[0] == 14
    kind = db.execute("select value from experiment_tags where key = 'mlflow.experimentKind'").fetchall()
    assert kind == [("custom_model_development",)]
    from mlflow.tracking import MlflowClient
    client = MlflowClient()
    child = client.search_runs([client.get_experiment_by_name("unit").experiment_id],
                               f"tags.`mlflow.parentRunId` = '{first}' and params.policy = 'pdors'")[0]
    assert {"machines", "jobs", "slots", "workload.mix", "workload.bandwidth_ratio",
            "pdors.rounding.gain"} <= set(child.data.params)
    assert child.data.params["jobs"] == str(TINY["instance"]["jobs"])
    history = client.get_metric_history(child.info.run_id, "total_utility")
    assert sorted(m.step for m in history) == [1, 2]   # one value per seed, step = seed
    assert {a.path for a in client.list_artifacts(child.info.run_id)} == {"seeds.csv"}
