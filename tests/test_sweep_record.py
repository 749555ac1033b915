"""The sweep record without Ray: run rows, the Parquet batch files and their schema, compaction (and a crash in
its middle), status's reads, the aggregate over seeds, MLflow tracking and the plot."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pandas as pd
import pyarrow.dataset as ds
import pytest
from sweep_fixtures import TINY, unwrapped

from pdors.config import build
from pdors.errors import ConfigError
from pdors.run import RunSpec, reseeded
from pipeline.execute.executor import execute, execute_chunk
from pipeline.record import storage
from pipeline.record.manifest import Manifest
from pipeline.record.storage import Store
from pipeline.results import summary
from pipeline.spec import columns, grid, schema


# --- rows and Parquet ---------------------------------------------------------------------------------------------
def test_summary_keys_are_all_columns():
    """Guard: a metric added to pdors.run.summarise must get a typed column here."""
    task = grid.expand(schema.parse(dict(TINY))).tasks[0]
    result = execute(task).result
    metrics = storage.flatten(
        {k: v for k, v in result.items() if k not in columns.SUMMARY_IDENTITY + columns.JSON_SOURCES}
    )
    assert set(metrics) | {"violations"} == {name for name, _ in columns.METRICS}  # violations: a count
    assert set(result["jobs"][0]) | {"run_id", "policy", "seed", "point_id", "instance_id"} == set(
        columns.JOBS_SCHEMA.names
    )


def _untimed(result: dict) -> dict:
    return {k: v for k, v in result.items() if k not in ("wall_s", "decision_latency_ms", "decision_cpu_ms")}


def test_a_chunk_builds_each_point_once_and_each_run_as_if_alone():
    """A chunk builds a grid point's spec once and re-seeds it for the point's other runs: every outcome is the one
    its task gives alone, also for a task whose spec differs from its point's in more than the seed (planted)."""
    tasks = grid.expand(schema.parse(dict(TINY))).tasks
    other = next(t for t in tasks if t.point_id == tasks[0].point_id and t.seed != tasks[0].seed)
    liar = dataclasses.replace(other, spec={**other.spec, "machines": 7})  # tasks[0]'s point, another spec
    chunk = [tasks[0], liar, *tasks[1:]]
    together = execute_chunk(chunk)
    alone = [execute(task) for task in chunk]
    assert [o.status for o in together] == ["ok"] * len(chunk)
    assert [_untimed(o.result) for o in together] == [_untimed(o.result) for o in alone]
    assert together[1].result["machines"] == 7 and together[2].result["machines"] == tasks[1].spec["machines"]


def test_the_plan_puts_a_seeds_runs_together_and_a_chunk_draws_their_jobs_once(monkeypatch):
    """Seed by seed, each seed's runs of every point together; a chunk draws a seed's jobs once for all its cluster
    sizes and policies (the outcomes above are those of each run alone)."""
    import pdors.workload

    tasks = grid.expand(schema.parse(dict(TINY))).tasks
    per_seed = len(tasks) // 2
    assert [t.seed for t in tasks] == [1] * per_seed + [2] * per_seed
    assert len({t.spec["machines"] for t in tasks[:per_seed]}) == 2 and len({t.policy for t in tasks[:per_seed]}) == 2
    draws = []
    real = pdors.workload.draw
    monkeypatch.setattr(pdors.workload, "draw", lambda *a: draws.append(a[3]) or real(*a))
    assert [o.status for o in execute_chunk(tasks)] == ["ok"] * len(tasks)
    assert draws == [1, 2]
    with pytest.raises(ConfigError, match="seed: must be >= 0"):
        reseeded(build(RunSpec, dict(tasks[0].spec)), -1)


def test_rows_share_their_points_columns_only_when_the_spec_differs_in_the_seed_alone():
    tasks = grid.expand(schema.parse(dict(TINY))).tasks
    liar = dataclasses.replace(tasks[1], spec={**tasks[1].spec, "machines": 7})
    done = [(t, execute(t)) for t in (tasks[0], liar, *tasks[1:])]
    points: dict = {}
    shared = [storage.run_row(t, o, "abc", points) for t, o in done]
    assert shared == [storage.run_row(t, o, "abc") for t, o in done]
    assert [r["spec"] for r in shared] == [json.dumps(t.spec, sort_keys=True) for t, _ in done]
    assert shared[1]["machines"] == 7 and len(points) < len(done)


