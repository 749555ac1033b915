"""Where this machine's sweeps were written: a small index of output roots, so that ``pdors sweep
status|list|report|log`` find a sweep run with any ``--out`` (not only under ``results/``).

The index is one file, ``sweep-roots.txt``, in ``$PDORS_RESULTS`` if set, else the user's data directory
(``$XDG_DATA_HOME/pdors``, default ``~/.local/share/pdors``): one absolute output root per line, appended when a
sweep's manifest is first written. Roots that no longer hold sweeps are skipped when read; an index that
cannot be written (read-only home) only costs finding the sweep by its ``--out``.
"""

from __future__ import annotations

import os
from pathlib import Path

INDEX_ENV = "PDORS_RESULTS"
INDEX_NAME = "sweep-roots.txt"
MAX_BYTES = 1 << 20  # read at most this much: the index is a list of paths


def index_path() -> Path:
    base = os.environ.get(INDEX_ENV)
    if base:
        return Path(base) / INDEX_NAME
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "pdors" / INDEX_NAME


def roots() -> list[Path]:
    """Every indexed output root that still has a ``sweeps/`` directory, in the order first recorded."""
    path = index_path()
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(MAX_BYTES)
    except OSError:
        return []
    found = dict.fromkeys(Path(line) for line in text.splitlines() if line.startswith("/"))
    return [root for root in found if (root / "sweeps").is_dir()]


def remember(root: Path) -> None:
    """Add the output root ``root`` to the index (once); a failure to write is ignored (see module doc)."""
    root = Path(root).resolve()
    if root in roots():
        return
    path = index_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:  # one short append: atomic between concurrent sweeps
            f.write(f"{root}\n")
    except OSError:
        return
