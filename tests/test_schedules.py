"""The optional ``schedules`` table of a sweep and ``pdors show``: what is recorded is what the policy allocated,
and one run's schedule is drawn as machines over slots."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import yaml

from pdors.run import run
from pdors.schedule_io import rows
from pdors_cli.main import main
from pipeline.record import storage


def sweep(tmp_path, name: str, **extra) -> str:
    cfg = tmp_path / f"{name}.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "name": name,
                "instance": {"jobs": 12, "slots": 8},
                "policies": {"pdors": {}, "fifo": {}},
                "grid": {"machines": [10]},
                "seeds": [1, 2],
                "mlflow": {"enabled": False},
                **extra,
            }
        )
    )
    assert main(["sweep", "run", str(cfg), "--out", str(tmp_path / name), "--in-process"]) == 0
    return name


def test_schedules_table_holds_each_runs_allocations_and_show_draws_one(tmp_path, capsys):
    assert not (tmp_path / sweep(tmp_path, "plain") / "schedules").exists()  # off by default

    out = tmp_path / sweep(tmp_path, "kept", schedules=True)
    runs = storage.read(out).to_pandas()
    cells = storage.read(out, "schedules").to_pandas()
    assert set(cells["run_id"]) <= set(runs["run_id"]) and len(cells) > 0
    for r in runs.itertuples():  # the recorded cells are the run's schedule, re-run from its spec
        expected = rows(run(json.loads(r.spec)).simulation.schedule)
        got = cells[cells["run_id"] == r.run_id].sort_values(["job", "machine", "slot"])
        for column, values in expected.items():
            assert np.array_equal(got[column].to_numpy(), np.asarray(values).astype(got[column].dtype)), column

    drawn = next(r for r in runs.itertuples() if (cells["run_id"] == r.run_id).any())
    capsys.readouterr()
    assert main(["show", str(out), "--run", drawn.run_id]) == 0
    png = out / "show" / f"{drawn.run_id}.png"
    assert png.read_bytes()[:4] == b"\x89PNG" and png.with_suffix(".pdf").read_bytes()[:5] == b"%PDF-"
    assert f"on 10 machines over 8 slots -> {png}" in capsys.readouterr().out

    assert main(["show", str(out)]) == 2  # bad input: one line naming the field, nothing written
    assert main(["show", str(next((out / "runs").rglob("*.parquet")))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert [line.split(": error: ")[1].split(":")[0] for line in err] == ["--run", "SCHEDULE"]
    assert pq.read_table(next((out / "schedules").rglob("*.parquet"))).num_rows > 0
