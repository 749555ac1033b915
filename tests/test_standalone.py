"""The repository stands alone: no tracked file points readers at documents they do not have (the working
spec, the source texts, the stack notes). Interpretations live in docs/MODEL.md."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Spelled in pieces so that this file does not match itself.
OUTSIDE_DOCUMENTS = re.compile(
    "|".join([r"\bSP" + r"EC\b", "seeds" + r"/0\d\d", "STACK" + "[-_]NOTES", "reading" + " notes"])
)


def test_no_file_refers_to_documents_outside_the_repository():
    files = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    hits = []
    for name in files:
        path = ROOT / name
        if not path.is_file() or path.suffix in (".png", ".parquet", ".gz"):
            continue
        text = path.read_text(errors="ignore")
        hits += [
            f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group()}" for m in OUTSIDE_DOCUMENTS.finditer(text)
        ]
    assert hits == []
