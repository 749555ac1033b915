"""The one Markdown table and the one number format of every printed table (commands, studies, reports)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def number(x: float | None, spec: str = ".4f") -> str:
    """``x`` in format ``spec``; ``n/a`` where there is no value."""
    return "n/a" if x is None else format(x, spec)


def table(head: Sequence[str], rows: Iterable[Sequence[object]], align: Sequence[str] | None = None) -> str:
    """A Markdown table of ``rows`` (cells already text, or printed with ``str``) under ``head``; ``align``: one
    separator per column (``---``, ``---:``), default left."""
    separators = align or ["---"] * len(head)
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(separators) + " |"]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows]
    return "\n".join(lines)
