"""The docs say what the repository holds: every module is in docs/ARCHITECTURE.md's module map, and every
repository path a doc names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pdors", "offline_opt", "pipeline", "studies", "pdors_cli")
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "docs" / "appendix").glob("*.md")])
# a path into the repository: one of its top-level folders, then a name
PATH = re.compile(
    r"(?<![\w./<-])((?:pdors|offline_opt|pipeline|studies|pdors_cli|tests|configs|docs|infra|traces)/[\w./<>{}*,-]*[\w>}*])"
)
LINK = re.compile(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)")  # a relative Markdown link


def module_map() -> set[str]:
    """The paths the ``## Modules`` block of docs/ARCHITECTURE.md lists: a line ``name/`` opens a folder at its
    indentation; ``a.py`` or ``a.py, b.py`` at the start of a line names modules in the folder above it."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    block = text.split("## Modules", 1)[1].split("```", 2)[1]
    listed: set[str] = set()
    folders: list[str] = []
    for line in block.splitlines():
        indent = (len(line) - len(line.lstrip())) // 2
        folder = re.match(r"(\w+/)(\s|$)", line.strip())
        modules = re.match(r"(\w+\.py(, \w+\.py)*)(\s|$)", line.strip())
        if folder:
            folders = [*folders[:indent], folder.group(1)]
        elif modules:
            listed.update("".join(folders[:indent]) + name for name in modules.group(1).split(", "))
    return listed


def test_every_module_is_in_the_architecture_map() -> None:
    listed = module_map()
    modules = sorted(
        str(p.relative_to(ROOT)) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py") if p.name != "__init__.py"
    )
    missing = [m for m in modules if m not in listed]
    hints = [
        f"{m}: add a line `{m.rsplit('/', 1)[1]}  <what it is>` under `{m.rsplit('/', 1)[0]}/` in the module map"
        for m in missing
    ]
    assert not missing, "docs/ARCHITECTURE.md's module map (## Modules) misses:\n" + "\n".join(hints)
    gone = sorted(p for p in listed if not (ROOT / p).exists())
    assert not gone, f"docs/ARCHITECTURE.md's module map lists modules that do not exist: {', '.join(gone)}"


def test_every_path_a_doc_names_exists() -> None:
    wrong = []
    for doc in DOCS:
        text = doc.read_text()
        for n, line in enumerate(text.splitlines(), 1):
            named = [(ROOT, p) for p in PATH.findall(line)]
            named += [(doc.parent, p) for p in LINK.findall(line) if not p.startswith(("http", "mailto"))]
            for base, path in named:
                if any(c in path for c in "<>*{}") or path.startswith(("docs/figures/", "results/")):
                    continue  # a pattern, or an output written by a command
                if not (base / path).exists():
                    wrong.append(f"{doc.relative_to(ROOT)}:{n}: {path}")
    assert not wrong, "paths named in the docs that do not exist:\n" + "\n".join(wrong)


def test_the_readme_starts_with_the_two_commands_and_leads_to_the_architecture() -> None:
    readme = (ROOT / "README.md").read_text()
    assert readme.startswith("```\nmake run ") and "\nmake test " in readme.split("```")[1]
    first_doc = re.search(r"docs/\w+\.md", readme)
    assert first_doc is not None and first_doc.group(0) == "docs/ARCHITECTURE.md"


def test_the_pdors_step_table_names_functions_that_exist() -> None:
    import importlib

    import pdors.policies.pdors as module

    doc = module.__doc__ or ""
    table = doc.split("Here (fast path)", 1)[1]
    names = set(re.findall(r"``(\w+(?:\.\w+)+)``", table))
    assert names, "the step table of pdors/policies/pdors.py names no function"
    places = {
        "PDORS": "pdors.policies.pdors",
        "SlotCosts": "pdors.primal_dual.slot_cost",
        "SlotPrices": "pdors.primal_dual.prices",
    }
    for name in names:
        head, *rest = name.split(".")
        where = places.get(head, f"pdors.primal_dual.{head}")
        target = importlib.import_module(where)
        for part in rest if head not in places else [head, *rest]:
            assert hasattr(target, part), f"pdors/policies/pdors.py's step table names {name}: {where} has no {part}"
            target = getattr(target, part)


def test_no_argument_parsing_outside_the_cli() -> None:
    """docs/ARCHITECTURE.md, "One CLI convention": no ``argparse`` outside ``pdors_cli/``."""
    parsing = sorted(
        str(p.relative_to(ROOT))
        for pkg in PACKAGES
        if pkg != "pdors_cli"
        for p in (ROOT / pkg).rglob("*.py")
        if re.search(r"^\s*(import argparse|from argparse import)", p.read_text(), re.M)
    )
    assert not parsing, f"argparse outside pdors_cli/: {', '.join(parsing)}"