def test_rows_written_atomically_and_readable(tmp_path):
    plan = grid.expand(schema.parse(dict(TINY)))
    store = Store(tmp_path, plan.sweep_id)
    ok_task = plan.tasks[0]
    broken = dataclasses.replace(plan.tasks[1], spec={**plan.tasks[1].spec, "machines": 0})
    with store.lock():
        (store.part("runs")).mkdir(parents=True)
        (store.part("runs") / ".tmp-1-stale.parquet").write_bytes(b"partial")
    with store.lock():  # a new writer removes a dead writer's temp files
        assert not list(store.part("runs").glob(".tmp-*"))
        for task in (ok_task, broken, ok_task):  # a run written again: the later batch's row counts
            store.write([(task, execute(task))], "abc123")
    assert store.recorded() == {ok_task.run_id: "ok", broken.run_id: "failed"}
    runs = storage.read(tmp_path).to_pandas()
    assert len(runs) == 2 and set(runs["git_commit"]) == {"abc123"}
    late = runs.set_index("run_id").loc[ok_task.run_id, "finished_at"]
    with store.lock():
        assert store.compact() == 3 and store.compact() == 0  # one file per table; then nothing to do
    assert [len(list(store.part(t).glob("*.parquet"))) for t in ("runs", "jobs")] == [1, 1]
    runs = storage.read(tmp_path).to_pandas().set_index("run_id")
    assert len(runs) == 2 and runs.loc[ok_task.run_id, "finished_at"] == late
    failed = runs.loc[broken.run_id]
    assert failed["error"].startswith("ConfigError: machines: must be >= 1") and pd.isna(failed["total_utility"])
    good = runs.loc[ok_task.run_id]
    assert (
        good["git_commit"] == "abc123"
        and good["pdors.rounding.gain"] == ok_task.spec["params"]["rounding"]["gain"]
        and json.loads(good["spec"]) == ok_task.spec
    )
    assert all(ds.dataset(f).schema == storage.runs_schema() for f in store.part("runs").glob("*.parquet"))


def test_documented_reads_of_a_live_folder(tmp_path):
    """The pandas, DuckDB and Polars reads of docs/PIPELINE.md on a folder holding two sweeps of different
    policies and a writer's temp file: every column, each run once, the temp file skipped."""
    import glob

    import duckdb
    import polars as pl

    root = tmp_path / "out"
    one = grid.expand(schema.parse({**TINY, "grid": {"machines": [4]}, "seeds": [1]}))
    two = grid.expand(schema.parse({**TINY, "policies": {"drf": {}}, "grid": {"machines": [4]}, "seeds": [1, 2]}))
    for plan in (one, two):
        Store(root, plan.sweep_id).write([(task, execute(task)) for task in plan.tasks], "abc123")
    (root / "runs" / ".tmp-99-x.parquet").write_bytes(b"partial")  # a write in progress
    (root / "jobs" / ".tmp-99-x.parquet").write_bytes(b"partial")
    n_runs = len(one.tasks) + len(two.tasks)
    runs = pd.read_parquet(root / "runs")
    assert list(runs.columns) == storage.runs_schema().names and runs["run_id"].is_unique and len(runs) == n_runs
    assert set(runs["policy"]) == {"pdors", "fifo", "drf"} and runs["pdors.rounding.gain"].notna().sum() == 1
    got = duckdb.sql(
        f'select count(*), count(distinct run_id), count("pdors.rounding.gain") from read_parquet('
        f"'{root}/runs/[!.]*.parquet')"
    ).fetchall()[0]
    assert got == (n_runs, n_runs, 1)
    jobs = duckdb.sql(f"select count(*) from read_parquet('{root}/jobs/[!.]*.parquet')").fetchall()[0][0]
    assert jobs == sum(t.spec["jobs"] for p in (one, two) for t in p.tasks)
    assert len(pd.read_parquet(root / "jobs")) == jobs
    polars_runs = pl.read_parquet(glob.glob(f"{root}/runs/*.parquet"))  # docs/PIPELINE.md
    assert polars_runs.columns == storage.runs_schema().names and polars_runs["run_id"].n_unique() == n_runs
    assert len(polars_runs) == n_runs and polars_runs["pdors.rounding.gain"].drop_nulls().len() == 1
    Store(root, one.sweep_id).write([(one.tasks[0], execute(one.tasks[0]))], "later")  # a run held twice
    query = (
        f"select run_id, git_commit from read_parquet('{root}/runs/[!.]*.parquet', filename = true) "
        "qualify row_number() over (partition by run_id order by filename desc) = 1"
    )  # docs/PIPELINE.md
    latest = dict(duckdb.sql(query).fetchall())
    assert len(latest) == n_runs and latest[one.tasks[0].run_id] == "later"


