"""Instances to and from JSON. Floats are written with ``repr`` precision, so a round trip is exact."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import numpy as np

from .model import Cluster, Instance, Jobs


def to_dict(instance: Instance) -> dict:
    return {
        "format": "pdors-instance/1",
        "slots": instance.slots,
        "resources": list(instance.cluster.resources),
        "capacity": instance.cluster.capacity.tolist(),
        "jobs": {f.name: getattr(instance.jobs, f.name).tolist() for f in fields(Jobs)},
        "meta": instance.meta,
        **({} if instance.ps_bandwidth is None else {"ps_bandwidth": instance.ps_bandwidth.tolist()}),
        **({} if instance.ps_at_most_workers else {"ps_at_most_workers": False}),
    }


def from_dict(data: dict) -> Instance:
    """Rebuild an instance; a malformed document raises ``ValueError`` naming the field."""
    if not isinstance(data, dict) or data.get("format") != "pdors-instance/1":
        raise ValueError("format: not a pdors-instance/1 document")
    for key in ("slots", "resources", "capacity", "jobs"):
        if key not in data:
            raise ValueError(f"{key}: required")
    names = {f.name for f in fields(Jobs)}
    given = set(data["jobs"]) | {"utility_form"}  # optional: documents before it hold sigmoid utilities only
    if given != names:
        missing, extra = sorted(names - given), sorted(given - names)
        raise ValueError(f"jobs: missing {missing}" if missing else f"jobs: unknown {extra}")
    try:
        jobs = Jobs(**{k: np.asarray(v) for k, v in data["jobs"].items()})
        cluster = Cluster(np.asarray(data["capacity"], dtype=float), tuple(data["resources"]))
    except (TypeError, ValueError) as e:
        raise ValueError(f"jobs: {e}") from None
    ps_bandwidth = data.get("ps_bandwidth")
    return Instance(
        jobs,
        cluster,
        int(data["slots"]),
        dict(data.get("meta", {})),
        None if ps_bandwidth is None else np.asarray(ps_bandwidth, dtype=float),
        bool(data.get("ps_at_most_workers", True)),
    )


def save(instance: Instance, path: str | Path) -> None:
    Path(path).write_text(json.dumps(to_dict(instance)))


def load(path: str | Path) -> Instance:
    try:
        data = json.loads(Path(path).read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e})") from None
    return from_dict(data)
