"""The layers: pdors (library) <- offline_opt <- pipeline <- studies <- pdors_cli. No import cycle between the project's
modules, and no lower layer imports a higher one; function-local imports count.

Inside pipeline, the stages (docs/ARCHITECTURE.md): text <- spec <- record <- execute <- sweep <- results <- publish
<- nightly, with the package's facade (``pipeline/__init__.py``) above them all: a module imports its own stage and
those below it, never one above."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("pdors", "offline_opt", "pipeline", "studies", "pdors_cli")  # lowest first
STAGES = ("text", "spec", "record", "execute", "sweep", "results", "publish", "nightly", "")  # lowest first; "": facade


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path, modules: set[str]) -> set[str]:
    """The project modules ``path`` imports (``from a import b`` counts as ``a.b`` when that is a module)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for target in targets:  # the deepest project module the name refers to
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    files = [p for layer in LAYERS for p in sorted((root / layer).rglob("*.py"))]
    modules = {module_name(p, root) for p in files}
    return {module_name(p, root): imports_of(p, root, modules) for p in files}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return [*stack[stack.index(n) :], n]
            if n not in state and (cycle := visit(n)):
                return cycle
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (cycle := visit(m)):
            return cycle
    return None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    rank = {layer: k for k, layer in enumerate(LAYERS)}
    return sorted(
        f"{m} -> {n}" for m, deps in graph.items() for n in deps if rank[n.split(".")[0]] > rank[m.split(".")[0]]
    )


def stage_of(module: str) -> str:
    """``pipeline.record.storage`` -> ``record``; ``pipeline.sweep`` -> ``sweep``; ``pipeline`` -> the facade."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def upward_stage_imports(graph: dict[str, set[str]]) -> list[str]:
    rank = {stage: k for k, stage in enumerate(STAGES)}
    inside = {m: deps for m, deps in graph.items() if m.split(".")[0] == "pipeline"}
    return sorted(
        f"{m} -> {n}"
        for m, deps in inside.items()
        for n in deps
        if n.split(".")[0] == "pipeline" and rank[stage_of(n)] > rank[stage_of(m)]
    )


def test_the_project_has_no_import_cycle_and_no_upward_import():
    graph = import_graph()
    assert len(graph) > 50 and "pipeline.record.storage" in graph["pipeline.sweep"]  # the walk sees the project
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))
    assert upward_imports(graph) == []


def test_pipeline_stages_import_only_their_own_and_lower_stages():
    graph = import_graph()
    stages = {stage_of(m) for m in graph if m.split(".")[0] == "pipeline"}
    assert stages == set(STAGES), "a pipeline module outside the named stages"
    assert upward_stage_imports(graph) == []
    assert sorted(p.name for p in (ROOT / "pipeline").glob("*.py")) == ["__init__.py", "sweep.py"]


def test_the_stage_rule_catches_an_import_from_a_higher_stage():
    graph = {"pipeline.record.storage": {"pipeline.results.summary", "pipeline.spec.schema"}, "pipeline": set()}
    assert upward_stage_imports(graph) == ["pipeline.record.storage -> pipeline.results.summary"]


def test_the_checks_catch_a_cycle_and_an_upward_import(tmp_path):
    """The same checks on a small tree with a function-local cycle and a library module importing the pipeline."""
    for layer in LAYERS:
        (tmp_path / layer).mkdir()
        (tmp_path / layer / "__init__.py").write_text("")
    (tmp_path / "pdors" / "a.py").write_text("from . import b\n")
    (tmp_path / "pdors" / "b.py").write_text("def f():\n    from .a import g\n")
    (tmp_path / "pdors" / "c.py").write_text("def f():\n    import pipeline.sweep\n")
    (tmp_path / "pipeline" / "sweep.py").write_text("from pdors import c\n")
    graph = import_graph(tmp_path)
    assert find_cycle(graph) in (["pdors.a", "pdors.b", "pdors.a"], ["pdors.c", "pipeline.sweep", "pdors.c"])
    assert upward_imports(graph) == ["pdors.c -> pipeline.sweep"]
