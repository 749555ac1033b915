"""A sweep's manifest (``sweeps/<id>/manifest.json``): what the sweep asked for and how it was run. One reader
(:func:`parse`) turns the JSON into a typed :class:`Manifest`; every field is checked for its type there, so a
damaged or hand-edited manifest is one line naming the field, never a ``KeyError`` later.

The manifest lists the runs a sweep asked for, not the record's files: runs are shared by every sweep under an
output root and compaction merges batch files, so each batch lists its own files with their digests
(:mod:`pipeline.record.seal`).
"""

from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Manifest:
    sweep_id: str
    name: str
    config_path: str
    overrides: list[str]
    config: dict[str, Any]  # the sweep config as recorded (pdors.config.to_dict of the typed config)
    axes: list[str]
    seeds: list[int]
    tasks: int
    run_ids: list[str]
    experiment: str
    mlflow: bool
    output: str
    git_commit: str
    packages: dict[str, str]
    created_at: str = ""  # absent from manifests written before it was recorded
    resumed: list[dict[str, Any]] = field(default_factory=list)  # each resume that changed a RESUMABLE field

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=1)


def _fits(value: Any, tp: Any) -> bool:
    origin = typing.get_origin(tp) or tp
    if origin is bool:
        return isinstance(value, bool)
    if origin is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if not isinstance(value, origin):
        return False
    args = typing.get_args(tp)
    if origin is list and args:
        if args[0] is str:  # the run ids, one per task: a plain check each
            return all(isinstance(v, str) for v in value)
        return all(_fits(v, args[0]) for v in value)
    if origin is dict and args:
        return all(isinstance(k, str) and (args[1] is Any or _fits(v, args[1])) for k, v in value.items())
    return True


def parse(data: Any) -> Manifest:
    """A manifest from its decoded JSON; ValueError (one line naming the field) if it is not one."""
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    hints = typing.get_type_hints(Manifest)
    values = {}
    for f in dataclasses.fields(Manifest):
        if f.name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ValueError(f"field {f.name!r} missing")
            continue
        if not _fits(data[f.name], hints[f.name]):
            raise ValueError(f"field {f.name!r} is not a {hints[f.name]}")
        values[f.name] = data[f.name]
    manifest = Manifest(**values)
    if manifest.tasks != len(manifest.run_ids):
        raise ValueError(f"field 'tasks' is {manifest.tasks}, but 'run_ids' lists {len(manifest.run_ids)}")
    if not isinstance(manifest.config.get("policies"), list | dict):
        raise ValueError("field 'config.policies' missing")
    return manifest
