"""Every sweep config under configs/ at reduced size, end to end: validate, run in process (real simulations, real
OPT solves, real Parquet, real MLflow on a SQLite store); the sweep's report figures' PNG, CSV and Markdown must
exist, hold the series the config asks for, and be attached to the sweep's MLflow parent run. One config takes the
outage path instead: MLflow down during the sweep, then ``pdors report`` logs the sweep and draws the figures."""

from __future__ import annotations

import copy
import gzip
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from pdors_cli.main import main
from pipeline.publish.report import figures_of
from pipeline.record.storage import Store, manifest_of
from pipeline.results.summary import axis_label
from pipeline.spec import grid, schema

pytestmark = pytest.mark.slow  # the integration tier: every config end to end with OPT solves and MLflow

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))
SMALL_SIZES = {"machines": [2, 3], "jobs": [4, 5], "slots": [5, 6]}
SMALL_INSTANCE = {"machines": 3, "jobs": 5, "slots": 6}
# At the paper's workloads nothing finishes in 6 slots on 3 machines; at 1% of the samples most jobs can.
SMALL_WORKLOAD_SCALE = 0.01
# Configs that are not a figure's reproduction (which needs 5+ seeds and a report): the quickstart, and the
# calibration study (3 seeds within its compute budget, docs/MODEL.md "Calibration").
STUDIES = ("quickstart", "calibration", "q_sensitivity")


def tiny_google_trace(directory: Path) -> Path:
    """A hand-written Google 2011 job_events part: 8 SUBMIT events (classes 0-3) among other events."""
    directory.mkdir(parents=True, exist_ok=True)
    rows = []
    for k in range(8):
        rows.append(f"{(k + 1) * 1_000_000},,{100 + k},0,user{k},{k % 4},name{k},logical{k}")
        rows.append(f"{(k + 1) * 1_000_000 + 5},,{100 + k},1,user{k},{k % 4},name{k},logical{k}")  # SCHEDULE
    with gzip.open(directory / "part-00000-of-00001.csv.gz", "wt") as f:
        f.write("\n".join(rows) + "\n")
    return directory


def shrink(data: dict, trace_dir: Path) -> dict:
    """The same config at smoke size: one seed, two values per axis (all values a figure filters on), small
    instances, 1% workloads, a 10 s OPT limit; the trace path made absolute, or a tiny trace if the shared
    sample is absent."""
    data = copy.deepcopy(data)
    data["seeds"] = [1]
    data.pop("output", None)
    scale_axis = "workload.workload_scale"  # a regime axis shrinks with the instance, as the 1% below
    if scale_axis in data.get("grid", {}):
        data["grid"][scale_axis] = [v * SMALL_WORKLOAD_SCALE for v in data["grid"][scale_axis]]
    for fig in data.get("report", []):  # size axes become SMALL_SIZES: a figure's slice moves to the first
        for axis in fig.get("where", {}).keys() & SMALL_SIZES.keys():
            fig["where"][axis] = SMALL_SIZES[axis][0]
        if scale_axis in fig.get("where", {}):
            fig["where"][scale_axis] *= SMALL_WORKLOAD_SCALE
    wanted = {axis: [v] for fig in data.get("report", []) for axis, v in fig.get("where", {}).items()}
    for axis, values in data.get("grid", {}).items():
        keep = SMALL_SIZES.get(axis) or values[:2] + [v for v in wanted.get(axis, []) if v not in values[:2]]
        data["grid"][axis] = keep
    instance = data.setdefault("instance", {})
    instance.update({k: v for k, v in SMALL_INSTANCE.items() if k not in data.get("grid", {})})
    workload = instance.setdefault("workload", {})
    workload["workload_scale"] = min(workload.get("workload_scale", 1.0), SMALL_WORKLOAD_SCALE)
    if "trace" in workload:
        shared = ROOT / workload["trace"]["path"]
        workload["trace"]["path"] = str(shared if shared.exists() else tiny_google_trace(trace_dir))
    if data.get("opt"):
        data["opt"]["time_limit"] = 10
    data["mlflow"] = {"experiment": "smoke"}
    return data


