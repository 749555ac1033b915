"""Instances to and from JSON. Floats are written with ``repr`` precision, so a round trip is exact.

A file is checked like a config before any array is built: every field's type and shape, with the field named
(``jobs.arrival[3]: must be an integer, got 1.5``); value ranges are then checked by
:func:`pdors.model.instance_problems`. The file's size and the cells of its schedule (T x I x H) are bounded,
so a hostile file is refused in one line, not by a ``MemoryError``.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from . import bounded
from .config import JSON, Bounds, quote
from .errors import InputError
from .model import Cluster, Instance, Jobs

FORMAT = "pdors-instance/1"
MAX_BYTES = 64 * 2**20  # the paper's largest instance (I = 100) is about 40 KB
MAX_CELLS = 50_000_000  # T x I x H: a schedule of this many cells needs about 1.6 GB to simulate
MAX_INT = 2**53  # integers beyond this lose precision as numbers (and overflow int64 arrays soon after)
DEMANDS = ("worker_demand", "ps_demand")  # I x R; every other job field has one value per job
KEYS = ("format", "slots", "resources", "capacity", "jobs", "meta", "ps_bandwidth", "ps_at_most_workers")
OPTIONAL_JOB_FIELDS = ("utility_form",)  # documents written before it hold sigmoid utilities only


class InstanceError(InputError):
    """An instance document is malformed: ``field: reason``."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        super().__init__(f"{field}: {reason}")


def to_dict(instance: Instance) -> JSON:
    return {
        "format": FORMAT,
        "slots": instance.slots,
        "resources": list(instance.cluster.resources),
        "capacity": instance.cluster.capacity.tolist(),
        "jobs": {f.name: getattr(instance.jobs, f.name).tolist() for f in fields(Jobs)},
        "meta": instance.meta,
        **({} if instance.ps_bandwidth is None else {"ps_bandwidth": instance.ps_bandwidth.tolist()}),
        **({} if instance.ps_at_most_workers else {"ps_at_most_workers": False}),
    }


