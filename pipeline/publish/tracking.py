"""MLflow: one parent run per (sweep, output directory) and one child per (grid point, policy), derived from the
Parquet record.

A child's params are every setting that defines it (policy, H, I, T, every workload field, every policy
parameter as ``<policy>.<param>``, as in the Parquet columns and grid axes) and ``seeds``; its metrics are the
mean over seeds under the bare name (``total_utility``), ``<metric>.std``, ``n``, the paired comparison with
the reference policy (``paired.wins``, ``paired.ratio_gmean``, ...; :mod:`pipeline.results.paired`), and each seed's
value under ``<metric>.seed`` (``step`` = seed); ``seeds.csv`` holds the per-seed table. The parent holds the
headline metrics (per policy, over all its runs) and the summary table; the report (figures, and one HTML page
with them embedded) is attached under ``report/``.

After logging, :func:`view_url` is the address of the experiment's runs table showing this sweep's children
only, flat, with their defining params and headline metrics as columns: MLflow 3's shared view state (an
experiment tag ``mlflow.sharedViewState.<key>`` holding the view as JSON, opened by the URL parameter
``viewStateShareKey=<key>`` on the ``runs`` tab).

Logging is idempotent and safe to run concurrently: the parent is found again by ``pdors.parent_key`` (a
digest of the sweep id and the output directory, so the same config run into another output gets its own
parent), children by ``pdors.point_id``; lookup and creation happen under an exclusive lock on a file in the
sweep's directory, and every metric carries a timestamp taken from the record (the run's finish time), so
logging the same record twice writes the same points, which MLflow's SQL store keeps once. A child whose
logged content is unchanged (``pdors.content`` digest) is skipped. The tracking URI is MLflow's own:
``MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db``; it is only ever shown with its credentials masked.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import shutil
import socket
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from pdors import atomic
from pdors.config import JSON
from pipeline.record.manifest import Manifest
from pipeline.text.credentials import redact, split_auth

if TYPE_CHECKING:  # mlflow is imported where it is used: its import costs seconds
    from mlflow.entities import Metric, Param, Run, RunTag
    from mlflow.tracking import MlflowClient

SWEEP_TAG, POINT_TAG, PARENT_TAG = "pdors.sweep_id", "pdors.point_id", "mlflow.parentRunId"
KEY_TAG, CONTENT_TAG = "pdors.parent_key", "pdors.content"
# The children's metric layout: 2 = bare names are means over seeds, per-seed values under ``<metric>.seed``. A
# child logged with another layout (1: per-seed values as steps of the bare name; 2: every per-seed metric as
# steps) is deleted and logged anew. 3: steps for ``STEP_METRICS`` only.
LAYOUT_TAG, LAYOUT = "pdors.layout", "3"
# MLflow 3's UI opens an experiment of this kind ("Machine learning") on its runs, not on GenAI traces.
EXPERIMENT_TAGS = {"mlflow.experimentKind": "custom_model_development"}
# Each child's per-seed table (seeds.csv); every per-seed value is also in the Parquet record.
SEED_METRICS = (
    "total_utility",
    "completed",
    "admitted",
    "rejected",
    "median_training_time",
    "ratio",
    "ratio_bound",
    "ratio_low",
    "violations",
    "wall_s",
    "decision_latency_ms.p50",
)
HEADLINE_METRICS = ("total_utility", "completed", "ratio")  # per policy on the parent
# Logged per seed (step = seed) on each child, as ``<metric>.seed``: the headline metrics only (MLflow's cost grows
# with the metrics logged). ``paired.ratio``: the run's utility over its reference run's, on the same instance.
PAIRED_RATIO = "paired.ratio"
STEP_METRICS = ("total_utility", PAIRED_RATIO)
PARAMS_PER_BATCH, METRICS_PER_BATCH = 100, 1000  # MLflow's limits per log_batch call
SEED_SUFFIX = ".seed"  # per-seed values: a name of their own, so the bare name is the mean over seeds
PAIRED_PREFIX = "paired."
VIEW_TAG = "mlflow.sharedViewState."  # MLflow UI: an experiment tag per shared view, opened by its key
# The headline metrics first: they must be in sight at 1600 px (the table renders only the columns in sight).
VIEW_METRICS = (
    "total_utility",
    "paired.ratio_gmean",
    "paired.wins",
    "paired.ties",
    "paired.losses",
    "completed_share",
    "ratio_low",
    "ratio_bound",
    "paired.ratio_low",
    "paired.ratio_high",
    "total_utility.std",
    "n",
    "median_training_time",
    "median_censored",
)
RUN_NAME_COLUMN = "attributes.`Run Name`"
UI_PORT_ENV, UI_PORT = "PDORS_UI_PORT", 5000  # where `pdors ui` serves a local store (the env var: another port)
ORDER_TAG = "pdors.order"  # the runs table's order: the reference policy (PD-ORS) first, then the grid
# MLflow's UI reads the page's mode from this URL parameter (else from the browser's storage, default GenAI:
# a Traces/Sessions/Judges sidebar); the experiment tag alone does not switch it.
UI_MODE = "workflowType=machine_learning"
SHOWN_DIGITS = 4  # the children's metrics are rounded for display (the Parquet record keeps every digit)


def tracking_uri() -> str:
    import mlflow

    return mlflow.get_tracking_uri()


def served(uri: str) -> bool:
    """Whether tracking URI ``uri`` names a server (else a local store, which `pdors ui` serves)."""
    return uri.startswith(("http://", "https://"))


def shown_uri() -> str:
    """The tracking URI as it may be printed: credentials masked."""
    return redact(tracking_uri())


def client() -> MlflowClient:
    """An MlflowClient that does not print run URLs (they would carry the URI's credentials) nor, unless
    ``MLFLOW_DISABLE_TELEMETRY`` is set otherwise, send MLflow's usage reports (their threads also delayed exit)."""
    from mlflow.tracking import MlflowClient

    os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    return MlflowClient()


TEMPLATE_ENV = "PDORS_MLFLOW_TEMPLATE_DIR"  # where the empty, migrated store is kept (default ~/.cache/pdors)


def ensure_store(uri: str) -> None:
    """A local SQLite store that does not exist yet is made as a copy of an empty store migrated once per MLflow
    version (MLflow's migrations cost about 3 s of CPU per new store, the copy nothing); any other URI, or a store
    that exists, is left to MLflow. The copy appears whole (hard link of a finished file) or not at all."""
    if not uri.startswith("sqlite:///") or "?" in uri:
        return
    path = Path(uri.removeprefix("sqlite:///"))
    if path.exists():
        return
    from importlib.metadata import version

    from mlflow.tracking import MlflowClient

    cache = Path(os.environ.get(TEMPLATE_ENV) or Path.home() / ".cache" / "pdors")
    cache.mkdir(parents=True, exist_ok=True)
    template = cache / f"mlflow-{version('mlflow')}-empty.db"
    with atomic.lock_file(cache / "mlflow-template.lock") as fd:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if not template.exists():
            made = template.with_name(f".{template.name}.{os.getpid()}")
            made.unlink(missing_ok=True)
            MlflowClient(f"sqlite:///{made}").search_experiments()  # creates and migrates it
            os.replace(made, template)
    path.parent.mkdir(parents=True, exist_ok=True)
    copy = path.with_name(f".{path.name}.{os.getpid()}")
    shutil.copyfile(template, copy)
    try:
        os.link(copy, path)  # fails if another logger made the store meanwhile: theirs is kept
    except FileExistsError:
        pass
    finally:
        copy.unlink()


def check_reachable(uri: str) -> None:
    """Fail fast on a server that is down (the client would otherwise retry for minutes). Credentials in the
    URI are sent as MLflow's client sends them and never appear in the message."""
    if not served(uri):
        return
    try:
        bare, headers = split_auth(uri)
        request = urllib.request.Request(bare.rstrip("/") + "/health", headers=headers)
        urllib.request.urlopen(request, timeout=10).read()
    except (OSError, ValueError) as e:
        raise ConnectionError(f"MLflow tracking server {redact(uri)} is unreachable: {redact(str(e))}") from None


def open_store() -> None:
    """What logging needs before the record, done ahead (:mod:`pipeline.publish.tracking_process`): a server
    reachable, a new local store made (:func:`ensure_store`), the store opened (its schema checked) by the client
    every later :func:`client` shares. Reads only."""
    uri = tracking_uri()
    check_reachable(uri)
    ensure_store(uri)
    client().search_experiments(max_results=1)


def experiment_id(mlflow_client: MlflowClient, name: str) -> str:
    """The experiment's id, creating it (as a runs-first experiment) if needed."""
    from mlflow.exceptions import MlflowException

    experiment = mlflow_client.get_experiment_by_name(name)
    if experiment is None:
        try:
            return str(mlflow_client.create_experiment(name, tags=EXPERIMENT_TAGS))
        except MlflowException:  # created meanwhile by a concurrent logger
            experiment = mlflow_client.get_experiment_by_name(name)
            if experiment is None:
                raise
    if any(experiment.tags.get(k) != v for k, v in EXPERIMENT_TAGS.items()):
        for k, v in EXPERIMENT_TAGS.items():
            mlflow_client.set_experiment_tag(experiment.experiment_id, k, v)
    return str(experiment.experiment_id)


def _find(mlflow_client: MlflowClient, exp_id: str, filter_string: str) -> list[Run]:
    runs, token = [], None
    while True:
        page = mlflow_client.search_runs([exp_id], filter_string, max_results=1000, page_token=token)
        runs += list(page)
        token = page.token
        if not token:
            return runs


def metrics(values: JSON, timestamp: int | None = None, step: int = 0) -> list[Metric]:
    """MLflow metrics for the finite values; ``timestamp`` (ms) defaults to now."""
    from mlflow.entities import Metric

    ts = int(time.time() * 1000) if timestamp is None else int(timestamp)
    return [
        Metric(k, float(v), ts, int(step))
        for k, v in values.items()
        if v is not None and not pd.isna(v) and not math.isinf(float(v))
    ]


def _value(v: Any) -> str:
    return json.dumps(v) if isinstance(v, (list, dict)) else str(v)


def params(values: JSON) -> list[Param]:
    from mlflow.entities import Param

    return [Param(k, _value(v)[:6000]) for k, v in values.items()]


def parent_key(sweep_id: str, root: Path) -> str:
    return hashlib.sha256(f"{sweep_id}\0{Path(root).resolve()}".encode()).hexdigest()[:20]


def _parent(mlflow_client: MlflowClient, exp_id: str, key: str) -> str | None:
    found = _find(mlflow_client, exp_id, f"tags.`{KEY_TAG}` = '{key}'")
    return min(found, key=lambda r: (r.info.start_time, r.info.run_id)).info.run_id if found else None


@contextmanager
def _locked(root: Path, sweep_id: str) -> Iterator[None]:
    """One MLflow logger per sweep directory at a time (waits for the other; the OS drops the lock when its
    holder dies)."""
    path = Path(root) / "sweeps" / sweep_id / ".mlflow.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic.lock_file(path) as fd:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield


def _root(manifest: Manifest, root: Path | None) -> Path:
    return Path(root if root is not None else manifest.output)


def attach(manifest: Manifest, paths: list[Path], artifact_path: str, root: Path | None = None) -> str | None:
    """Attach files to a logged sweep's parent run (under ``artifact_path``); None if it was never logged."""
    check_reachable(tracking_uri())
    c = client()
    experiment = c.get_experiment_by_name(manifest.experiment)
    parent = experiment and _parent(c, experiment.experiment_id, parent_key(manifest.sweep_id, _root(manifest, root)))
    if not parent:
        return None
    for path in paths:
        c.log_artifact(parent, str(path), artifact_path)
    return parent


def child_metric_values(row: pd.Series) -> JSON:
    """A child's metrics from its aggregate row (:func:`pipeline.publish.report.comparison`): the mean over seeds under
    the bare name, ``.std``, ``n``, ``failed`` and the ``paired.*`` columns."""
    out = {"n": row["n"], "failed": row["failed"]}
    for k, v in zip(map(str, row.index), row, strict=True):
        if k.endswith(".mean"):
            out[k[: -len(".mean")]] = shown(v)
        elif k.endswith(".std") or k.startswith(PAIRED_PREFIX):
            out[k] = shown(v)
    return out


def shown(value: Any) -> Any:
    """``value`` to :data:`SHOWN_DIGITS` significant digits (MLflow's table prints every digit it is given)."""
    if value is None or pd.isna(value) or not math.isfinite(float(value)) or float(value) == 0:
        return value
    return round(float(value), SHOWN_DIGITS - 1 - math.floor(math.log10(abs(float(value)))))


def short_setting(axis: str, value: Any) -> str:
    """``axis=value`` as a run name shows it: the axis's last part, a list's values joined by ``/`` (``workload.mix``
    ``[0.1, 0.55, 0.35]`` -> ``mix=0.1/0.55/0.35``), so that grid points differ within the name column's width."""
    text = str(value)
    if text.startswith("[") and text.endswith("]"):
        text = "/".join(v.strip() for v in text[1:-1].split(","))
    return f"{axis.split('.')[-1]}={text}"


def view_state(parent: str, axes: list[str]) -> JSON:
    """The runs table's view of one sweep: its children only (flat: a filter unnests them), ordered by name
    (policy, then grid values), with the policy, grid and seeds params and then :data:`VIEW_METRICS` as the
    leftmost columns (the table renders only the columns in sight)."""
    columns = [f"metrics.`{m}`" for m in VIEW_METRICS] + [f"params.`{p}`" for p in ["policy", *axes, "seeds"]]
    return {
        "searchFilter": f"tags.`{PARENT_TAG}` = '{parent}'",
        "orderByKey": f"tags.`{ORDER_TAG}`",
        "orderByAsc": True,
        "selectedColumns": columns,
        "columnOrder": [RUN_NAME_COLUMN, *columns],
        # narrow enough that the headline metrics through completed_share stay left of MLflow's Assistant panel at
        # 1600 px, the name wide enough for the grid point (short_setting)
        "columnWidths": {RUN_NAME_COLUMN: 230, **{c: 84 for c in columns[:6]}},
        "compareRunsMode": "TABLE",
    }


def view_key(state: JSON) -> str:
    """The view's share key: 64 bits of its digest (unique among an experiment's views; short enough that
    the comparison URL fits a terminal line)."""
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()[:16]


def view_url(base: str, exp_id: str, key: str) -> str:
    """The MLflow UI address of a shared view of experiment ``exp_id`` (``base``: the server, no credentials)."""
    return f"{base.rstrip('/')}/#/experiments/{exp_id}/runs?viewStateShareKey={key}&{UI_MODE}"


def ui_port() -> int:
    """The port ``pdors ui`` serves on: ``$PDORS_UI_PORT``, else 5000."""
    return int(os.environ.get(UI_PORT_ENV) or UI_PORT)


def ui_host() -> str:
    """The loopback address ``pdors ui`` serves on: IPv6's ``::1`` where the machine has it, else 127.0.0.1.
    MLflow 3.17's UI opens its Assistant panel on a page whose host name is ``localhost``, ``127.0.0.1`` or
    ``::1``; a browser names the IPv6 loopback ``[::1]``, so there the comparison opens without it."""
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        return "127.0.0.1"
    return "::1"


def local_base(port: int) -> str:
    """The address of ``pdors ui`` on ``port``."""
    host = ui_host()
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def ui_base(uri: str) -> str:
    """The UI that shows tracking URI ``uri``: the server itself (credentials removed), else ``pdors ui`` on
    the loopback (:func:`ui_port`)."""
    return split_auth(uri)[0] if served(uri) else local_base(ui_port())


def publish_view(mlflow_client: MlflowClient, exp_id: str, parent: str, axes: list[str]) -> str:
    """Store the sweep's view on the experiment; its share key."""
    state = view_state(parent, axes)
    key = view_key(state)
    mlflow_client.set_experiment_tag(exp_id, VIEW_TAG + key, json.dumps(state))
    return key


def point_params(spec_json: str, policy: str) -> JSON:
    """Every setting of a run spec but the seed, flattened: ``machines``, ``workload.<field>``,
    ``<policy>.<param>`` (an OPT row: ``opt.<setting>``)."""
    from pipeline.record.storage import flatten

    spec = json.loads(spec_json)
    spec.pop("seed", None)
    policy_params = spec.pop("params", {})
    spec.pop("policy", None)
    return {"policy": policy, **flatten(spec), **flatten(policy_params, policy)}


def _ms(value: Any) -> int:
    return int(pd.Timestamp(value).timestamp() * 1000)


def _last_finish_ms(runs: pd.DataFrame) -> int:
    """The timestamp of metrics derived from ``runs``: when the last of them finished (0 if none did)."""
    finished = runs["finished_at"].dropna()
    return _ms(finished.max()) if len(finished) else 0


def seed_table(point_runs: pd.DataFrame) -> pd.DataFrame:
    """One row per seed of a point: run id, status and the per-seed metrics."""
    cols = ["seed", "run_id", "status", *(m for m in SEED_METRICS if m in point_runs)]
    return point_runs[cols].sort_values("seed").reset_index(drop=True)


def paired_ratios(pairs: pd.DataFrame) -> pd.Series:
    """(point_id, seed) -> a run's utility over its reference run's (:func:`pipeline.results.summary.pairs`),
    against the grid's first reading of the reference, as the child's ``paired.*`` columns
    (:func:`pipeline.results.summary.with_paired`)."""
    first = pairs["versus"].iloc[0] if len(pairs) else ""
    kept = pairs[(pairs["versus"] == first) & (pairs["reference"] > 0)]
    return (kept["value"] / kept["reference"]).set_axis(pd.MultiIndex.from_frame(kept[["point_id", "seed"]]))


def _child_content(row: pd.Series, point_runs: pd.DataFrame, ratios: pd.Series) -> tuple[list[Param], list[Metric]]:
    """A child's params and metrics, all determined by the record (timestamps are the runs' finish times);
    ``ratios``: :func:`paired_ratios`."""
    seeds = ",".join(str(s) for s in sorted(point_runs["seed"]))
    logged = params({**point_params(point_runs["spec"].iloc[0], row["policy"]), "seeds": seeds})
    values = metrics(child_metric_values(row), _last_finish_ms(point_runs))
    ok = point_runs.loc[point_runs["status"] == "ok", ["point_id", "seed", "finished_at", "total_utility"]]
    for run in ok.to_dict("records"):
        per_seed = {
            "total_utility" + SEED_SUFFIX: run["total_utility"],
            PAIRED_RATIO + SEED_SUFFIX: ratios.get((run["point_id"], run["seed"])),
        }
        values += metrics(per_seed, _ms(run["finished_at"]), run["seed"])
    return logged, values


def log_batches(
    c: MlflowClient, run_id: str, logged: list[Param], values: list[Metric], tags: Sequence[RunTag] = ()
) -> None:
    """Params, metrics and tags in as few ``log_batch`` calls as MLflow's limits allow: one for a child (up to
    100 params and 1000 entries in all). The tags go with the last call, so a content tag on a run means that
    everything before it was logged."""
    params_left, values_left = list(logged), list(values)
    while True:
        batch_params = params_left[:PARAMS_PER_BATCH]
        batch_metrics = values_left[: METRICS_PER_BATCH - len(batch_params) - len(tags)]
        params_left, values_left = params_left[len(batch_params) :], values_left[len(batch_metrics) :]
        last = not params_left and not values_left
        c.log_batch(run_id, params=batch_params, metrics=batch_metrics, tags=list(tags) if last else [])
        if last:
            return


def _log_child(
    c: MlflowClient,
    exp_id: str,
    parent: str,
    sweep_id: str,
    label: str,
    row: pd.Series,
    point_runs: pd.DataFrame,
    existing: Run | None,
    reference: str,
    ratios: pd.Series,
) -> str:
    logged, values = _child_content(row, point_runs, ratios)
    if existing is not None and existing.data.tags.get(LAYOUT_TAG) != LAYOUT:
        c.delete_run(existing.info.run_id)  # its old per-seed steps would keep a stale value under a bare name
        existing = None
    content = hashlib.sha256(
        json.dumps(
            [[(p.key, p.value) for p in logged], [(m.key, m.value, m.timestamp, m.step) for m in values]]
        ).encode()
    ).hexdigest()[:20]
    if existing is not None and existing.data.tags.get(CONTENT_TAG) == content and ORDER_TAG in existing.data.tags:
        if existing.info.status != "FINISHED":  # logged in full, then cut off before it was marked finished
            c.set_terminated(existing.info.run_id)
        return str(existing.info.run_id)
    child = (
        existing.info.run_id
        if existing is not None
        else c.create_run(
            exp_id,
            run_name=label[:250],
            tags={PARENT_TAG: parent, SWEEP_TAG: sweep_id, POINT_TAG: row["point_id"], LAYOUT_TAG: LAYOUT},
        ).info.run_id
    )
    from mlflow.entities import RunTag

    order = f"{0 if row['policy'] == reference else 1} {label}"
    c.log_text(child, seed_table(point_runs).to_csv(index=False), "seeds.csv")
    log_batches(c, child, logged, values, [RunTag(ORDER_TAG, order), RunTag(CONTENT_TAG, content)])
    c.set_terminated(child)
    return str(child)


def headline(runs: pd.DataFrame) -> dict[str, float]:
    """Per policy, the mean over all its ok runs of the headline metrics: ``<policy>.<metric>.mean``."""
    ok = runs[(runs["status"] == "ok") & (runs["kind"] == "sim")]
    return {
        f"{policy}.{m}.mean": g[m].mean()
        for policy, g in ok.groupby("policy", sort=False)
        for m in HEADLINE_METRICS
        if m in g and g[m].notna().any()
    }


@dataclass(frozen=True)
class Logged:
    """A logged sweep: its parent run, the UI address of its comparison view, the store (credentials masked) and
    whether a server holds it (else `pdors ui` serves the local store)."""

    parent: str
    url: str
    store: str
    served: bool


def log_sweep(
    manifest: Manifest,
    runs: pd.DataFrame,
    agg: pd.DataFrame,
    artifacts: list[Path],
    root: Path | None = None,
    found: pd.DataFrame | None = None,
) -> Logged:
    """Log (or re-log) a sweep recorded under ``root`` (default: the manifest's output); ``agg``:
    :func:`pipeline.publish.report.comparison`; ``found``: the sweep's :func:`pipeline.results.summary.pairs` if
    already computed."""
    from mlflow.entities import RunTag

    from pipeline.results.summary import pairs, reference_policy, with_ratio

    check_reachable(tracking_uri())
    ensure_store(tracking_uri())
    c = client()
    sweep_id, root = manifest.sweep_id, _root(manifest, root)
    runs = with_ratio(runs)
    with _locked(root, sweep_id):
        exp_id = experiment_id(c, manifest.experiment)
        key = parent_key(sweep_id, root)
        logged_before = _parent(c, exp_id, key)
        parent = (
            logged_before
            or c.create_run(
                exp_id, run_name=sweep_id, tags={SWEEP_TAG: sweep_id, KEY_TAG: key, "pdors.role": "sweep"}
            ).info.run_id
        )
        status = runs["status"].value_counts()
        c.log_batch(
            parent,
            metrics=metrics(
                {
                    "runs_total": manifest.tasks,
                    "runs_recorded": len(runs),
                    **{f"runs_{s}": int(status.get(s, 0)) for s in ("ok", "failed", "invalid", "lost")},
                    **headline(runs),
                },
                _last_finish_ms(runs),
            ),
            # params are immutable in MLflow: only what the sweep id determines; where and with what as tags
            params=params(
                {
                    "name": manifest.name,
                    "axes": manifest.axes,
                    "seeds": manifest.seeds,
                    "policies": ",".join(manifest.config["policies"]),
                    "opt": manifest.config["opt"],
                }
            ),
            tags=[
                RunTag(k, redact(str(v)))
                for k, v in {
                    "git_commit": manifest.git_commit,
                    "mlflow.source.git.commit": manifest.git_commit,
                    "config": manifest.config_path,
                    "output": str(root.resolve()),
                    **{f"version.{k}": v for k, v in manifest.packages.items()},
                }.items()
            ],
        )
        for path in artifacts:
            c.log_artifact(parent, str(path), "plots" if path.suffix in (".png", ".pdf", ".svg") else None)

        children: dict[str | None, Run] = {}
        found_children = _find(c, exp_id, f"tags.`{PARENT_TAG}` = '{parent}'") if logged_before else []
        for r in found_children:  # the oldest if ever duplicated
            point = r.data.tags.get(POINT_TAG)
            if point not in children or (r.info.start_time, r.info.run_id) < (
                children[point].info.start_time,
                children[point].info.run_id,
            ):
                children[point] = r
        by_point = dict(tuple(runs.groupby("point_id", sort=False)))
        ratios = paired_ratios(pairs(runs, manifest.axes, reference_policy(manifest)) if found is None else found)
        for _, row in agg.iterrows():
            label = " ".join([row["policy"], *(short_setting(a, row[a]) for a in manifest.axes if row[a] != "-")])
            _log_child(
                c,
                exp_id,
                parent,
                sweep_id,
                label,
                row,
                by_point[row["point_id"]],
                children.get(row["point_id"]),
                reference_policy(manifest),
                ratios,
            )
        c.set_terminated(parent)
        key = publish_view(c, exp_id, parent, manifest.axes)
    uri = tracking_uri()
    return Logged(parent, view_url(ui_base(uri), exp_id, key), redact(uri), served(uri))
