"""Publishing a sweep: the summary table, plots, the report's figures and MLflow, all derived from the Parquet
record (``pdors sweep run`` after its runs, and ``pdors sweep log``).

What was published is remembered (``published.json`` beside the manifest: a digest of the manifest, every run's
recorded status, the code and the tracking URI), so a sweep run again with nothing changed publishes nothing. The
tracking URI may hold a password: the digest is an HMAC keyed with a random key of the output root (``.mark-key``,
mode 0600, like ``published.json``), so the mark reveals nothing of what it covers.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import importlib
import json
import os
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pdors.version
from pdors import atomic
from pdors.config import JSON
from pdors.errors import ExitStatus, InputError
from pipeline.publish import tracking_process
from pipeline.record.locate import locate
from pipeline.record.manifest import Manifest
from pipeline.record.provenance import git_commit
from pipeline.record.storage import Counts, Store, manifest_of
from pipeline.sweep import Ahead, Say, SweepOptions, SweepResult, say_out, silent, stops_recorded
from pipeline.sweep import run as run_sweep
from pipeline.text.screen import shown

if TYPE_CHECKING:
    import pandas as pd

    from pipeline.spec.schema import SweepConfig

PUBLISHED = "published.json"
MARK_KEY = ".mark-key"  # under the output root: the key of every published mark there
PRIVATE = 0o600


@dataclass(frozen=True, kw_only=True)
class Published:
    """What :func:`publish` did: the exit status (0, 1 runs failed, invalid, lost, not run or above OPT, 3 MLflow
    failed), the seconds of its stages (``report``, ``mlflow``) and how to open the MLflow comparison (None: not
    logged)."""

    status: int
    stages: dict[str, float] = field(default_factory=dict)
    comparison: str | None = None
    headline_shown: float = 0.0  # when the headline table was printed (time.time())


def run_and_publish(config_path: str, options: SweepOptions, say: Say | None = None) -> SweepResult:
    """``pdors sweep run`` (and :func:`pipeline.run_sweep`): :func:`pipeline.sweep.run`, then :func:`publish_run`.
    A sweep with runs to do and MLflow on starts its logging process as soon as its config is checked, so that
    importing MLflow and opening its store overlap the runs (:mod:`pipeline.publish.tracking_process`)."""
    logging: list[tracking_process.Logging] = []

    def checked(config: SweepConfig) -> None:
        if config.mlflow.enabled:
            logging.append(tracking_process.start())

    def then(result: SweepResult, on_screen: Callable[[], None]) -> SweepResult:
        return publish_run(result, say or silent, logging[0] if logging else None, on_screen)

    try:
        return run_sweep(config_path, options, say, then, Ahead(checked, _import_ahead))
    finally:
        for handle in logging:
            tracking_process.stop(handle)


# What publishing imports after the runs (scipy.stats alone costs about 1 s of CPU, matplotlib 0.6 s; the PDF
# backend and the font subsetter it loads at the first PDF saved, 0.12 s)
PUBLISHING_MODULES = (
    "scipy.stats",
    "pipeline.results.headline",
    "pipeline.results.theorem_check",
    "pipeline.publish.report",
    "matplotlib.backends.backend_pdf",
    "fontTools.subset",
)


def _import_ahead() -> None:
    """Import :data:`PUBLISHING_MODULES` in a thread while this process waits for Ray's results (Ray's waits release
    the interpreter lock), so that the results screen and the report do not wait for them after the last run."""

    def load() -> None:
        with contextlib.suppress(Exception):  # imported again where used, which says any error
            for name in PUBLISHING_MODULES:
                importlib.import_module(name)

    threading.Thread(target=load, name="pdors-import-ahead", daemon=True).start()


def publish_run(
    result: SweepResult,
    say: Say = silent,
    logging: tracking_process.Logging | None = None,
    on_screen: Callable[[], None] = lambda: None,
) -> SweepResult:
    """Publish what :func:`pipeline.sweep.run` recorded (``result``, updated and returned): skipped, with its
    status as last published, when it ran nothing and nothing changed since the last publish. ``logging``: a
    logging process started ahead (:func:`run_and_publish`), used if the sweep is logged; ``on_screen``: called
    once the headline is on screen (what the sweep left until then)."""
    if not result.recorded:
        return result
    store = Store(result.root, result.sweep_id)
    with stops_recorded(result, say, f"pdors sweep log {result.sweep_id} --out {shown(result.root)}"):
        manifest = manifest_of(store)
        track = bool(manifest.mlflow)
        mark = _mark(store, manifest, track)
        last = _last(store)
        kept = all((store.meta / n).exists() for n in ("summary.md", "summary.csv", "report"))
        if result.ran == 0 and kept and last is not None and last.get("mark") == mark:
            result.status = int(last["status"])
            say(f"nothing to do: every run is recorded and published as it stands (exit status {result.status})")
        else:
            done = publish(store, manifest, track, say, logging, on_screen)
            result.status, result.comparison = done.status, done.comparison
            result.stages.update(done.stages)
            result.headline_shown = done.headline_shown
            _remember(store, mark, done.status)
    say("stages (s): " + ", ".join(f"{k} {v:.2f}" for k, v in result.stages.items()))
    if result.comparison:
        say(result.comparison)
    return result


def _mark(store: Store, manifest: Manifest, track: bool) -> str:
    """What a publish depends on (beside its files still being there): the manifest, each of its runs' recorded
    status, the code, the tracking URI and whether MLflow is logged."""
    recorded = store.index().status()
    what = {
        "manifest": manifest.to_json(),
        "runs": [recorded.get(r, "lost") for r in manifest.run_ids],
        "code": [pdors.version.CODE_VERSION, git_commit()],
        "tracking": os.environ.get("MLFLOW_TRACKING_URI"),
        "track": track,
    }
    return hmac.new(
        _mark_key(store.root), json.dumps(what, sort_keys=True, default=str).encode(), hashlib.sha256
    ).hexdigest()


def _mark_key(root: Path) -> bytes:
    """The output root's random mark key, made on first use (readable by its owner only; never a link's
    target). Publishing runs under the root's lock: one process makes it."""
    path = root / MARK_KEY
    flags = os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, os.O_RDONLY | flags)
    except FileNotFoundError:
        _write_private(path, secrets.token_hex(32).encode())
        fd = os.open(path, os.O_RDONLY | flags)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise InputError(f"{path} is a symbolic link; the mark key must be a regular file (remove it)") from None
        raise
    try:
        os.fchmod(fd, PRIVATE)  # a key left readable by an older copy or a hand: made private
        return os.read(fd, 256)
    finally:
        os.close(fd)


