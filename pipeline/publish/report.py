"""``pdors report SWEEP_OR_DIR [--out DIR]``: a sweep's figures from its Parquet record.

The figures are the config's ``report`` list (:class:`pipeline.spec.schema.FigureConfig`: one per paper figure), else
total utility against the first grid axis. Per figure: ``<name>.png`` (300 dpi) and ``<name>.pdf``
(:mod:`pipeline.publish.plots`), ``<name>.csv`` and ``<name>.md`` (panel, policy, x, n, mean, std, CI, min, max); plus
``<sweep name>.report.md`` with every figure, the paper's claim and the table (so the reports of several
sweeps can share one ``--out``). The files are attached to the sweep's MLflow
parent run under ``report/`` (the sweep is logged first if it never was).
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from pdors import atomic
from pdors.config import build
from pdors.errors import ExitStatus, SweepError
from pipeline.publish import plots
from pipeline.record.locate import locate
from pipeline.record.manifest import Manifest
from pipeline.record.storage import Counts, Store, manifest_of, recorded_runs
from pipeline.results import summary
from pipeline.spec.schema import POLICY_AXIS, FigureConfig
from pipeline.text.credentials import one_line
from pipeline.text.names import policy_name
from pipeline.text.screen import fit, shown

JOB_COLUMNS = ["run_id", "arrival", "completion", "utility", "sensitivity"]
IMAGE_RE = re.compile(r"!\[([^\]]*)\]\(([^)]+)\)")


def runs_of(store: Store, manifest: Manifest) -> tuple[Counts, pd.DataFrame]:
    """The sweep's counts and recorded runs, with the per-run metrics drawn from their jobs
    (:func:`pipeline.results.summary.with_job_metrics`)."""
    counts, runs = recorded_runs(store, manifest)
    if runs.empty:
        raise SweepError(f"sweep {store.sweep_id} has no recorded runs under {store.root}")
    return counts, summary.with_job_metrics(runs, store.read("jobs", JOB_COLUMNS).to_pandas())


def comparison(runs: pd.DataFrame, manifest: Manifest, found: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (grid point, policy): :func:`pipeline.results.summary.aggregate` with the paired columns against
    the sweep's reference policy (``found``: its :func:`pipeline.results.summary.pairs` if already computed)."""
    axes = manifest.axes
    return summary.with_paired(summary.aggregate(runs, axes), runs, axes, summary.reference_policy(manifest), found)


def figures_of(manifest: Manifest) -> list[FigureConfig]:
    specs = manifest.config.get("report") or []
    if specs:
        return [build(FigureConfig, spec, f"report[{k}]") for k, spec in enumerate(specs)]
    axes = manifest.axes
    return [
        FigureConfig(name="total_utility", title=f"{manifest.name}: total utility", x=axes[0] if axes else POLICY_AXIS)
    ]


def _index(
    manifest: Manifest,
    drawn: list[tuple[FigureConfig, pd.DataFrame, Path]],
    overall: str,
    pair_png: Path | None,
    note: str,
) -> str:
    """The report's Markdown index; ``note``: :func:`pipeline.results.summary.left_out` ("" when no run was)."""
    reference = summary.reference_policy(manifest)
    lines = [
        f"# Report: sweep {manifest.sweep_id}",
        "",
        f"Config `{manifest.config_path}`, seeds {manifest.seeds}, git commit "
        f"`{manifest.git_commit}`. Values: mean ± std over the n runs with a value behind each point (its "
        f"seeds, and the axes a figure averages over) and the {summary.CONFIDENCE:.0%} Student-t confidence "
        "interval on the mean, clipped to the metric's range; one panel per value of every other grid axis.",
        "",
        *([note, ""] if note else []),
        f"## Paired: every policy against {reference} on the same instances",
        "",
    ]
    if pair_png is None:
        lines += [f"Only {reference} ran: nothing to pair.", ""]
    else:
        lines += [
            f"Each (grid point, seed) is one instance every policy ran on. Per instance: the policy's total utility "
            f"minus and over {reference}'s; W/T/L counts the instances {reference} did better on, equally (to 1e-9 "
            "relative) and worse; 95% Student-t intervals on the mean difference and on the mean log ratio "
            "(exponentiated: the geometric-mean ratio; pairs with a zero utility are left out of the ratio); the "
            "Wilcoxon signed-rank p-value with at least 6 untied pairs.",
            "",
            overall,
            f"![paired]({pair_png.name})",
            "",
        ]
    for fig, table, png in drawn:
        lines += [f"## {fig.title}", ""]
        if fig.claim:
            lines += [f"Paper: {fig.claim}", ""]
        lines += [f"![{fig.name}]({png.name})", "", summary.figure_markdown(table, fig.x, reference)]
    return "\n".join(lines)


def html_report(markdown: str, directory: Path) -> str:
    """The Markdown report as one self-contained HTML page (images embedded as base64 PNG), so that it renders
    inside MLflow's artifact viewer."""
    body: list[str] = []
    rows: list[list[str]] = []

    def flush() -> None:
        if rows:
            head, *rest = [r for r in rows if not set("".join(r)) <= set("-: ")]
            body.append(
                "<table><tr>"
                + "".join(f"<th>{c}</th>" for c in head)
                + "</tr>"
                + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rest)
                + "</table>"
            )
            rows.clear()

    for line in markdown.splitlines():
        if line.startswith("|"):
            rows.append([html.escape(c.strip().strip("`")) for c in line.strip().strip("|").split("|")])
            continue
        flush()
        image = IMAGE_RE.fullmatch(line.strip())
        if image:
            data = base64.b64encode((directory / image.group(2)).read_bytes()).decode()
            body.append(f'<img alt="{html.escape(image.group(1))}" src="data:image/png;base64,{data}">')
        elif line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            body.append(f"<h{level}>{html.escape(line.lstrip('#').strip())}</h{level}>")
        elif line.strip():
            body.append(f"<p>{html.escape(line)}</p>")
    flush()
    style = (
        "body{font-family:sans-serif;font-size:13px;margin:1em}img{max-width:100%}"
        "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
    )
    head = f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{style}</style></head>"
    return f"{head}<body>{''.join(body)}</body></html>"