def _integer(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InstanceError(where, f"must be an integer, got {quote(value)}")
    if abs(value) > MAX_INT:
        raise InstanceError(where, f"must be at most {MAX_INT:,} in size, got {quote(value)}")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InstanceError(where, f"must be a number, got {quote(value)}")
    if not math.isfinite(value):
        raise InstanceError(where, f"must be finite, got {quote(value)}")
    return float(value)


def _list(value: Any, where: str, length: int | None = None) -> list[Any]:
    if not isinstance(value, list):
        raise InstanceError(where, f"must be a list, got {type(value).__name__} {quote(value)}")
    if length is not None and len(value) != length:
        raise InstanceError(where, f"must hold {length} entries, got {len(value)}")
    return value


def _vector(value: Any, where: str, length: int | None, integer: bool) -> list[float]:
    """A list of ``length`` integers or finite numbers, each checked."""
    check = _integer if integer else _number
    return [check(v, f"{where}[{k}]") for k, v in enumerate(_list(value, where, length))]


def _matrix(value: Any, where: str, rows: int | None, cols: int) -> list[list[float]]:
    return [_vector(row, f"{where}[{k}]", cols, False) for k, row in enumerate(_list(value, where, rows))]


# The ranges of a job's integer fields: those of the sweep config's workload (pdors.workload.WorkloadConfig), so
# E x K stays exact (10^6 x 10^9 < 2^53) and no array is sized by a value beyond what the model can run.
JOB_BOUNDS = {
    "epochs": Bounds(0, 10**6, "epochs per job (E)"),
    "samples": Bounds(0, 10**9, "samples per epoch (K)"),
    "gamma": Bounds(0, 10**4, "gamma per job"),
    "batch": Bounds(0, 10**5, "samples per worker per step"),
}


def _bounded(values: list[float], where: str) -> list[float]:
    bounds = JOB_BOUNDS.get(where.removeprefix("jobs."))
    for k, v in enumerate(values):
        if bounds is not None and (why := bounds.problem(v)):
            raise InstanceError(f"{where}[{k}]", why)
    return values


def _jobs(value: Any, resources: int) -> dict[str, list[Any]]:
    if not isinstance(value, dict):
        raise InstanceError("jobs", f"must be a mapping of per-job lists, got {type(value).__name__}")
    names = [f.name for f in fields(Jobs) if f.name in value or f.name not in OPTIONAL_JOB_FIELDS]
    known = {f.name for f in fields(Jobs)}
    missing, extra = [n for n in names if n not in value], sorted(map(str, set(value) - known))
    if missing or extra:
        raise InstanceError("jobs", f"missing {missing}" if missing else f"unknown {quote(extra)}")
    count = len(_list(value["arrival"], "jobs.arrival"))
    if count < 1:
        raise InstanceError("jobs.arrival", "must list at least one job")
    return {
        n: _matrix(value[n], f"jobs.{n}", count, resources)
        if n in DEMANDS
        else _bounded(_vector(value[n], f"jobs.{n}", count, n in Jobs._INT_FIELDS), f"jobs.{n}")
        for n in names
    }


def _flag(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise InstanceError(field, f"must be true or false, got {quote(value)}")
    return value


def _resources(value: Any) -> list[str]:
    names = _list(value, "resources")
    if not names or not all(isinstance(n, str) and n for n in names) or len(set(names)) < len(names):
        raise InstanceError("resources", f"must list distinct resource names, got {quote(value)}")
    return names


def from_dict(data: Any) -> Instance:
    """Rebuild an instance; a malformed document raises :class:`InstanceError` naming the field."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InstanceError("format", f"not a {FORMAT} document")
    if unknown := sorted(map(str, set(data) - set(KEYS))):
        raise InstanceError(quote(unknown[0]), f"unknown key (known: {', '.join(KEYS)})")
    for key in ("slots", "resources", "capacity", "jobs"):
        if key not in data:
            raise InstanceError(key, "required")
    slots = _integer(data["slots"], "slots")
    if slots < 1:
        raise InstanceError("slots", f"must be >= 1, got {slots}")
    resources = _resources(data["resources"])
    capacity = _matrix(data["capacity"], "capacity", None, len(resources))
    if not capacity:
        raise InstanceError("capacity", "must list at least one machine")
    jobs = _jobs(data["jobs"], len(resources))
    count = len(jobs["arrival"])
    if (cells := slots * count * len(capacity)) > MAX_CELLS:
        raise InstanceError(
            "slots",
            f"T={slots} x I={count} x H={len(capacity)} = {cells:,} schedule cells, over the limit of {MAX_CELLS:,}",
        )
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        raise InstanceError("meta", f"must be a mapping, got {type(meta).__name__} {quote(meta)}")
    bandwidth = data.get("ps_bandwidth")
    if bandwidth is not None:
        bandwidth = _vector(bandwidth, "ps_bandwidth", count, False)
    try:
        return Instance(
            jobs=Jobs(**{k: np.asarray(v) for k, v in jobs.items()}),
            cluster=Cluster(np.asarray(capacity, dtype=float).reshape(len(capacity), len(resources)), tuple(resources)),
            slots=slots,
            meta=dict(meta),
            ps_bandwidth=None if bandwidth is None else np.asarray(bandwidth, dtype=float),
            ps_at_most_workers=_flag(data.get("ps_at_most_workers", True), "ps_at_most_workers"),
        )
    except ValueError as e:  # value ranges (pdors.model.instance_problems), each naming its field
        field, _, reason = str(e).removeprefix("invalid instance: ").partition(": ")
        raise InstanceError(field.removeprefix("cluster."), reason) from None  # the file's name of the field


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are distinct (a repeated key is refused: which value was meant is unknowable)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise InstanceError(quote(key), "given twice in one JSON object")
        out[key] = value
    return out


def _int(text: str) -> int:
    """A JSON integer; one longer than Python converts (4,300 digits by default) is refused in one line, since no
    field can be named yet (a shorter one too large for its field is refused naming the field)."""
    digits, limit = len(text.lstrip("-")), sys.get_int_max_str_digits()
    if limit and digits > limit:
        raise InstanceError("file", f"an integer of {digits:,} digits (Python reads at most {limit:,})")
    return int(text)


def save(instance: Instance, path: str | Path) -> None:
    Path(path).write_text(json.dumps(to_dict(instance)))


def file_digest(path: str | Path) -> str:
    """SHA-256 (16 hex digits) of an instance file's bytes: part of the run ids of a sweep over instance files."""
    return hashlib.sha256(bounded.read(Path(path), MAX_BYTES)).hexdigest()[:16]


def load(path: str | Path) -> Instance:
    """The instance in a JSON file; ``ValueError`` naming the file and the field if it is not one."""
    path = Path(path)
    try:
        try:
            raw = bounded.read(path, MAX_BYTES)
        except bounded.InputTooLarge as e:
            raise InstanceError("file", str(e).removeprefix(f"{path}: ")) from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InstanceError("file", f"not UTF-8 text (byte {e.start})") from None
        try:
            data = json.loads(text, object_pairs_hook=_unique, parse_int=_int)
        except json.JSONDecodeError as e:
            raise InstanceError("file", f"not JSON ({e})") from None
        except RecursionError:
            raise InstanceError("file", "JSON nested too deeply") from None
        return from_dict(data)
    except InstanceError as e:
        raise InputError(f"{path}: {e}") from None