def test_status_finds_damaged_batches_and_run_repairs_them(tmp_path, capsys):
    from sweep_fixtures import write_config

    from pdors_cli.main import main

    cfg = write_config(
        tmp_path / "tiny.yaml", {**TINY, "grid": {"machines": [4]}, "seeds": [1, 2], "mlflow": {"enabled": False}}
    )
    out = tmp_path / "out"
    assert main(["sweep", "run", str(cfg), "--out", str(out), "--in-process"]) == 0
    assert main(["sweep", "status", str(cfg), "--out", str(out)]) == 0
    assert "4 ok, 0 failed, 0 invalid, 0 lost, 0 not run; records intact" in unwrapped(capsys.readouterr().out)
    [runs] = (out / "runs").glob("*.parquet")
    jobs = out / "jobs" / runs.name
    jobs.write_bytes(jobs.read_bytes()[:100])  # a truncated jobs file
    (out / "runs" / "p99999999999999999999.parquet").write_bytes(b"not parquet")
    assert main(["sweep", "status", "--out", str(out)]) == 1  # no target: the latest sweep
    text = unwrapped(capsys.readouterr().out)
    assert (
        "0 ok, 0 failed, 0 invalid, 0 lost, 4 not run; 2 damaged batches" in text
        and f"damaged: {runs} (4 runs, 4 of this sweep's): jobs file content does not match its SHA-256" in text
        and f"damaged: {out / 'runs'}/p99999999999999999999.parquet (its runs unknown): runs file unreadable" in text
        and "repair: `pdors sweep run" in text
    )
    assert main(["sweep", "run", str(cfg), "--out", str(out), "--resume", "--in-process"]) == 0
    assert "0 already recorded, 4 to run (2 damaged batches set aside)" in unwrapped(capsys.readouterr().out)
    assert main(["sweep", "status", str(cfg), "--out", str(out)]) == 0
    assert sorted(p.name for p in (out / "runs").glob(".damaged-*.parquet")) == [
        f".damaged-{runs.name}",
        ".damaged-p99999999999999999999.parquet",
    ]


def test_status_reads_five_run_columns_and_no_job_row(tmp_path, capsys, monkeypatch):
    """Status and the resume lookup read the runs files' run_id, status, kind, jobs and node_ip columns and the
    jobs files' footers only."""
    import pyarrow.dataset
    import pyarrow.parquet as pq
    from sweep_fixtures import write_config

    from pdors_cli.main import main

    cfg = write_config(
        tmp_path / "tiny.yaml", {**TINY, "grid": {"machines": [4]}, "seeds": [1, 2], "mlflow": {"enabled": False}}
    )
    out = tmp_path / "out"
    assert main(["sweep", "run", str(cfg), "--out", str(out), "--in-process"]) == 0
    reads = []
    real_open, real_read, real_table, real_dataset = (
        pq.ParquetFile.__init__,
        pq.ParquetFile.read,
        pq.read_table,
        pyarrow.dataset.dataset,
    )

    def opened(self, source, *a, **kw):
        self.spied_path = str(source)
        real_open(self, source, *a, **kw)

    def read(self, columns=None, **kw):
        reads.append((self.spied_path, columns))
        return real_read(self, columns=columns, **kw)

    monkeypatch.setattr(pq.ParquetFile, "__init__", opened)
    monkeypatch.setattr(pq.ParquetFile, "read", read)
    monkeypatch.setattr(
        pq,
        "read_table",
        lambda path, columns=None, **kw: (reads.append((str(path), columns)), real_table(path, columns=columns, **kw))[
            1
        ],
    )
    monkeypatch.setattr(
        pyarrow.dataset,
        "dataset",
        lambda source, *a, **kw: (reads.append((str(source), "dataset")), real_dataset(source, *a, **kw))[1],
    )
    capsys.readouterr()
    assert main(["sweep", "status", "--out", str(out)]) == 0 and "4 ok" in unwrapped(capsys.readouterr().out)
    assert main(["sweep", "run", str(cfg), "--out", str(out), "--resume", "--in-process", "--dry-run"]) == 0
    assert reads and {(Path(path).parent.name, tuple(columns)) for path, columns in reads} == {
        ("runs", ("run_id", "status", "kind", "jobs", "node_ip"))
    }


