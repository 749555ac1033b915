"""What a sweep prints fits a terminal of :data:`WIDTH` columns: long lines break between their clauses
(``"; "``) and paths under the working directory are shown relative to it (as the user typed ``--out``)."""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path
from typing import TextIO

WIDTH = 120
INDENT = "  "  # a continued line
KEEP = "\x00"  # stands for a space inside a `command` while wrapping: a command stays whole, to copy


def fit(line: str, width: int = WIDTH) -> str:
    """``line`` as lines of at most ``width`` columns: clauses (ending in ``"; "``) packed greedily, a clause
    longer than a line broken at spaces (a word longer than a line, e.g. a URL or a `command`, stays whole)."""
    if len(line) <= width:
        return line
    parts = line.split("`")
    line = "`".join(p.replace(" ", KEEP) if k % 2 else p for k, p in enumerate(parts))
    clauses = [c + ";" for c in line.split("; ")]
    clauses[-1] = clauses[-1][:-1]
    out: list[str] = []
    for clause in clauses:
        joined = f"{out[-1]} {clause}" if out else clause
        if out and len(joined) <= width:
            out[-1] = joined
            continue
        first = INDENT if out else ""
        out += textwrap.wrap(
            clause,
            width,
            initial_indent=first,
            subsequent_indent=INDENT,
            break_long_words=False,
            break_on_hyphens=False,
        )
    return "\n".join(out).replace(KEEP, " ")


def shown(path: Path | str) -> str:
    """``path`` relative to the working directory when it lies under it, else absolute."""
    full = Path(path).absolute()
    try:
        return str(full.relative_to(Path.cwd()))
    except ValueError:
        return os.path.normpath(full)


class Lines:
    """A progress bar's stream into a file or a pipe (a log): each redraw on a line of its own, where a terminal
    would overwrite it after a carriage return (else the log holds every redraw joined on one line)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        for part in re.split(r"[\r\n]", text):
            if part.strip():
                self.stream.write(part.rstrip() + "\n")
        return len(text)

    def flush(self) -> None:
        self.stream.flush()
