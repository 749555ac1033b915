"""Reading an input file with a byte limit on the stream: regular files only, never more than ``limit + 1``
bytes read, whatever ``stat`` says (``/dev/zero`` reports size 0 and never ends; a FIFO blocks a plain
``open``)."""

from __future__ import annotations

import os
import stat
from pathlib import Path


class InputTooLarge(ValueError):
    """The input is not a regular file, or holds more than the limit (one line, naming the file)."""


def read(path: str | Path, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them; ``InputTooLarge`` otherwise.
    ``FileNotFoundError`` and other ``OSError`` pass through (callers name the missing file)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO opens without waiting for a writer
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputTooLarge(f"{path}: not a regular file (devices, pipes and sockets are refused)")
        chunks, held = [], 0
        while held <= limit and (chunk := os.read(fd, min(1 << 20, limit + 1 - held))):
            chunks.append(chunk)
            held += len(chunk)
        if held > limit:
            raise InputTooLarge(f"{path}: over the limit of {limit:,} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)