def test_a_crash_anywhere_in_compaction_neither_loses_nor_duplicates_a_run(tmp_path, monkeypatch):
    """Three batches (one run recorded failed, then again ok): compaction killed before each of its file
    operations (a rename into place, a removal) leaves a record that reads every run once, with its latest row
    and its jobs; the next compaction completes it."""
    import shutil

    plan = grid.expand(schema.parse({**TINY, "grid": {"machines": [4]}, "seeds": [1]}))
    first, second = plan.tasks
    failed = dataclasses.replace(first, spec={**first.spec, "machines": 0})
    source = Store(tmp_path / "source", plan.sweep_id)
    for done in ([(failed, execute(failed))], [(second, execute(second))], [(first, execute(first))]):
        source.write([(task, outcome) for task, outcome in done], "abc123")
    expected = storage.read(source.root).to_pandas().sort_values("run_id").reset_index(drop=True)
    assert list(expected["status"]) == ["ok", "ok"] and len(storage.read(source.root, "jobs")) == 8

    class Killed(Exception):
        pass

    real_replace, real_remove = storage.os.replace, storage._remove
    ops = []
    for crash_at in range(7):  # 2 files written into place, 3 runs and 2 jobs batches removed
        root = tmp_path / f"crash{crash_at}"
        shutil.copytree(source.root, root)

        def op(real, crash_at=crash_at):
            def step(*args):
                ops.append(args)
                if len(ops) > crash_at:
                    raise Killed()
                return real(*args)

            return step

        ops.clear()
        monkeypatch.setattr(storage.os, "replace", op(real_replace))
        monkeypatch.setattr(storage, "_remove", op(real_remove))
        store = Store(root, plan.sweep_id)
        with pytest.raises(Killed), store.lock():
            store.compact()
        monkeypatch.undo()
        got = storage.read(root).to_pandas().sort_values("run_id").reset_index(drop=True)
        pd.testing.assert_frame_equal(got, expected)
        assert store.recorded() == {first.run_id: "ok", second.run_id: "ok"} and not store.index().damaged
        assert len(storage.read(root, "jobs")) == 8
        with store.lock():
            store.compact()
        assert [len(list(store.part(t).glob("*.parquet"))) for t in ("runs", "jobs")] == [1, 1]
        pd.testing.assert_frame_equal(
            storage.read(root).to_pandas().sort_values("run_id").reset_index(drop=True), expected
        )
    assert len(ops) == 7  # the last crash point was the last operation


def test_paired_ratio_per_seed_is_against_the_first_reading_and_skips_a_zero_reference():
    from pipeline.publish.tracking import paired_ratios

    found = pd.DataFrame(
        {
            "point_id": ["a", "a", "a", "a", "b"],
            "seed": [1, 2, 1, 2, 1],
            "value": [3.0, 4.0, 5.0, 6.0, 7.0],
            "reference": [2.0, 0.0, 1.0, 1.0, 4.0],
            "versus": ["g=0.5", "g=0.5", "g=1", "g=1", "g=0.5"],
        }
    )
    assert paired_ratios(found).to_dict() == {("a", 1): 1.5, ("b", 1): 1.75}


