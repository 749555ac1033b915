"""Policies from outside the package (issue 46): found by entry point or ``package.module:Class``, validated like
the built-ins, part of the run id with their source, judged and stopped like any run. The example package
(examples/pdors-greedy) is installed by `make test`'s setup; the tests marked slow run real sweeps (in this
process's venv, local Ray and a two-node Ray cluster in a loopback-only network namespace)."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from realstack import BIN, ROOT, end_session, pdors, runs_of, start, wait_nodes
from sweep_fixtures import write_config

from pdors.config import to_dict
from pdors.errors import ConfigError, InputError
from pdors.policies import external, resolve
from pdors.run import run
from pdors_cli.main import main
from pipeline.execute.executor import execute
from pipeline.spec import grid, schema

pytest.importorskip("pdors_greedy", reason="install examples/pdors-greedy (make test's setup does)")

EXAMPLE_SRC = ROOT / "examples" / "pdors-greedy" / "src" / "pdors_greedy"
SMALL = {"machines": 4, "jobs": 10, "slots": 10, "workload": {"workload_scale": 0.02}}


def plan_of(tmp_path: Path, policies: dict, seeds: list[int] | None = None) -> grid.Plan:
    data = {"name": "ext", "instance": SMALL, "policies": policies, "seeds": seeds or [1, 2]}
    return grid.expand(schema.parse(schema.raw(str(write_config(tmp_path / "ext.yaml", data)), [])))


def copy_package(tmp_path: Path, name: str) -> Path:
    """The example's source as an importable package ``name`` under ``tmp_path`` (no distribution installs it)."""
    shutil.copytree(EXAMPLE_SRC, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path / name


def test_pdors_policies_lists_builtin_and_external_with_origin_and_version(capsys):
    assert main(["policies"]) == 0
    lines = capsys.readouterr().out.splitlines()
    fifo = next(line for line in lines if line.startswith("| fifo |"))
    greedy = next(line for line in lines if line.startswith("| greedy |"))
    assert "| builtin | pdors.policies.fifo | pdors |" in fifo
    assert "| entry-point | pdors_greedy.policy:Greedy | pdors-greedy | 0.1.0 |" in greedy
    assert main(["policies", "pdors_greedy.broken:Raises", "no_such_module:X"]) == 1
    out = capsys.readouterr().out
    assert "| import | pdors_greedy.broken:Raises | pdors-greedy | 0.1.0 |" in out
    assert "| error | policy no_such_module:X: cannot import no_such_module (ModuleNotFoundError" in out


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("nope", "unknown policy 'nope' (known: pdors, fifo, drf, dorm, oasis, pollux, preemptive, greedy; or"),
        ("pdors_greedy.policy:Missing", "'Missing' is not a PlanningPolicy or SlotPolicy class"),
        ("pdors_greedy.policy:GreedyConfig", "'GreedyConfig' is not a PlanningPolicy or SlotPolicy class"),
        ("no_such_module:X", "cannot import no_such_module"),
    ],
)
def test_a_policy_that_is_not_found_is_one_line_naming_it(name, why, tmp_path):
    with pytest.raises(InputError) as e:
        resolve(name)
    assert why in str(e.value)
    with pytest.raises(ConfigError) as e:
        plan_of(tmp_path, {"fifo": {}, name: {}})
    assert e.value.path == f"policies.{name}" and why in str(e.value)


def test_an_external_policys_config_is_checked_by_the_typed_mechanism(tmp_path):
    with pytest.raises(ConfigError) as e:
        plan_of(tmp_path, {"greedy": {"max_workers": 0}})
    assert e.value.path == "policies.greedy.max_workers" and "outside [1, 10,000]" in e.value.reason
    with pytest.raises(ConfigError) as e:
        plan_of(tmp_path, {"greedy": {"max_worker": 3}})
    assert e.value.path == "policies.greedy.max_worker" and "unknown key" in e.value.reason
    with pytest.raises(ConfigError) as e:  # a grid axis over its parameter
        data = {"name": "g", "instance": SMALL, "policies": {"greedy": {}}, "grid": {"greedy.max_workers": [2, -1]}}
        grid.expand(schema.parse(schema.raw(str(write_config(tmp_path / "g.yaml", data)), [])))
    assert e.value.path == "grid.greedy.max_workers[1]"


