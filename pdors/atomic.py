"""Atomic file writes: a file is either absent, its old content, or its whole new content, whatever stops the
writer (a full disk, a kill, a power cut).

Every writer writes a hidden temp file beside the target (``.tmp-<pid>-<name>``, which readers and dataset
discovery skip), flushes it to disk, renames it over the target and syncs the directory, so the rename itself
is durable.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TMP_PREFIX = ".tmp-"


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """A temp path for any writer (PyArrow, Matplotlib, ``write_bytes``) to fill; once the block ends without
    an error it replaces ``path``; on an error it is removed and ``path`` is untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{TMP_PREFIX}{os.getpid()}-{path.name}")
    try:
        yield tmp
        _fsync(tmp)
        os.replace(tmp, path)
        _fsync(path.parent)
    finally:
        tmp.unlink(missing_ok=True)


def write(path: str | Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` atomically."""
    with replacing(path) as tmp:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