def same_values(labels: list[str], values: list) -> bool:
    try:
        return sorted(map(float, labels)) == sorted(map(float, values))
    except (TypeError, ValueError):
        return sorted(labels) == sorted(map(axis_label, values))


def test_every_config_names_a_figure_and_validates():
    assert len(CONFIGS) >= 12
    for path in CONFIGS:
        first = path.read_text().splitlines()[0]
        assert first.startswith("#") and ("Fig" in first or path.stem == "quickstart"), path.name
        config = schema.load(path)
        assert grid.expand(config).tasks
        if path.stem not in STUDIES:
            assert config.report and len(config.seed_list()) >= 5, path.name
            assert all(fig.claim for fig in config.report), path.name


@pytest.fixture(scope="module")
def mlflow_home(tmp_path_factory, mlflow_template):
    """One SQLite store for all configs (a copy of the empty one); its artifacts go to ./mlruns."""
    home = tmp_path_factory.mktemp("mlflow")
    shutil.copyfile(mlflow_template, home / "mlflow.db")
    return home


# The outage path (MLflow down during the sweep, `pdors report` logs it afterwards) is the same for every config:
# it is taken by one of them; the others are logged by the sweep itself and read from its own report.
OUTAGE_CONFIG = "fig06"


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_config_runs_end_to_end_and_reports(path, tmp_path, mlflow_home, monkeypatch, capsys):
    monkeypatch.chdir(mlflow_home)
    small = tmp_path / path.name
    small.write_text(yaml.safe_dump(shrink(yaml.safe_load(path.read_text()), tmp_path / "trace"), sort_keys=False))
    store = f"sqlite:///{mlflow_home}/mlflow.db"
    sweep = ["sweep", "run", str(small), "--out", str(tmp_path / "out"), "--in-process"]
    if path.stem == OUTAGE_CONFIG:
        # MLflow down during the sweep (nothing listens on the discard port): runs ok, logging failed -> 3.
        monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:9")
        assert main(sweep) == 3, capsys.readouterr().err
        sweep_dir = next((tmp_path / "out" / "sweeps").iterdir())
        # MLflow up again: `pdors report` logs the never-logged sweep, then attaches its files to the parent run.
        monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
        assert main(["report", str(sweep_dir), "--out", str(tmp_path / "figures")]) == 0
        figures = tmp_path / "figures"
    else:
        monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
        assert main(sweep) == 0, capsys.readouterr().err
        sweep_dir = next((tmp_path / "out" / "sweeps").iterdir())
        figures = sweep_dir / "report"
    manifest = manifest_of(Store(sweep_dir.parent.parent, sweep_dir.name))
    config = schema.load(small)
    for fig in figures_of(manifest):
        png, pdf, csv, md = (figures / f"{fig.name}.{ext}" for ext in ("png", "pdf", "csv", "md"))
        table = pd.read_csv(csv)
        panels_drawn = max(1, table["panel"].nunique()) if "panel" in table else 1
        # a figure whose points equal an earlier one's or say nothing is not drawn, and its table says why
        assert png.exists() or "\n\nNot drawn: " in md.read_text(), fig.name
        assert not png.exists() or (png.read_bytes()[:4] == b"\x89PNG" and png.stat().st_size < 200_000 * panels_drawn)
        expected = set(fig.policies or config.policies)
        assert set(table["policy"]) == expected, (fig.name, table)
        if fig.x != "policy":  # every policy has every x of the sweep in every panel ("-": another policy's axis)
            panels = table["panel"].astype(object).fillna("")  # "" (no panel) reads back as NaN
            for (_, policy), xs in table.groupby([panels, "policy"])["x"]:
                assert list(xs) == ["-"] or same_values(list(xs), config.grid[fig.x]), (fig.name, policy, table)
        assert all(math.isfinite(v) for v in table["mean"]), (fig.name, table)
        pooled = math.prod(len(config.grid[a]) for a in fig.average)  # one seed: pooled axes only
        assert (table["n"] == pooled).all(), (fig.name, table)
        assert pdf.exists() == png.exists() and (not pdf.exists() or pdf.read_bytes()[:5] == b"%PDF-")
        if fig.normalise:
            assert (table.loc[table["policy"] == fig.normalise, "mean"] == 1.0).all()
        assert f"# {fig.title}" in md.read_text()
        assert fig.title in (figures / f"{config.name}.report.md").read_text()
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    experiment = client.get_experiment_by_name("smoke").experiment_id
    parents = client.search_runs(
        [experiment], f"tags.`pdors.sweep_id` = '{manifest.sweep_id}' and tags.`pdors.role` = 'sweep'"
    )
    assert len(parents) == 1
    attached = {Path(a.path).name for a in client.list_artifacts(parents[0].info.run_id, "report")}
    written = {f"{fig.name}.{ext}" for fig in figures_of(manifest) for ext in ("png", "pdf", "csv", "md")}
    assert {name for name in written if (figures / name).exists()} <= attached
    assert {f"{fig.name}.{ext}" for fig in figures_of(manifest) for ext in ("csv", "md")} <= attached
    children = client.search_runs([experiment], f"tags.`mlflow.parentRunId` = '{parents[0].info.run_id}'")
    assert len(children) == len(pd.read_csv(sweep_dir / "summary.csv"))