def test_run_ids_follow_the_external_source_and_only_its_runs(tmp_path, monkeypatch):
    package = copy_package(tmp_path, "mine_ids")
    monkeypatch.syspath_prepend(str(tmp_path))
    policies = {"fifo": {}, "mine_ids.policy:Greedy": {}}
    before = {t.run_id: t for t in plan_of(tmp_path, policies).tasks}
    origin = next(t.spec["origin"] for t in before.values() if t.policy != "fifo")
    assert origin["kind"] == "import" and origin["distribution"] == "" and origin["version"] == "unversioned"
    path = package / "policy.py"
    path.write_text(path.read_text().replace("bounded(16,", "bounded(8,"))  # one line edited
    external._load.cache_clear()  # a new process finds the new source; this one is told
    after = {t.run_id: t for t in plan_of(tmp_path, policies).tasks}
    kept = before.keys() & after.keys()
    assert {before[r].policy for r in kept} == {"fifo"} and len(kept) == 2
    assert {after[r].policy for r in after.keys() - kept} == {"mine_ids.policy:Greedy"}
    assert next(t.spec["origin"]["digest"] for t in after.values() if t.policy != "fifo") != origin["digest"]


def test_a_run_refuses_other_source_than_its_sweep_planned():
    other = dataclasses.replace(resolve("greedy").origin, digest="0" * 16)  # as a node with other source would
    run({**SMALL, "policy": "greedy", "origin": to_dict(resolve("greedy").origin)})  # the same source runs
    with pytest.raises(ConfigError) as e:
        run({**SMALL, "policy": "greedy", "origin": to_dict(other)})
    assert (
        e.value.path == "origin" and "the run asks for pdors-greedy 0.1.0 (source 0000000000000000)" in e.value.reason
    )


def test_a_broken_policys_output_fails_its_run_with_the_reason():
    for name, why in [
        (
            "pdors_greedy.broken:WrongShape",
            "workers must be an integer array of shape (10, 4), got int64 array of shape",
        ),
        ("pdors_greedy.broken:Raises", "example failure in slot 1"),
    ]:
        with pytest.raises(Exception) as e:
            run({**SMALL, "policy": name})
        assert why in str(e.value)
    done = run({**SMALL, "policy": "pdors_greedy.broken:OverCapacity"})
    assert {v.kind for v in done.validation.violations} >= {"capacity"}


def test_the_time_limit_stops_a_hanging_run_as_failed(tmp_path):
    task = next(t for t in plan_of(tmp_path, {"pdors_greedy.broken:Hangs": {}}, [1]).tasks)
    outcome = execute(task, time_limit=0.5)
    assert outcome.status == "failed" and outcome.result is None
    assert outcome.error is not None and outcome.error.startswith("RunTimeLimit: stopped after 0.5 s")
    fine = next(t for t in plan_of(tmp_path, {"greedy": {}}, [1]).tasks)
    assert execute(fine, time_limit=60).status == "ok"  # the limit is off once the run is done


