"""Atomic file writes: a file is either absent, its old content, or its whole new content, whatever stops the
writer (a full disk, a kill, a power cut).

Every writer writes a hidden temp file beside the target (``.tmp-<pid>-<name>``, which readers and dataset
discovery skip), flushes it to disk, renames it over the target and syncs the directory, so the rename itself
is durable.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import InputError

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


@contextmanager
def lock_file(path: str | Path) -> Iterator[int]:
    """A lock file's descriptor: created if absent (mode 0600), never truncated, and never a symlink's target
    (``O_NOFOLLOW``: a ``.lock`` planted as a link to another file is refused, that file untouched)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise InputError(f"{path} is a symbolic link; a lock file must be a regular file (remove it)") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(f"{path} is not a regular file; a lock file must be one (remove it)")
        yield fd
    finally:
        os.close(fd)


def write(path: str | Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` atomically."""
    with replacing(path) as tmp:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