def _write_private(path: Path, data: bytes) -> None:
    """Write ``path`` atomically, readable by its owner only from its first byte."""
    with atomic.replacing(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)


def _last(store: Store) -> JSON | None:
    """The record of the last publish, or None (none, or unreadable: publishing again costs only time)."""
    try:
        last = json.loads((store.meta / PUBLISHED).read_text())
    except (OSError, ValueError):
        return None
    return last if isinstance(last, dict) else None


def _remember(store: Store, mark: str, status: int) -> None:
    """Record a publish, unless MLflow failed (the next run retries it)."""
    if status == ExitStatus.MLFLOW_FAILED:
        (store.meta / PUBLISHED).unlink(missing_ok=True)
    else:
        _write_private(store.meta / PUBLISHED, json.dumps({"mark": mark, "status": status}).encode())


def publish(
    store: Store,
    manifest: Manifest,
    track: bool | None = None,
    say: Say = silent,
    logging: tracking_process.Logging | None = None,
    on_screen: Callable[[], None] = lambda: None,
) -> Published:
    """Summary table, plots, the report's figures and MLflow, all derived from the Parquet record; the exit
    status of ``run``/``log``. MLflow is logged in a process of its own while the report is drawn
    (:mod:`pipeline.publish.tracking_process`): ``logging`` if given (started ahead), else one started here.
    ``on_screen``: called once the results screen is said."""
    from pipeline.publish.report import comparison, runs_of
    from pipeline.results import headline, summary

    store.check_links()  # everything below writes under sweeps/<id>/: never through a link out of the root
    tick = time.perf_counter()
    counts, runs = runs_of(store, manifest)
    axes, reference = manifest.axes, summary.reference_policy(manifest)
    found = summary.pairs(runs, axes, reference)  # once: the table, the comparison and the report pair alike
    agg = comparison(runs, manifest, found)
    table = summary.markdown(agg, axes, reference)
    table += f"\nPaired over every grid point and seed, against {reference}:\n\n" + summary.paired_markdown(
        summary.paired_overall(runs, axes, reference, found), reference
    )
    top = headline.table(runs, axes, reference, found=found)
    atomic.write(store.meta / "summary.csv", agg.to_csv(index=False))
    note = summary.left_out(runs)
    atomic.write(
        store.meta / "summary.md",
        headline.markdown(top, reference) + (f"\n{note}\n" if note else "") + "\n## Every grid point\n\n" + table,
    )
    # The default plot is not logged: the report's figures (and its HTML page) hold it.
    artifacts = [store.meta / n for n in ("manifest.json", "config.yaml", "summary.csv", "summary.md")]
    tracked = manifest.mlflow if track is None else track
    handle = (logging or tracking_process.start()) if tracked else None
    if logging is not None and handle is None:
        tracking_process.stop(logging)
    try:
        status = _screen(store, runs, top, reference, counts, say)  # the results, before anything is drawn or logged
        shown_at = time.time()
        if handle is not None:  # logged while the figures are drawn
            tracking_process.log(handle, manifest, runs, agg, artifacts, store.root, found)
        on_screen()
        say("drawing the report's figures ...")
        drawing = time.perf_counter()
        figures, plot = _figures(store, manifest, runs, found)
        say(
            f"figures: {len(figures)} files in {time.perf_counter() - drawing:.1f} s; report: {shown(figures[-1])}; "
            f"plot: {plot.name}"
        )
        stages = {"report": time.perf_counter() - tick}
        if handle is None:
            return Published(status=status, stages=stages, headline_shown=shown_at)
        say(f"logging to MLflow: {len(agg)} child runs and the report ...")
        tick = time.perf_counter()  # what the logging took beyond the report, beside which it ran
        try:
            logged = tracking_process.finish(handle, figures, "report", store.root)
        except tracking_process.LoggingFailed as e:  # Parquet is the record: say how to re-log, keep the results
            say(
                f"MLflow logging failed ({e}); results are safe "
                f"in Parquet: re-log with `pdors sweep log {store.sweep_id} --out {store.root}`"
            )
            return Published(status=status or ExitStatus.MLFLOW_FAILED, stages=stages, headline_shown=shown_at)
    finally:
        if handle is not None:
            tracking_process.stop(handle)
    stages["mlflow"] = time.perf_counter() - tick
    say(
        f"MLflow: experiment {manifest.experiment!r}, parent run {logged.parent} with {len(agg)} child runs; "
        f"store {logged.store}"
    )
    return Published(
        status=status,
        stages=stages,
        comparison=comparison_lines(logged.url, logged.served),
        headline_shown=shown_at,
    )


