"""Which recorded sweeps a user means: a config path, a sweep id, a sweep directory, an output root, or nothing
(the latest sweep). Used by ``pdors sweep status|log|list`` and ``pdors report``."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from pdors.errors import SweepError
from pipeline.record import sweep_index
from pipeline.record.storage import Store, manifest_of

SEARCH_ROOT = Path("results")  # where sweeps are looked for when no --out is given (every output root below it)
CONFIG_SUFFIXES = (".yaml", ".yml")


NO_SWEEP_HINT = "run one first: `pdors sweep run configs/quickstart.yaml` (or `make run`)"


def _local() -> list[Path]:
    """The manifests under ``results/`` of the working directory (every output root below it)."""
    return sorted(SEARCH_ROOT.glob("**/sweeps/*/manifest.json")) if SEARCH_ROOT.is_dir() else []


def _manifests(out: str | None) -> list[Path]:
    """The manifests under ``out``, else under ``results/`` and every output root in the sweep index."""
    if out is not None:
        return sorted((Path(out) / "sweeps").glob("*/manifest.json"))
    local = _local()
    indexed = [m for root in sweep_index.roots() for m in sorted((root / "sweeps").glob("*/manifest.json"))]
    seen = {m.resolve() for m in local}
    return local + [m for m in indexed if m.resolve() not in seen]


def _store(manifest: Path) -> Store:
    return Store(manifest.parent.parent.parent, manifest.parent.name)


def _created(manifest: Path) -> str:
    """When a sweep was created ("" if its manifest is damaged: reading the sweep then says so, with the fix)."""
    try:
        return manifest_of(_store(manifest)).created_at
    except SweepError:
        return ""


def sweeps_under(out: str | None) -> list[Store]:
    """Every sweep under the output root ``out`` (default: every root under ``results/``), oldest first."""
    return _oldest_first(_manifests(out))


def latest_sweep(out: str | None) -> Store:
    """The latest sweep under ``out``; without ``out``, the latest under ``results/`` of the working directory, and
    only when there is none the latest among the other roots this machine's sweeps were written to."""
    found = _manifests(out) if out is not None else (_local() or _manifests(None))
    if not found:
        where = out or f"{SEARCH_ROOT}/ (nor in another root of this machine's sweeps)"
        raise SweepError(f"no sweeps under {where}; {NO_SWEEP_HINT}")
    return _oldest_first(found)[-1]


def _oldest_first(found: list[Path]) -> list[Store]:
    if len(found) < 2:  # nothing to order: no manifest read twice
        return [_store(m) for m in found]
    created = {m: _created(m) for m in found}
    return [_store(m) for m in sorted(found, key=lambda m: (created[m], str(m)))]


def _is_config(path: Path) -> bool:
    return path.is_file() and path.suffix in CONFIG_SUFFIXES


def _from_config(path: Path, out: str | None, overrides: list[str]) -> Store:
    """The sweep ``pdors sweep run PATH OVERRIDES`` names. Without overrides and when the config as written has
    not run: the latest recorded sweep of the same config name under the root (any overrides), said so, with
    the others listed."""
    from pipeline.spec import grid, schema

    with schema.blame(overrides):
        plan = grid.expand(schema.load(path, overrides))
    root = Path(out or plan.config.output)
    store = Store(root, plan.sweep_id)
    if (store.meta / "manifest.json").is_file():
        return store
    if out is None:  # run with another --out: the index knows where
        elsewhere = [m for m in _manifests(None) if m.parent.name == plan.sweep_id]
        if elsewhere:
            return _store(elsewhere[-1])
    again = shlex.join(["pdors", "sweep", "run", str(path), *overrides, *(["--out", out] if out else [])])
    same = [s for s in sweeps_under(str(root)) if manifest_name(s) == plan.config.name]
    if overrides or not same:
        raise SweepError(f"{path}: its sweep {plan.sweep_id} has not run under {root} (`{again}`)")
    latest, others = same[-1], same[:-1]
    print(
        f"{path}: its sweep {plan.sweep_id} has not run under {root}; naming the latest sweep of config "
        f"{plan.config.name!r}: {latest.sweep_id} ({_overrides_of(latest)})",
        flush=True,
    )
    for s in others:
        print(f"  also under {root}: {s.sweep_id} ({_overrides_of(s)})", flush=True)
    return latest


def manifest_name(store: Store) -> str:
    return manifest_of(store).name


def _overrides_of(store: Store) -> str:
    given = manifest_of(store).overrides
    return "with " + shlex.join(given) if given else "no overrides"


def locate(target: str | None, out: str | None = None, overrides: Sequence[str] = ()) -> list[Store]:
    """The sweeps ``target`` names: a sweep config with ``overrides`` (the sweep ``pdors sweep run`` with the same
    arguments names, under ``out``, default the config's ``output``; see :func:`_from_config`),
    a sweep directory (``<root>/sweeps/<id>``), an output root (every sweep in it), a sweep id (under ``out``,
    else under ``results/``), or None: the latest sweep under ``out`` (:func:`latest_sweep`)."""
    if overrides and not (target is not None and _is_config(Path(target))):
        raise SweepError(f"KEY=VALUE: overrides ({shlex.join(overrides)}) apply only after a sweep config")
    if target is None:
        return [latest_sweep(out)]
    path = Path(target)
    if _is_config(path):
        return [_from_config(path, out, list(overrides))]
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
    named = [m for m in _manifests(out) if m.parent.name == target]
    local = {m.resolve() for m in _local()} if out is None else set()
    found = [m for m in named if m.resolve() in local] or named  # results/ here first, as for the latest sweep
    if not found:
        raise SweepError(
            f"{target!r}: no such sweep config, directory, or sweep id under "
            f"{out or str(SEARCH_ROOT) + '/'} (`pdors sweep list` lists sweeps)"
        )
    return [_store(m) for m in found]
