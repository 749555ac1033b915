"""What a record file says about its own integrity, in its Parquet footer (key-value metadata).

Every record file written since digests exist carries ``pdors.sealed``: its digest file (``_<name>.sha256``)
must exist, so a removed digest is damage, not a file "older than digests". A runs file also lists the other
files of its batch (``pdors.files``: table -> SHA-256 of ``<table>/<batch>.parquet``), written last, after
them: a listed file that is missing or differs, or a file of the batch that is not listed, is damage. A runs file
that compaction merged lists the batches it replaced (``pdors.merged``): their runs files are gone on purpose. Files
without the mark were written before digests existed; they are read unchecked (Parquet's page checksums only),
and ``pdors sweep status`` counts them.
"""

from __future__ import annotations

import json

SEALED = b"pdors.sealed"
FILES = b"pdors.files"
MERGED = b"pdors.merged"


def metadata(files: dict[str, str] | None = None, merged: list[str] | None = None) -> dict[bytes, bytes]:
    """The footer metadata of a record file; ``files``: a runs file's partners (table -> SHA-256); ``merged``:
    the batches a compacted runs file replaced."""
    meta = {SEALED: b"1"}
    if files is not None:
        meta[FILES] = json.dumps(files, sort_keys=True).encode()
    if merged:
        meta[MERGED] = json.dumps(sorted(merged)).encode()
    return meta


def sealed(meta: dict[bytes, bytes] | None) -> bool:
    return bool(meta) and SEALED in meta  # type: ignore[operator]


def listed(meta: dict[bytes, bytes] | None) -> dict[str, str] | None:
    """The partner files a runs file lists (None: it lists none, or the listing is not a table -> digest map)."""
    raw = (meta or {}).get(FILES)
    if raw is None:
        return None
    try:
        files = json.loads(raw)
    except ValueError:
        return None
    ok = isinstance(files, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())
    return files if ok else None


def merged(meta: dict[bytes, bytes] | None) -> set[str]:
    """The batches a compacted runs file replaced (none if it lists none, or not as a list of names)."""
    raw = (meta or {}).get(MERGED)
    try:
        names = json.loads(raw) if raw is not None else []
    except ValueError:
        return set()
    return {n for n in names if isinstance(n, str)} if isinstance(names, list) else set()
