"""A sweep over a directory of instance files (grid axis ``instance_file``): the researcher's own workload through
the same pipeline, each file's content part of its runs' ids."""

from __future__ import annotations

from pathlib import Path

import pytest
from sweep_fixtures import write_config

import pipeline
from pdors.errors import ConfigError
from pdors.instance_io import save
from pdors.run import run
from pdors.workload import WorkloadConfig, generate
from pipeline.spec import grid, schema
from pipeline.sweep import SweepOptions

SIZES = [(3, 6), (4, 8), (5, 7)]  # (H, I) of each file


def instances(directory: Path) -> Path:
    directory.mkdir()
    for k, (h, i) in enumerate(SIZES):
        save(generate(WorkloadConfig(workload_scale=0.02), h, i, 8, k + 1), directory / f"mine-{k}.json")
    (directory / "notes.txt").write_text("not an instance")
    return directory


def config(tmp_path: Path, files: object, opt: bool = True) -> Path:
    data = {
        "name": "own",
        "policies": {"pdors": {}, "fifo": {}},
        "grid": {"instance_file": files},
        "seeds": [1],
        "mlflow": {"enabled": False},
        **({"opt": {"method": "bound"}} if opt else {}),
    }
    return write_config(tmp_path / "own.yaml", data)


def plan(path: Path) -> grid.Plan:
    return grid.expand(schema.parse(schema.raw(str(path), [])))


def test_a_directory_is_its_json_files_with_their_sizes(tmp_path):
    found = plan(config(tmp_path, str(instances(tmp_path / "mine"))))
    sims = [t for t in found.tasks if t.kind == "sim"]
    assert len(sims) == 6 and len([t for t in found.tasks if t.kind == "opt"]) == 3
    files = sorted({t.spec["instance_file"] for t in sims})
    assert [Path(f).name for f in files] == ["mine-0.json", "mine-1.json", "mine-2.json"]
    assert sorted({(t.spec["machines"], t.spec["jobs"]) for t in sims}) == sorted(SIZES)
    opt = next(t for t in found.tasks if t.kind == "opt")
    assert opt.spec["instance_file"] in files and len(opt.spec["instance_digest"]) == 16


def test_a_run_reads_its_file_and_refuses_a_changed_one(tmp_path):
    sim = next(t for t in plan(config(tmp_path, str(instances(tmp_path / "mine")))).tasks if t.kind == "sim")
    done = run(dict(sim.spec))
    assert (done.instance.num_machines, done.instance.num_jobs) == (sim.spec["machines"], sim.spec["jobs"])
    save(generate(WorkloadConfig(), 2, 2, 8, 99), sim.spec["instance_file"])
    with pytest.raises(ValueError, match="has changed since the sweep was planned"):
        run(dict(sim.spec))


@pytest.mark.parametrize(
    ("files", "why"),
    [("nowhere", "must list instance files or name a directory of them"), ("empty", "holds no instance files")],
)
def test_a_bad_directory_is_one_line(tmp_path, files, why):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError) as e:
        plan(config(tmp_path, str(tmp_path / files)))
    assert e.value.path == "grid.instance_file" and why in e.value.reason


def test_a_bad_file_names_its_grid_value(tmp_path):
    directory = instances(tmp_path / "mine")
    (directory / "mine-1.json").write_text('{"jobs": 3}')
    with pytest.raises(ConfigError) as e:
        plan(config(tmp_path, [str(directory / "mine-0.json"), str(directory / "mine-1.json")]))
    assert e.value.path == "grid.instance_file[1]" and "mine-1.json" in e.value.reason


@pytest.mark.slow
def test_editing_one_file_recomputes_only_its_runs(tmp_path):
    directory = instances(tmp_path / "mine")
    cfg, out = config(tmp_path, str(directory)), tmp_path / "out"
    first = pipeline.run_sweep(cfg, SweepOptions(in_process=True, out=str(out)))
    assert first.status == 0 and first.ran == 9
    before = pipeline.load_runs(out)
    save(generate(WorkloadConfig(workload_scale=0.02), 4, 8, 8, 42), directory / "mine-1.json")
    again = pipeline.run_sweep(cfg, SweepOptions(in_process=True, out=str(out), resume=True))
    assert again.status == 0 and again.ran == 3  # its two simulations and its bound
    after = pipeline.load_runs(out)
    assert len(after) == 12 and set(before["run_id"]) < set(after["run_id"])
    new = after[~after["run_id"].isin(before["run_id"])]
    assert set(new["instance_file"]) == {str(directory / "mine-1.json")}