def test_aggregate_tracking_and_plot(tmp_path, monkeypatch, mlflow_store):
    from pipeline.publish import plots, tracking

    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_store)
    monkeypatch.chdir(tmp_path)  # the SQLite store's artifacts go to ./mlruns
    plan = grid.expand(schema.parse({**TINY, "grid": {**TINY["grid"], "workload.mix": [[0.1, 0.55, 0.35]]}}))
    store = Store(tmp_path / "out", plan.sweep_id)
    store.write([(task, execute(task)) for task in plan.tasks], "abc123")
    runs = storage.read(store.root).to_pandas()
    agg = summary.aggregate(runs, plan.axes)
    assert len(agg) == 6 and set(agg["n"]) == {2} and "total_utility.std" in agg
    assert "| policy | machines | pdors.rounding.gain | workload.mix |" in summary.markdown(agg, plan.axes)
    for axes in (plan.axes, ["workload.mix"], []):
        png = plots.utility_vs_axis(runs, axes, tmp_path / f"plot{len(axes)}.png")
        assert png.read_bytes()[:4] == b"\x89PNG"
    manifest = Manifest(
        sweep_id=plan.sweep_id,
        name="tiny",
        experiment="unit",
        tasks=len(plan.tasks),
        run_ids=[t.run_id for t in plan.tasks],
        config_path="x.yaml",
        overrides=[],
        axes=plan.axes,
        seeds=[1, 2],
        output="out",
        mlflow=True,
        config={"policies": TINY["policies"], "opt": None},
        packages={"pdors": "0"},
        git_commit="abc123",
    )
    first = tracking.log_sweep(manifest, runs, agg, [png], store.root).parent
    db = sqlite3.connect(tmp_path / "mlflow.db")
    points = db.execute("select count(*) from metrics").fetchone()[0]
    again = tracking.log_sweep(manifest, runs, agg, [png], store.root).parent  # re-logging never duplicates
    assert first == again and db.execute("select count(*) from metrics").fetchone()[0] == points
    n_runs = db.execute("select count(*) from runs").fetchone()[0]
    n_children = db.execute(
        "select count(*) from tags where key = 'mlflow.parentRunId' and value = ?", (first,)
    ).fetchone()[0]
    assert (n_runs, n_children) == (7, 6)
    other = tracking.log_sweep(manifest, runs, agg, [], tmp_path / "elsewhere").parent  # another output
    assert other != first and db.execute("select count(*) from runs").fetchone()[0] == 14
    kind = db.execute("select value from experiment_tags where key = 'mlflow.experimentKind'").fetchall()
    assert kind == [("custom_model_development",)]
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    child = client.search_runs(
        [client.get_experiment_by_name("unit").experiment_id],
        f"tags.`mlflow.parentRunId` = '{first}' and params.policy = 'pdors'",
    )[0]
    assert {"machines", "jobs", "slots", "workload.mix", "workload.bandwidth_ratio", "pdors.rounding.gain"} <= set(
        child.data.params
    )
    assert child.data.params["jobs"] == str(TINY["instance"]["jobs"])
    history = client.get_metric_history(child.info.run_id, "total_utility.seed")
    assert sorted(m.step for m in history) == [1, 2]  # one value per seed, step = seed
    assert child.data.params["seeds"] == "1,2"
    # per-seed steps for the headline metrics only (every per-seed value stays in seeds.csv and Parquet)
    assert {k for k in child.data.metrics if k.endswith(".seed")} <= {"total_utility.seed", "paired.ratio.seed"}
    mean = sum(m.value for m in history) / 2
    # the bare name is the mean over seeds, rounded for display (the per-seed history keeps every digit)
    assert child.data.metrics["total_utility"] == pytest.approx(tracking.shown(mean))
    # a child logged with the old layout (per-seed steps under the bare name) is replaced, not appended to
    client.set_tag(child.info.run_id, "pdors.layout", "1")
    client.log_metric(child.info.run_id, "total_utility", 1.0, step=9)
    tracking.log_sweep(manifest, runs, agg, [], store.root)
    point = child.data.tags["pdors.point_id"]
    now = client.search_runs(
        [child.info.experiment_id], f"tags.`pdors.point_id` = '{point}' and tags.`mlflow.parentRunId` = '{first}'"
    )
    assert len(now) == 1 and now[0].info.run_id != child.info.run_id
    assert now[0].data.metrics["total_utility"] == pytest.approx(tracking.shown(mean))
    assert {a.path for a in client.list_artifacts(child.info.run_id)} == {"seeds.csv"}
    # a log killed right after creating a child leaves it RUNNING and empty: the next log completes that child
    tags = {k: now[0].data.tags[k] for k in ("mlflow.parentRunId", "pdors.sweep_id", "pdors.point_id", "pdors.layout")}
    client.delete_run(now[0].info.run_id)
    bare = client.create_run(child.info.experiment_id, tags=tags).info.run_id
    tracking.log_sweep(manifest, runs, agg, [], store.root)
    relogged = client.get_run(bare)
    assert relogged.info.status == "FINISHED" and "pdors.content" in relogged.data.tags
    assert relogged.data.metrics["total_utility"] == pytest.approx(tracking.shown(mean))
    # a log killed after a child's last batch, before it was marked finished: the next log marks it finished
    client.update_run(bare, status="RUNNING")
    tracking.log_sweep(manifest, runs, agg, [], store.root)
    assert client.get_run(bare).info.status == "FINISHED"


