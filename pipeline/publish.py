"""Publishing a sweep: the summary table, plots, the report's figures and MLflow, all derived from the Parquet
record (``pdors sweep run`` after its runs, and ``pdors sweep log``)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from pdors import atomic

from .credentials import one_line
from .locate import locate
from .storage import Store, manifest_of
from .sweep import OK, _footer, _say, _stage


def publish(store: Store, manifest: dict, track: bool | None = None) -> int:
    """Summary table, plots, the report's figures and MLflow, all derived from the Parquet record; the exit
    status of ``run``/``log``."""
    from . import plots, summary, tracking
    from .report import comparison, draw_all, runs_of

    tick = time.perf_counter()
    counts, runs = runs_of(store, manifest)
    axes, reference = manifest["axes"], summary.reference_policy(manifest)
    agg = comparison(runs, manifest)
    table = summary.markdown(agg, axes, reference)
    table += f"\nPaired over every grid point and seed, against {reference}:\n\n" + summary.paired_markdown(
        summary.paired_overall(runs, axes, reference), reference
    )
    atomic.write(store.meta / "summary.csv", agg.to_csv(index=False))
    atomic.write(store.meta / "summary.md", table)
    plot = plots.utility_vs_axis(runs, axes, store.meta / "plots" / "total_utility.png")
    figures = draw_all(runs, manifest, store.meta / "report")
    _say("\n" + table)
    for failed in runs[runs["status"] != "ok"].head(5).itertuples():
        _say(
            f"  {failed.status} run {failed.run_id} ({failed.policy}, seed {failed.seed}): "
            f"{str(failed.error).splitlines()[0]}"
        )
    _say(
        f"runs: {counts.total} total, {counts.ok} ok, {counts.failed} failed, {counts.lost} lost, "
        f"{counts.remaining} not run"
    )
    _say(f"Parquet: {store.part('runs')}  (jobs: {store.part('jobs')})")
    _say(f"summary: {store.meta / 'summary.md'}; plot: {plot}; report: {figures[-1]}")
    above = summary.above_opt(runs)
    for bad in above.head(10).itertuples():
        _say(
            f"  error: run {bad.run_id} ({bad.policy}, seed {bad.seed}) has utility {bad.total_utility:.10g}, "
            "more than its instance's OPT allows (beyond the gap): a bug in the model or the validator"
        )
    status = 1 if counts.failed or counts.lost or counts.remaining or len(above) else 0
    _stage("report", time.perf_counter() - tick)
    if not (manifest["mlflow"] if track is None else track):
        return status
    tick = time.perf_counter()
    # The default plot is not logged: the report's figures (and its HTML page) hold it.
    artifacts = [store.meta / n for n in ("manifest.json", "config.yaml", "summary.csv", "summary.md")]
    try:
        logged = tracking.log_sweep(manifest, runs, agg, artifacts, store.root)
        tracking.attach(manifest, figures, "report", store.root)
    except Exception as e:  # Parquet is the record: say how to re-log, keep the results
        _say(
            f"MLflow logging failed ({one_line(e)}); results are safe "
            f"in Parquet: re-log with `pdors sweep log {store.sweep_id} --out {store.root}`"
        )
        return status or 3
    _stage("mlflow", time.perf_counter() - tick)
    _say(
        f"MLflow: {tracking.shown_uri()} experiment {manifest['experiment']!r}, parent run {logged.parent} "
        f"with {len(agg)} child runs"
        + (
            ""
            if tracking.tracking_uri().startswith(("http://", "https://"))
            else f"; serve it with `mlflow ui --backend-store-uri {tracking.shown_uri()}` to open the URL below"
        )
    )
    _footer.append(f"MLflow comparison: {logged.url}")
    return status


def log(target: str | None, out: str | None, overrides: Sequence[str] = ()) -> int:
    """``pdors sweep log``: re-log sweeps to MLflow from their Parquet record (``target``, ``overrides`` as
    :func:`pipeline.locate.locate`)."""
    status = OK
    _footer.clear()
    for store in locate(target, out, overrides):
        status = max(status, publish(store, manifest_of(store), track=True))
    for line in _footer:
        _say(line)
    return status
