"""The sweep record without Ray: run rows, the Parquet files and their schema, the aggregate over seeds, MLflow
tracking and the plot."""
from __future__ import annotations

import dataclasses
import json
import sqlite3

import pandas as pd
import pyarrow.dataset as ds
import pytest

from pipeline import columns, grid, schema, storage, summary
from pipeline.executor import execute
from pipeline.storage import Store
from sweep_fixtures import TINY


# --- rows and Parquet ---------------------------------------------------------------------------------------------
def test_summary_keys_are_all_columns():
    """Guard: a metric added to pdors.run.summarise must get a typed column here."""
    task = grid.expand(schema.parse(dict(TINY))).tasks[0]
    result = execute(task).result
    metrics = storage.flatten({k: v for k, v in result.items()
                               if k not in columns.SUMMARY_IDENTITY + columns.JSON_SOURCES})
    assert set(metrics) | {"violations"} == {name for name, _ in columns.METRICS}   # violations: a count
    assert set(result["jobs"][0]) | {"run_id", "policy", "seed", "point_id", "instance_id"} == \
        set(columns.JOBS_SCHEMA.names)


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
