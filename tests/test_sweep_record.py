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
    plan = grid.expand(schema.parse(dict(TINY)))
    store = Store(tmp_path, plan.sweep_id)
    ok_task = plan.tasks[0]
    broken = dataclasses.replace(plan.tasks[1], spec={**plan.tasks[1].spec, "machines": 0})
    with store.lock():
        (store.part("runs")).mkdir(parents=True)
        (store.part("runs") / ".tmp-1-stale.parquet").write_bytes(b"partial")
    with store.lock():   # a new writer removes a dead writer's temp files
        assert not list(store.part("runs").glob(".tmp-*"))
        for task in (ok_task, broken, ok_task):   # writing a run again replaces it
            store.write(task, execute(task), "abc123")
    assert store.recorded() == {ok_task.run_id: "ok", broken.run_id: "failed"}
    runs = storage.read(tmp_path).to_pandas().set_index("run_id")
    failed = runs.loc[broken.run_id]
    assert failed["error"].startswith("ConfigError: machines: must be >= 1") and pd.isna(failed["total_utility"])
    good = runs.loc[ok_task.run_id]
    assert good["git_commit"] == "abc123" and good["pdors.rounding.gain"] == ok_task.spec["params"]["rounding"][
        "gain"] and json.loads(good["spec"]) == ok_task.spec
    assert all(ds.dataset(f).schema == storage.RUNS_SCHEMA for f in store.part("runs").glob("*.parquet"))


def test_documented_reads_of_a_live_folder(tmp_path):
    """The pandas and DuckDB reads of docs/PIPELINE.md on a folder holding two sweeps of different policies and
    a writer's temp file: every column, each run once, the temp file skipped."""
    duckdb = pytest.importorskip("duckdb")
    root = tmp_path / "out"
    one = grid.expand(schema.parse({**TINY, "grid": {"machines": [4]}, "seeds": [1]}))
    two = grid.expand(schema.parse({**TINY, "policies": {"drf": {}}, "grid": {"machines": [4]}, "seeds": [1, 2]}))
    for plan in (one, two):
        for task in plan.tasks:
            Store(root, plan.sweep_id).write(task, execute(task), "abc123")
    (root / "runs" / ".tmp-99-x.parquet").write_bytes(b"partial")   # a write in progress
    (root / "jobs" / ".tmp-99-x.parquet").write_bytes(b"partial")
    n_runs = len(one.tasks) + len(two.tasks)
    runs = pd.read_parquet(root / "runs")
    assert list(runs.columns) == storage.RUNS_SCHEMA.names and runs["run_id"].is_unique and len(runs) == n_runs
    assert set(runs["policy"]) == {"pdors", "fifo", "drf"} and runs["pdors.rounding.gain"].notna().sum() == 1
    got = duckdb.sql(f"select count(*), count(distinct run_id), count(\"pdors.rounding.gain\") from read_parquet("
                     f"'{root}/runs/[!.]*.parquet')").fetchall()[0]
    assert got == (n_runs, n_runs, 1)
    jobs = duckdb.sql(f"select count(*) from read_parquet('{root}/jobs/[!.]*.parquet')").fetchall()[0][0]
    assert jobs == sum(t.spec["jobs"] for p in (one, two) for t in p.tasks)
    assert len(pd.read_parquet(root / "jobs")) == jobs


def test_status_finds_damaged_records_and_run_repairs_them(tmp_path, capsys, monkeypatch):
    from pdors_cli.main import main
    from sweep_fixtures import write_config

    cfg = write_config(tmp_path / "tiny.yaml", {**TINY, "grid": {"machines": [4]}, "seeds": [1, 2],
                                                "mlflow": {"enabled": False}})
    out = tmp_path / "out"
    assert main(["sweep", "run", str(cfg), "--out", str(out), "--in-process"]) == 0
    assert main(["sweep", "status", str(cfg), "--out", str(out)]) == 0
    assert "records intact" in capsys.readouterr().out
    runs = sorted((out / "runs").glob("*.parquet"))
    jobs = out / "jobs" / runs[0].name
    jobs.write_bytes(jobs.read_bytes()[:100])          # a truncated jobs file
    runs[2].write_bytes(runs[1].read_bytes())          # a runs file copied over another's name
    assert main(["sweep", "status", "--out", str(out)]) == 1   # no target: the latest sweep
    text = capsys.readouterr().out
    assert f"run {runs[0].stem}: jobs file unreadable" in text and f"run {runs[2].stem}: runs file holds run " \
        f"{runs[1].stem}" in text and "2 damaged" in text and "repair: `pdors sweep run" in text
    assert main(["sweep", "run", str(cfg), "--out", str(out), "--resume", "--in-process"]) == 0
    assert "2 already recorded, 2 to run (2 damaged records redone)" in capsys.readouterr().out
    assert main(["sweep", "status", str(cfg), "--out", str(out)]) == 0


def test_aggregate_tracking_and_plot(tmp_path, monkeypatch):
    from pipeline import plots, tracking

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    monkeypatch.chdir(tmp_path)   # the SQLite store's artifacts go to ./mlruns
    plan = grid.expand(schema.parse({**TINY, "grid": {**TINY["grid"], "workload.mix": [[0.1, 0.55, 0.35]]}}))
    store = Store(tmp_path / "out", plan.sweep_id)
    for task in plan.tasks:
        store.write(task, execute(task), "abc123")
    runs = storage.read(store.root).to_pandas()
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