@pytest.mark.slow
def test_the_example_sweep_runs_with_ray_beside_pdors_fifo_and_the_bound(tmp_path, netns, env):
    rc, log = pdors(netns, env, tmp_path, "sweep", "run", ROOT / "examples" / "greedy.yaml", "--out", tmp_path / "o",
                    timeout=600)  # fmt: skip
    assert rc == 0, log
    assert "16 tasks (12 simulations, 4 OPT)" in log and "runs: 16 total, 16 ok, 0 failed" in log
    row = next(line for line in log.splitlines() if line.startswith("greedy "))  # its row in the headline table
    assert re.search(r"\[\d+\.\d\d, \d+\.\d\d\]$", row), row  # and its certified OPT/ALG interval
    runs = runs_of(tmp_path / "o")
    greedy = runs[runs["policy"] == "greedy"]
    assert len(greedy) == 4 and set(greedy["status"]) == {"ok"} and (greedy["violations"] == 0).all()
    assert set(greedy["policy_kind"]) == {"entry-point"} and set(greedy["policy_version"]) == {"0.1.0"}
    assert set(greedy["policy_distribution"]) == {"pdors-greedy"}
    assert set(runs[runs["policy"] == "fifo"]["policy_kind"]) == {"builtin"}
    meta = next((tmp_path / "o" / "sweeps").iterdir())
    assert "greedy" in (meta / "summary.md").read_text()
    for figure in ("greedy_utility", "greedy_ratio_bound"):
        assert (meta / "report" / f"{figure}.png").stat().st_size > 10_000

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=env["MLFLOW_TRACKING_URI"])
    exp = client.get_experiment_by_name("pdors-examples")
    child = [r for r in client.search_runs([exp.experiment_id]) if r.data.params.get("policy") == "greedy"]
    assert len(child) == 1 and child[0].data.params["origin.version"] == "0.1.0"
    assert child[0].data.params["origin.distribution"] == "pdors-greedy" and child[0].data.metrics["n"] == 4


@pytest.mark.slow
def test_broken_policies_end_failed_with_their_reasons_and_the_sweep_goes_on(tmp_path):
    out = tmp_path / "o"
    cmd = [BIN / "pdors", "sweep", "run", ROOT / "examples" / "greedy-broken.yaml", "--in-process", "--out", out,
           "mlflow.enabled=false"]  # fmt: skip
    done = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "runs: 10 total, 2 ok, 6 failed, 2 invalid, 0 lost" in done.stdout
    runs = runs_of(out).set_index(["policy", "seed"])
    assert runs.loc["greedy"]["status"].tolist() == ["ok", "ok"]
    assert (runs.loc["greedy"]["violations"] == 0).all()
    for name, why in [
        (
            "WrongShape",
            "PolicyOutputError: WrongShape's allocation for slot 0: workers must be an integer array of shape (10, 4)",
        ),
        ("Raises", "RuntimeError: example failure in slot 1"),
        ("Hangs", "RunTimeLimit: stopped after 5 s (the sweep's run_time_limit)"),
    ]:
        mine = runs.loc[f"pdors_greedy.broken:{name}"]
        assert mine["status"].tolist() == ["failed", "failed"] and all(e.startswith(why) for e in mine["error"])
    over = runs.loc["pdors_greedy.broken:OverCapacity"]  # judged by the validator: never ok, never ranked
    assert over["status"].tolist() == ["invalid", "invalid"] and (over["violations"] > 0).all()
    assert all('"kind": "capacity"' in d for d in over["violation_detail"])
    assert all(e.split(";")[0].endswith("validator violation(s)") for e in over["error"])
    assert "2 invalid runs left out" in done.stdout and "OverCapacity" not in done.stdout.split("invalid run")[0]