def _figures(store: Store, manifest: Manifest, runs: pd.DataFrame, found: pd.DataFrame) -> tuple[list[Path], Path]:
    """The report's figures and the default plot drawn: their paths."""
    from pipeline.publish import plots
    from pipeline.publish.report import draw_all, figures_of

    figures = draw_all(runs, manifest, store.meta / "report", found)
    default_plot = store.meta / "plots" / "total_utility.png"
    return figures, plots.utility_vs_axis(runs, manifest.axes, default_plot, figures_of(manifest), figures)


def _screen(store: Store, runs: pd.DataFrame, top: pd.DataFrame, reference: str, counts: Counts, say: Say) -> int:
    """The results screen said (headline table, failures, counts, where the record is, runs above OPT, theorem
    violations); the exit status."""
    from pipeline.results import headline, summary, theorem_check

    say("\n" + headline.text(top, reference))
    for failed in runs[runs["status"] != "ok"].head(5).itertuples():
        say(
            f"  {failed.status} run {failed.run_id} ({failed.policy}, seed {failed.seed}): "
            f"{str(failed.error).splitlines()[0]}"
        )
    say(
        f"runs: {counts.total} total, {counts.ok} ok, {counts.failed} failed, {counts.invalid} invalid, "
        f"{counts.lost} lost, {counts.remaining} not run"
    )
    if summary.left_out(runs):
        say(f"  {summary.left_out(runs)}")
    say(f"Parquet: {shown(store.part('runs'))}; jobs: {shown(store.part('jobs'))}")
    say(f"summary (every grid point): {shown(store.meta / 'summary.md')}")
    above = summary.above_opt(runs)
    for bad in above.head(10).itertuples():
        say(
            f"  error: run {bad.run_id} ({bad.policy}, seed {bad.seed}) has utility {bad.total_utility:.10g}, "
            "more than its instance's OPT allows (beyond the gap): a bug in the model or the validator"
        )
    theorem = theorem_check.violations(runs)
    for line in theorem_check.messages(theorem, theorem_check.save_instances(theorem, store.meta / "theorem")):
        say("  " + line)
    broken = counts.failed or counts.invalid or counts.lost or counts.remaining or len(above) or len(theorem)
    return ExitStatus.FAILED if broken else ExitStatus.OK


def log(target: str | None, out: str | None, overrides: Sequence[str] = (), say: Say = say_out) -> int:
    """``pdors sweep log``: re-log sweeps to MLflow from their Parquet record (``target``, ``overrides`` as
    :func:`pipeline.record.locate.locate`)."""
    status: int = ExitStatus.OK
    comparisons: list[str] = []
    for store in locate(target, out, overrides):
        manifest = manifest_of(store)
        mark = _mark(store, manifest, True)
        done = publish(store, manifest, True, say)
        _remember(store, mark, done.status)
        status = max(status, done.status)
        comparisons += [done.comparison] if done.comparison else []
    for comparison in comparisons:
        say(comparison)
    return status


def comparison_lines(url: str, served: bool) -> str:
    """The MLflow comparison: a line saying how to open it, then the URL alone on the last line (whole, to
    copy or click; it fits :data:`pipeline.text.screen.WIDTH` columns for a local store)."""
    return "MLflow comparison" + ("" if served else ", once `.venv/bin/pdors ui` serves the store") + ":\n" + url
