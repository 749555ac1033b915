"""MLflow: one parent run per sweep and one child per (grid point, policy), derived from the Parquet record.

Logging is idempotent: the parent is found again by its ``pdors.sweep_id`` tag and children by
``pdors.point_id``, so ``pdors sweep log`` after a tracking outage completes or refreshes what is there instead
of duplicating it. The tracking URI is MLflow's own: ``MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db``.
"""
from __future__ import annotations

import math
import time
import urllib.request
from pathlib import Path

import pandas as pd

SWEEP_TAG, POINT_TAG, PARENT_TAG = "pdors.sweep_id", "pdors.point_id", "mlflow.parentRunId"


def tracking_uri() -> str:
    import mlflow

    return mlflow.get_tracking_uri()


def check_reachable(uri: str) -> None:
    """Fail fast on a server that is down (the client would otherwise retry for minutes)."""
    if uri.startswith(("http://", "https://")):
        try:
            urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=10).read()
        except OSError as e:
            raise ConnectionError(f"MLflow tracking server {uri} is unreachable: {e}") from None


def _find(client, experiment_id: str, filter_string: str) -> list:
    runs, token = [], None
    while True:
        page = client.search_runs([experiment_id], filter_string, max_results=1000, page_token=token)
        runs += list(page)
        token = page.token
        if not token:
            return runs


def metrics(values: dict) -> list:
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    return [Metric(k, float(v), now, 0) for k, v in values.items() if v is not None and not math.isnan(v)]


def params(values: dict) -> list:
    from mlflow.entities import Param

    return [Param(k, str(v)[:6000]) for k, v in values.items()]


def _parent(client, experiment_id: str, sweep_id: str) -> str | None:
    found = _find(client, experiment_id, f"tags.`{SWEEP_TAG}` = '{sweep_id}' and tags.`pdors.role` = 'sweep'")
    return found[0].info.run_id if found else None


def attach(manifest: dict, paths: list[Path], artifact_path: str) -> str | None:
    """Attach files to a logged sweep's parent run (under ``artifact_path``); None if it was never logged."""
    from mlflow.tracking import MlflowClient

    check_reachable(tracking_uri())
    client = MlflowClient()
    experiment = client.get_experiment_by_name(manifest["experiment"])
    parent = experiment and _parent(client, experiment.experiment_id, manifest["sweep_id"])
    if not parent:
        return None
    for path in paths:
        client.log_artifact(parent, str(path), artifact_path)
    return parent


def log_sweep(manifest: dict, runs: pd.DataFrame, agg: pd.DataFrame, artifacts: list[Path]) -> str:
    """Log (or re-log) a sweep; returns the parent run id."""
    from mlflow.entities import RunTag
    from mlflow.tracking import MlflowClient

    check_reachable(tracking_uri())
    client = MlflowClient()
    name, sweep_id = manifest["experiment"], manifest["sweep_id"]
    experiment = client.get_experiment_by_name(name)
    exp_id = experiment.experiment_id if experiment else client.create_experiment(name)
    parent = _parent(client, exp_id, sweep_id) or client.create_run(
        exp_id, run_name=sweep_id, tags={SWEEP_TAG: sweep_id, "pdors.role": "sweep"}).info.run_id
    status = runs["status"].value_counts()
    client.log_batch(
        parent,
        metrics=metrics({"runs_total": manifest["tasks"], "runs_recorded": len(runs),
                          **{f"runs_{s}": int(status.get(s, 0)) for s in ("ok", "failed", "lost")}}),
        # params are immutable in MLflow: only what the sweep id determines; where and with what as tags
        params=params({"name": manifest["name"], "axes": manifest["axes"], "seeds": manifest["seeds"],
                        "policies": ",".join(manifest["config"]["policies"]), "opt": manifest["config"]["opt"]}),
        tags=[RunTag(k, str(v)) for k, v in {
            "git_commit": manifest["git_commit"], "mlflow.source.git.commit": manifest["git_commit"],
            "config": manifest["config_path"], "output": manifest["output"],
            **{f"version.{k}": v for k, v in manifest["packages"].items()}}.items()])
    for path in artifacts:
        client.log_artifact(parent, str(path), "plots" if path.suffix == ".png" else None)

    children = {r.data.tags.get(POINT_TAG): r.info.run_id
                for r in _find(client, exp_id, f"tags.`{PARENT_TAG}` = '{parent}'")}
    axes = manifest["axes"]
    for _, row in agg.iterrows():
        point = row["point_id"]
        label = " ".join([row["policy"], *(f"{a}={row[a]}" for a in axes if row[a] != "-")])
        child = children.get(point) or client.create_run(
            exp_id, run_name=label[:250],
            tags={PARENT_TAG: parent, SWEEP_TAG: sweep_id, POINT_TAG: point}).info.run_id
        stats = {k: row[k] for k in agg.columns if k.endswith((".mean", ".std"))}
        client.log_batch(child, metrics=metrics({"n": row["n"], "failed": row["failed"], **stats}),
                         params=params({"policy": row["policy"], **{a: row[a] for a in axes}}))
        client.set_terminated(child)
    client.set_terminated(parent)
    return parent