@pytest.mark.slow
def test_editing_one_line_recomputes_only_the_policys_runs(tmp_path):
    package = copy_package(tmp_path, "mine_edit")
    cfg = write_config(
        tmp_path / "edit.yaml",
        {"name": "edit", "instance": SMALL, "policies": {"fifo": {}, "mine_edit.policy:Greedy": {}}, "seeds": [1, 2],
         "mlflow": {"enabled": False}},
    )  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    cmd = [str(BIN / "pdors"), "sweep", "run", str(cfg), "--in-process", "--out", str(tmp_path / "o")]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    before = runs_of(tmp_path / "o")
    path = package / "policy.py"
    path.write_text(path.read_text().replace("bounded(16,", "bounded(1,"))
    again = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "4 tasks (4 simulations, 0 OPT) over no grid axes; 2 already recorded, 2 to run" in again.stdout
    after = runs_of(tmp_path / "o")
    assert len(after) == 6  # the record keeps both versions apart
    fifo = after[after["policy"] == "fifo"].set_index("run_id")
    assert (
        fifo["started_at"].to_dict() == before[before["policy"] == "fifo"].set_index("run_id")["started_at"].to_dict()
    )
    mine = after[after["policy"] == "mine_edit.policy:Greedy"]
    assert mine["policy_digest"].nunique() == 2 and mine["point_id"].nunique() == 2
    assert mine.groupby("policy_digest")["schedule_digest"].apply(set).map(len).tolist() == [2, 2]
    assert len(set(mine["schedule_digest"])) == 4  # one worker per job schedules differently


@pytest.mark.slow
def test_two_node_cluster_runs_the_external_policy_and_refuses_a_node_without_it(netns, env, tmp_path):
    port = 6391
    temp = tempfile.mkdtemp(prefix="pdray", dir="/tmp")
    common = ["--block", "--node-ip-address=127.0.0.1", "--num-cpus=1", "--disable-usage-stats", f"--temp-dir={temp}"]
    ray = BIN / "ray"
    head = start(netns, env, tmp_path, ray, "start", "--head", f"--port={port}", "--include-dashboard=false", *common)
    node = None
    try:
        assert wait_nodes(netns, env, f"127.0.0.1:{port}", 1) == ["127.0.0.1"]
        node = start(netns, env, tmp_path, ray, "start", f"--address=127.0.0.1:{port}", *common)
        assert wait_nodes(netns, env, f"127.0.0.1:{port}", 2) == ["127.0.0.1", "127.0.0.1"]
        cfg = write_config(
            tmp_path / "c.yaml",
            {"name": "c", "instance": {**SMALL, "jobs": 30, "slots": 20}, "policies": {"fifo": {}, "greedy": {}},
             "seeds": [1, 2, 3, 4], "mlflow": {"enabled": False}},
        )  # fmt: skip
        address = ["--ray-address", f"127.0.0.1:{port}", "--max-parallel", "2"]
        rc, log = pdors(netns, env, tmp_path, "sweep", "run", cfg, "--out", tmp_path / "o", *address, timeout=400)
        assert rc == 0, log
        runs = runs_of(tmp_path / "o")
        assert set(runs["status"]) == {"ok"} and len(runs) == 8 and runs["node_id"].nunique() == 2
        assert set(runs[runs["policy"] == "greedy"]["policy_version"]) == {"0.1.0"}

        # a policy only the driver can import (PYTHONPATH of this command alone): the sweep fails at once
        # (not in the working directory: Ray puts the driver's on its workers' sys.path)
        (tmp_path / "driver").mkdir()
        copy_package(tmp_path / "driver", "driver_only")
        cfg = write_config(
            tmp_path / "d.yaml",
            {"name": "d", "instance": SMALL, "policies": {"fifo": {}, "driver_only.policy:Greedy": {}},
             "mlflow": {"enabled": False}},
        )  # fmt: skip
        driver = {**env, "PYTHONPATH": str(tmp_path / "driver")}
        rc, log = pdors(netns, driver, tmp_path, "sweep", "run", cfg, "--out", tmp_path / "d", *address, timeout=400)
        assert rc == 2, log  # the environment given is wrong: nothing ran
        line = next(x for x in log.splitlines() if "error:" in x)
        assert "policy driver_only.policy:Greedy: node 127.0.0.1 has policy driver_only.policy:Greedy: cannot import" \
            in line  # fmt: skip
        assert not (tmp_path / "d" / "runs").exists()  # nothing ran, nothing recorded
    finally:
        if node is not None:
            end_session(node)
        end_session(head)
        shutil.rmtree(temp, ignore_errors=True)