def test_a_record_of_one_file_per_run_is_read_and_compacted(tmp_path):
    """The layout before batches (runs/<run_id>.parquet, jobs/<run_id>.parquet) reads as one-run batches, a
    later batch's row of a run wins over it, and compaction turns it into one file per table."""
    import pyarrow.parquet as pq

    plan = grid.expand(schema.parse({**TINY, "grid": {"machines": [4]}, "seeds": [1, 2]}))
    store = Store(tmp_path, plan.sweep_id)
    done = [(task, execute(task)) for task in plan.tasks]
    for task, outcome in done:  # as the code before batches wrote them
        for table, rows, schema_ in (
            ("jobs", storage.job_rows(task, outcome), columns.JOBS_SCHEMA),
            ("runs", [storage.run_row(task, outcome, "old")], storage.runs_schema()),
        ):
            (tmp_path / table).mkdir(exist_ok=True)
            pq.write_table(storage.to_table(rows, schema_), tmp_path / table / f"{task.run_id}.parquet")
    store.write(done[:1], "new")
    assert store.recorded() == {t.run_id: "ok" for t in plan.tasks} and not store.index().damaged
    runs = storage.read(tmp_path).to_pandas().set_index("run_id")
    assert len(runs) == 4 and runs.loc[plan.tasks[0].run_id, "git_commit"] == "new"
    assert (runs["git_commit"] == "old").sum() == 3
    with store.lock():
        assert store.compact() == 5
    assert [len(list(store.part(t).glob("*.parquet"))) for t in ("runs", "jobs")] == [1, 1]
    pd.testing.assert_frame_equal(storage.read(tmp_path).to_pandas().set_index("run_id").loc[runs.index], runs)
    assert len(storage.read(tmp_path, "jobs")) == 4 * TINY["instance"]["jobs"]


def test_a_logging_process_that_dies_is_a_logging_failure(tmp_path):
    """MLflow is logged in a process of its own beside the report: one killed is a logging failure (the sweep
    says how to re-log), never a hang or an exception of the sweep."""
    from pipeline.publish import tracking_process

    manifest = Manifest(
        sweep_id="s",
        name="tiny",
        experiment="unit",
        tasks=0,
        run_ids=[],
        config_path="x.yaml",
        overrides=[],
        axes=[],
        seeds=[1],
        output="out",
        mlflow=True,
        config={"policies": TINY["policies"], "opt": None},
        packages={"pdors": "0"},
        git_commit="abc123",
    )
    handle = tracking_process.start()
    tracking_process.log(handle, manifest, pd.DataFrame(), pd.DataFrame(), [], tmp_path)
    handle.process.kill()
    with pytest.raises(tracking_process.LoggingFailed, match="exit status -9"):
        tracking_process.finish(handle, [], "report", tmp_path)
    tracking_process.stop(handle)
    assert not handle.process.is_alive()


def test_a_logging_process_given_no_sweep_ends_by_itself_when_its_pipe_closes(tmp_path, monkeypatch, mlflow_store):
    """Started ahead of the runs, the logging process imports MLflow and opens the store; a sweep that publishes
    nothing (stopped, or nothing to do) closes the pipe, and the process ends cleanly, having logged nothing."""
    from mlflow.tracking import MlflowClient

    from pipeline.publish import tracking_process

    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_store)
    handle = tracking_process.start()
    handle.conn.close()
    handle.process.join(120)
    assert handle.process.exitcode == 0
    assert [e.name for e in MlflowClient(mlflow_store).search_experiments()] == ["Default"]


def test_a_new_local_mlflow_store_is_a_copy_of_one_migrated_once(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    from pipeline.publish.tracking import TEMPLATE_ENV, ensure_store

    monkeypatch.setenv(TEMPLATE_ENV, str(tmp_path / "cache"))
    ensure_store(f"sqlite:///{tmp_path / 'a' / 'mlflow.db'}")
    (template,) = (tmp_path / "cache").glob("mlflow-*-empty.db")
    made = template.stat().st_mtime_ns
    ensure_store(f"sqlite:///{tmp_path / 'b.db'}")
    assert template.stat().st_mtime_ns == made  # migrated once, copied since
    assert (tmp_path / "b.db").read_bytes() == template.read_bytes()
    assert not list(tmp_path.glob(".b.db.*")), "the temporary copy was left behind"
    client = MlflowClient(f"sqlite:///{tmp_path / 'b.db'}")
    client.create_experiment("x")
    before = (tmp_path / "b.db").read_bytes()
    ensure_store(f"sqlite:///{tmp_path / 'b.db'}")  # an existing store is left alone
    assert (tmp_path / "b.db").read_bytes() == before and client.get_experiment_by_name("x") is not None
