"""``pdors report SWEEP_OR_DIR [--out DIR]``: a sweep's figures from its Parquet record.

The figures are the config's ``report`` list (:class:`pipeline.schema.FigureConfig`: one per paper figure), else
total utility against the first grid axis. Per figure: ``<name>.png`` (300 dpi) and ``<name>.pdf``
(:mod:`pipeline.plots`), ``<name>.csv`` and ``<name>.md`` (panel, policy, x, n, mean, std, CI, min, max); plus
``<sweep name>.report.md`` with every figure, the paper's claim and the table (so the reports of several
sweeps can share one ``--out``). The files are attached to the sweep's MLflow
parent run under ``report/`` (the sweep is logged first if it never was).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from pdors.config import build

from . import plots, summary
from .credentials import one_line
from .locate import locate
from .schema import POLICY_AXIS, FigureConfig
from .storage import SweepError, manifest_of, recorded_runs


def figures_of(manifest: dict) -> list[FigureConfig]:
    specs = manifest["config"].get("report") or []
    if specs:
        return [build(FigureConfig, spec, f"report[{k}]") for k, spec in enumerate(specs)]
    axes = manifest["axes"]
    return [
        FigureConfig(
            name="total_utility", title=f"{manifest['name']}: total utility", x=axes[0] if axes else POLICY_AXIS
        )
    ]


def _index(manifest: dict, drawn: list[tuple[FigureConfig, pd.DataFrame, Path]]) -> str:
    lines = [
        f"# Report: sweep {manifest['sweep_id']}",
        "",
        f"Config `{manifest['config_path']}`, seeds {manifest['seeds']}, git commit "
        f"`{manifest['git_commit']}`. Values: mean ± std over the n runs with a value behind each point (its "
        f"seeds, and the axes a figure averages over) and the {summary.CONFIDENCE:.0%} Student-t confidence "
        "interval on the mean, clipped to the metric's range; one panel per value of every other grid axis.",
        "",
    ]
    for fig, table, png in drawn:
        lines += [f"## {fig.title}", ""]
        if fig.claim:
            lines += [f"Paper: {fig.claim}", ""]
        lines += [f"![{fig.name}]({png.name})", "", summary.figure_markdown(table, fig.x)]
    return "\n".join(lines)


def draw_all(runs: pd.DataFrame, manifest: dict, out: Path) -> list[Path]:
    """Every figure of the sweep as PNG, PDF, CSV and Markdown under ``out``, then the index; the paths."""
    out.mkdir(parents=True, exist_ok=True)
    drawn, paths = [], []
    for fig in figures_of(manifest):
        try:
            table = summary.figure_table(runs, fig, manifest["axes"])
        except summary.FigureDataError as e:
            raise SweepError(f"report figure {fig.name!r}: {e}") from None
        table.to_csv(out / f"{fig.name}.csv", index=False)
        (out / f"{fig.name}.md").write_text(f"# {fig.title}\n\n" + summary.figure_markdown(table, fig.x))
        png = plots.draw(table, fig, out / f"{fig.name}.png")
        drawn.append((fig, table, png))
        paths += [*plots.formats(png), out / f"{fig.name}.csv", out / f"{fig.name}.md"]
    index = out / f"{manifest['name']}.report.md"
    index.write_text(_index(manifest, drawn))
    return [*paths, index]


def _track(manifest: dict, runs: pd.DataFrame, paths: list[Path], root: Path) -> str:
    from . import tracking

    parent = tracking.attach(manifest, paths, "report", root)
    if parent is None:  # never logged (e.g. MLflow was down during the sweep): log it, then attach
        tracking.log_sweep(manifest, runs, summary.aggregate(runs, manifest["axes"]), [], root)
        parent = tracking.attach(manifest, paths, "report", root)
    return parent


def report_sweeps(
    target: str | None,
    out: str | None = None,
    track: bool = True,
    root: str | None = None,
    overrides: Sequence[str] = (),
) -> int:
    """``pdors report`` and ``pdors sweep report``: ``target`` as :func:`pipeline.locate.locate` (``root``: the
    output root to look in); exit status 0, or 3 when the files are written but attaching them to MLflow
    failed."""
    stores = locate(target, root, overrides)
    status = 0
    for store in stores:
        manifest = manifest_of(store)
        counts, runs = recorded_runs(store, manifest)
        if runs.empty:
            raise SweepError(f"sweep {store.sweep_id} has no recorded runs under {store.root}")
        dest = store.meta / "report" if out is None else Path(out) / (store.sweep_id if len(stores) > 1 else "")
        paths = draw_all(runs, manifest, dest)
        print(
            f"{store.sweep_id}: {counts.ok} of {counts.total} runs ok; {len(paths)} files in {dest}: "
            + ", ".join(p.name for p in paths if p.suffix == ".png"),
            flush=True,
        )
        if not (track and manifest["mlflow"]):
            continue
        try:
            parent = _track(manifest, runs, paths, store.root)
        except Exception as e:  # the files are written; say how to retry
            print(f"  MLflow: attaching failed ({one_line(e)}); retry with `pdors report {target}`", flush=True)
            status = 3
            continue
        print(
            f"  MLflow: attached to parent run {parent} (experiment {manifest['experiment']!r}) under report/",
            flush=True,
        )
    return status
