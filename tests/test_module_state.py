"""No module-level mutable state in ``pipeline/`` (docs/ARCHITECTURE.md, code style): a module-level name that one
call can change for the next would make ``pipeline.run_sweep`` not re-entrant. Checked on the source (AST):

* a lower-case or ``_private`` module-level name bound to a list, dict or set (a display, a comprehension or a
  call of the constructor) is state; ALL_CAPS names are constants (tuples, frozensets, numbers, strings, frozen
  dataclasses, or a table never written after import);
* nothing writes a module-level name from a function: no ``global``, no ``NAME[k] = ...``, no ``NAME.append``,
  ``.update``, ``.clear`` ... on a module-level name.
"""

from __future__ import annotations

import ast
from pathlib import Path

PIPELINE = Path(__file__).resolve().parent.parent / "pipeline"
MUTABLE_DISPLAYS = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)
MUTABLE_CALLS = frozenset({"list", "dict", "set", "defaultdict", "Counter", "deque", "OrderedDict", "bytearray"})
MUTATORS = frozenset(
    {"append", "extend", "insert", "remove", "pop", "popitem", "clear", "update", "setdefault", "add", "discard"}
)
ALLOWED: frozenset[str] = frozenset()  # a cache is a functools.lru_cache of a pure function, not a module global


def _bindings(tree: ast.Module) -> list[tuple[int, str, ast.expr]]:
    out = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            out += [(node.lineno, ast.unparse(t), node.value) for t in node.targets]
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            out.append((node.lineno, ast.unparse(node.target), node.value))
    return out


def module_state(source: str) -> list[tuple[int, str]]:
    """(line, name) of each piece of module-level mutable state in ``source`` (module docstring's rules)."""
    tree = ast.parse(source)
    bindings = _bindings(tree)
    names = {name for _, name, _ in bindings}
    found = []
    for line, name, value in bindings:
        called = value.func.id if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) else None
        mutable = isinstance(value, MUTABLE_DISPLAYS) or called in MUTABLE_CALLS
        if mutable and not name.isupper() and name != "__all__":
            found.append((line, name))
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Global):
                found += [(node.lineno, f"global {n}") for n in node.names]
            elif (
                isinstance(node, ast.Attribute)
                and node.attr in MUTATORS
                and isinstance(node.value, ast.Name)
                and node.value.id in names
            ):
                found.append((node.lineno, f"{node.value.id}.{node.attr}"))
            elif isinstance(node, ast.Assign | ast.AugAssign):
                for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in names:
                        found.append((node.lineno, f"{t.value.id}[...] ="))
    return found


def test_the_check_finds_what_it_looks_for() -> None:
    source = (
        "_stages: dict[str, float] = {}\nfooter = []\nC = set()\nD = (1, 2)\nTABLE = {'a': 1}\n"
        "def f():\n    global n\n    TABLE['b'] = 2\n    D.append(3)\n    local = []\n    local.append(1)\n"
    )
    assert module_state(source) == [
        (1, "_stages"),
        (2, "footer"),
        (7, "global n"),
        (8, "TABLE[...] ="),
        (9, "D.append"),
    ]


def test_no_module_level_mutable_state_in_pipeline() -> None:
    found = {
        f"{path.name} {name}": line
        for path in sorted(PIPELINE.glob("*.py"))
        for line, name in module_state(path.read_text())
    }
    assert not found.keys() - ALLOWED, f"module-level mutable state: {sorted(found.items())}"