FIGURE_BASE = {"name": "s", "policies": {"pdors": {}, "oasis": {}}, "grid": {"machines": [2, 3]}}
BAD_FIGURES = [
    ({"x": "jobs"}, "report[0].x: not a grid axis of this sweep (axes: machines; or 'policy'"),
    ({"x": "machines", "where": {"machines": 5}}, "report[0].where.machines: 5 is not one of the axis's values"),
    ({"x": "machines", "where": {"jobs": 5}}, "report[0].where.jobs: not a grid axis"),
    ({"x": "machines", "normalise": "fifo"}, "report[0].policies: 'fifo' is not a policy of this sweep"),
    ({"x": "machines", "metric": "ratio"}, "report[0].metric: ratio needs the offline optimum"),
    ({"x": "machines", "metric": "utility"}, "report[0].metric: unknown metric 'utility'"),
    ({"x": "policy", "name": "a b"}, "report[0].name: letters, digits"),
]


@pytest.mark.parametrize(
    "figure, message", BAD_FIGURES, ids=[m.split(":")[0] + str(k) for k, (_, m) in enumerate(BAD_FIGURES)]
)
def test_bad_figure_config_is_one_line_naming_the_field(tmp_path, capsys, figure, message):
    config = {**FIGURE_BASE, "report": [{"name": "f", "title": "t", **figure}]}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["sweep", "run", str(path), "--out", str(tmp_path / "out"), "--in-process"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"pdors sweep: error: {message}" or err.startswith(f"pdors sweep: error: {message}"), err
    assert not (tmp_path / "out").exists()


def test_duplicate_figure_names_are_rejected():
    fig = {"name": "f", "title": "t", "x": "machines"}
    with pytest.raises(ValueError, match=r"report\[1\]\.name: duplicate figure name 'f'"):
        schema.parse({**FIGURE_BASE, "report": [fig, fig]})


def test_report_of_nothing_says_what_it_looked_for(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["report", "no-such-sweep"]) == 2
    assert "'no-such-sweep': no such sweep config, directory, or sweep id under results/" in capsys.readouterr().err
    (tmp_path / "plain").mkdir()
    assert main(["report", "plain"]) == 2
    assert (
        "plain: neither a sweep config, a sweep directory (with manifest.json) nor an output root"
        in capsys.readouterr().err
    )