def draw_all(runs: pd.DataFrame, manifest: Manifest, out: Path, found: pd.DataFrame | None = None) -> list[Path]:
    """Every figure of the sweep as PNG, PDF, CSV and Markdown under ``out``, the paired figure and table, then
    the index as Markdown and as self-contained HTML; the paths. ``found``: the sweep's
    :func:`pipeline.results.summary.pairs` if already computed."""
    out.mkdir(parents=True, exist_ok=True)
    axes, reference = manifest.axes, summary.reference_policy(manifest)
    pairs = summary.pairs(runs, axes, reference) if found is None else found
    overall = summary.paired_overall(runs, axes, reference, pairs)
    paired = f"{manifest.name}.paired"  # named by sweep: several sweeps may draw into one --out
    pair_png, paths = None, []
    if len(pairs):  # else the reference ran alone (e.g. thesis Figs. 3.13-3.14): no pairs, no empty figure
        atomic.write(out / f"{paired}.csv", overall.to_csv(index=False))
        pair_png = plots.paired_figure(
            pairs,
            axes,
            reference,
            f"{manifest.name}: total utility against {policy_name(reference)}",
            out / f"{paired}.png",
        )
        paths = [*plots.formats(pair_png), out / f"{paired}.csv"]
    drawn = []
    for fig in figures_of(manifest):
        try:
            table = summary.figure_table(runs, fig, axes, reference)
        except summary.FigureDataError as e:
            raise SweepError(f"report figure {fig.name!r}: {e}") from None
        atomic.write(out / f"{fig.name}.csv", table.to_csv(index=False))
        atomic.write(out / f"{fig.name}.md", f"# {fig.title}\n\n" + summary.figure_markdown(table, fig.x, reference))
        png = plots.draw(table, fig, out / f"{fig.name}.png")
        drawn.append((fig, table, png))
        paths += [*plots.formats(png), out / f"{fig.name}.csv", out / f"{fig.name}.md"]
    index = out / f"{manifest.name}.report.md"
    overall_md = summary.paired_markdown(overall, reference)
    atomic.write(index, _index(manifest, drawn, overall_md, pair_png, summary.left_out(runs)))
    page = index.with_suffix(".html")
    atomic.write(page, html_report(index.read_text(), out))
    return [*paths, index, page]


def _track(manifest: Manifest, runs: pd.DataFrame, paths: list[Path], root: Path) -> str | None:
    from pipeline.publish import tracking

    parent = tracking.attach(manifest, paths, "report", root)
    if parent is None:  # never logged (e.g. MLflow was down during the sweep): log it, then attach
        parent = tracking.log_sweep(manifest, runs, comparison(runs, manifest), [], root).parent
        tracking.attach(manifest, paths, "report", root)
    return parent


def report_sweeps(
    target: str | None,
    out: str | None = None,
    track: bool = True,
    root: str | None = None,
    overrides: Sequence[str] = (),
    by: Sequence[str] = (),
) -> int:
    """``pdors report`` and ``pdors sweep report``: ``target`` as :func:`pipeline.record.locate.locate` (``root``: the
    output root to look in), printing each sweep's headline table (per value of the ``by`` axes); exit status
    0, or ``MLFLOW_FAILED`` when the files are written but attaching them to MLflow failed."""
    from pipeline.results import headline

    stores = locate(target, root, overrides)
    status = ExitStatus.OK
    for store in stores:
        manifest = manifest_of(store)
        counts, runs = runs_of(store, manifest)
        dest = store.meta / "report" if out is None else Path(out) / (str(store.sweep_id) if len(stores) > 1 else "")
        reference = summary.reference_policy(manifest)
        found = summary.pairs(runs, manifest.axes, reference)  # once: the headline table and the report alike
        try:
            top = headline.table(runs, manifest.axes, reference, by, found)
        except ValueError as e:
            raise SweepError(str(e)) from None
        paths = draw_all(runs, manifest, dest, found)
        print(headline.text(top, reference, by), flush=True)
        if summary.left_out(runs):
            print(fit(summary.left_out(runs)), flush=True)
        print(
            fit(
                f"{store.sweep_id}: {counts.ok} of {counts.total} runs ok; {len(paths)} files in {shown(dest)}: "
                + ", ".join(p.name for p in paths if p.suffix == ".png")
            ),
            flush=True,
        )
        if not (track and manifest.mlflow):
            continue
        try:
            parent = _track(manifest, runs, paths, store.root)
        except Exception as e:  # the files are written; say how to retry
            print(f"  MLflow: attaching failed ({one_line(e)}); retry with `pdors report {target}`", flush=True)
            status = ExitStatus.MLFLOW_FAILED
            continue
        print(
            f"  MLflow: attached to parent run {parent} (experiment {manifest.experiment!r}) under report/",
            flush=True,
        )
    return status


def headline_of(target: str | None, out: str | None = None, by: Sequence[str] = ()) -> tuple[pd.DataFrame, str]:
    """The headline table of the sweep ``target`` names (:func:`pipeline.record.locate.locate`; the latest one under
    ``out`` if None) and its reference policy."""
    from pipeline.results import headline

    store = locate(target, out)[-1]
    manifest = manifest_of(store)
    runs = runs_of(store, manifest)[1]
    reference = summary.reference_policy(manifest)
    return headline.table(runs, manifest.axes, reference, by), reference
