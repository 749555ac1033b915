"""Which recorded sweeps a user means: a config path, a sweep id, a sweep directory, an output root, or nothing
(the latest sweep). Used by ``pdors sweep status|log|list`` and ``pdors report``."""

from __future__ import annotations

import json
from pathlib import Path

from .storage import Store, SweepError

SEARCH_ROOT = Path("results")  # where sweeps are looked for when no --out is given (every output root below it)
CONFIG_SUFFIXES = (".yaml", ".yml")


def _manifests(out: str | None) -> list[Path]:
    if out is not None:
        return sorted((Path(out) / "sweeps").glob("*/manifest.json"))
    return sorted(SEARCH_ROOT.glob("**/sweeps/*/manifest.json")) if SEARCH_ROOT.is_dir() else []


def _store(manifest: Path) -> Store:
    return Store(manifest.parent.parent.parent, manifest.parent.name)


def _created(manifest: Path) -> str:
    """When a sweep was created ("" if its manifest is damaged: reading the sweep then says so, with the fix)."""
    try:
        data = json.loads(manifest.read_bytes())
    except ValueError:
        return ""
    return str(data.get("created_at", "")) if isinstance(data, dict) else ""


def sweeps_under(out: str | None) -> list[Store]:
    """Every sweep under the output root ``out`` (default: every root under ``results/``), oldest first."""
    found = _manifests(out)
    created = {m: _created(m) for m in found}
    return [_store(m) for m in sorted(found, key=lambda m: (created[m], str(m)))]


def _from_config(path: Path, out: str | None) -> Store:
    from . import grid, schema

    plan = grid.expand(schema.load(path))
    root = Path(out or plan.config.output)
    store = Store(root, plan.sweep_id)
    if not (store.meta / "manifest.json").is_file():
        raise SweepError(
            f"{path}: its sweep {plan.sweep_id} has not run under {root} (`pdors sweep run {path}`"
            f"{'' if out is None else ' --out ' + out})"
        )
    return store


def locate(target: str | None, out: str | None = None) -> list[Store]:
    """The sweeps ``target`` names: a sweep config (its sweep under ``out``, default the config's ``output``),
    a sweep directory (``<root>/sweeps/<id>``), an output root (every sweep in it), a sweep id (under ``out``,
    else under ``results/``), or None: the latest sweep under ``out`` (else under ``results/``)."""
    if target is None:
        stores = sweeps_under(out)
        if not stores:
            raise SweepError(f"no sweeps under {out or str(SEARCH_ROOT) + '/'}")
        return stores[-1:]
    path = Path(target)
    if path.is_file() and path.suffix in CONFIG_SUFFIXES:
        return [_from_config(path, out)]
    if (path / "manifest.json").is_file():
        return [Store(path.parent.parent, path.name)]
    if (path / "sweeps").is_dir():
        stores = sweeps_under(str(path))
        if not stores:
            raise SweepError(f"{path}: no recorded sweep under {path / 'sweeps'}")
        return stores
    if path.exists() or path.suffix in CONFIG_SUFFIXES:
        raise SweepError(
            f"{path}: neither a sweep config, a sweep directory (with manifest.json) nor an output root (with sweeps/)"
        )
    found = [m for m in _manifests(out) if m.parent.name == target]
    if not found:
        raise SweepError(
            f"{target!r}: no such sweep config, directory, or sweep id under "
            f"{out or str(SEARCH_ROOT) + '/'} (`pdors sweep list` lists sweeps)"
        )
    return [_store(m) for m in found]
