"""``pdors show SCHEDULE [--run RUN_ID] [--out FILE.png]``: one run's schedule as a Gantt-style figure
(:mod:`pipeline.publish.gantt`). SCHEDULE is a file written by ``pdors simulate --schedule``, or a sweep output root
recorded with ``schedules: true`` together with ``--run`` (a run id from its ``runs`` table)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pdors.errors import ConfigError, ExitStatus

if TYPE_CHECKING:
    import pandas as pd


def _from_file(path: Path) -> tuple[pd.DataFrame, int, int, str, Path]:
    import json

    import pyarrow.parquet as pq

    from pdors.schedule_io import METADATA_KEY

    table = pq.read_table(path)
    meta = (table.schema.metadata or {}).get(METADATA_KEY)
    if meta is None:
        raise ConfigError("SCHEDULE", f"{path} is not a schedule written by `pdors simulate --schedule`")
    shape = json.loads(meta)
    return table.to_pandas(), shape["machines"], shape["slots"], path.stem, path.with_suffix(".png")


def _from_sweep(root: Path, run_id: str) -> tuple[pd.DataFrame, int, int, str, Path]:
    from pipeline.record.storage import read

    def rows(table: str) -> pd.DataFrame | None:
        found = read(root, table, [run_id])
        return found.to_pandas() if found.num_rows else None

    run = rows("runs")
    if run is None:
        raise ConfigError("--run", f"no run {run_id!r} recorded under {root}")
    cells = rows("schedules")
    if cells is None:
        raise ConfigError(
            "--run",
            f"run {run_id} has no schedule under {root} (record one with 'schedules: true' in the sweep config)",
        )
    first = run.iloc[0]
    title = f"{first['policy']}, seed {first['seed']} (run {run_id})"
    out = root / "show" / f"{run_id}.png"
    return cells, int(first["machines"]), int(first["slots"]), title, out


def cmd_show(args: argparse.Namespace) -> int:
    from pipeline.publish import gantt

    path = Path(args.schedule)
    if path.is_file():
        if args.run:
            raise ConfigError("--run", "only with a sweep output root, not a schedule file")
        cells, machines, slots, title, out = _from_file(path)
    elif path.is_dir():
        if not args.run:
            raise ConfigError("--run", "name the run to draw (a run id of the sweep's runs table)")
        cells, machines, slots, title, out = _from_sweep(path, args.run)
    else:
        raise ConfigError("SCHEDULE", f"no such file or directory: {path}")
    drawn = gantt.draw(cells, machines, slots, title, Path(args.out) if args.out else out)
    print(
        f"schedule of {title}: {len(cells)} allocated cells on {machines} machines over {slots} slots -> "
        f"{drawn} (and .pdf)"
    )
    return ExitStatus.OK


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("show")
    p.add_argument(
        "schedule",
        metavar="SCHEDULE",
        help="a schedule file (pdors simulate --schedule), or a sweep output root with --run",
    )
    p.add_argument("--run", help="the run id, when SCHEDULE is a sweep output root")
    p.add_argument("--out", help="the figure (PNG; a PDF beside it); default: next to the schedule")
    p.set_defaults(func=cmd_show)
