"""The one YAML loader of every config file and override value: bounded in size, alias expansion and nesting,
and strict about duplicate keys.

PyYAML shares an aliased node rather than copying it, so loading an alias bomb is cheap; it is every later walk
over the data (validation, ``repr``, a deep copy) that expands it. The composed node graph is therefore measured
before anything is constructed: the nodes the document expands to beyond its own may not exceed
``ALIAS_BUDGET``. A key given twice in one mapping (two ``grid:`` blocks) is an error naming both lines, not
the silent "last one wins" of plain YAML.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .config import quote
from .errors import ConfigError, shorten

MAX_BYTES = 2**20  # a million-run sweep's config is a few hundred bytes; composing 1 MiB of YAML takes about 1 s
ALIAS_BUDGET = 10_000  # nodes aliases may add to a document (a shared block of parameters needs a few dozen)
MERGE_TAG = "tag:yaml.org,2002:merge"
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _duplicate(node: MappingNode) -> str | None:
    """The first key given twice in a mapping, with both lines (linear: one dict of keys seen)."""
    seen: dict[tuple[str, str], int] = {}
    for key, _ in node.value:
        if not isinstance(key, ScalarNode) or key.tag == MERGE_TAG:
            continue
        line = key.start_mark.line + 1
        if (key.tag, key.value) in seen:
            return f"line {line}: duplicate key {quote(key.value)} (first at line {seen[key.tag, key.value]})"
        seen[key.tag, key.value] = line
    return None


def _check(root: Node) -> str | None:
    """Why the composed document is refused (a duplicate key, a recursive alias, aliases expanding beyond the
    budget), or None. Iterative post-order walk with a memo per node, so that shared nodes are sized once."""
    size: dict[int, int] = {}
    cap = 1 << 62
    stack: list[tuple[Node, bool]] = [(root, False)]
    open_: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_.discard(key)
            size[key] = min(cap, 1 + sum(size[id(c)] for c in _children(node)))
            continue
        if key in size:
            continue
        if key in open_:
            return f"line {node.start_mark.line + 1}: recursive alias"
        if isinstance(node, MappingNode) and (why := _duplicate(node)):
            return why
        open_.add(key)
        stack.append((node, True))
        for child in _children(node):
            if isinstance(child, ScalarNode):  # a leaf: sized here, never stacked
                size[id(child)] = 1
            elif id(child) in open_:
                return f"line {child.start_mark.line + 1}: recursive alias"
            elif id(child) not in size:
                stack.append((child, False))
    extra = size[id(root)] - len(size)
    if extra > ALIAS_BUDGET:
        return f"aliases expand the document by over {ALIAS_BUDGET:,} nodes (an alias bomb?)"
    return None


def size_problem(size: int) -> str | None:
    """Why a document of ``size`` bytes is refused unread, or None."""
    return f"{size:,} bytes, over the limit of {MAX_BYTES:,} for a YAML document" if size > MAX_BYTES else None


def load(text: str | bytes, where: str) -> Any:
    """The data of one YAML document; a :class:`ConfigError` at ``where`` (the file or field) if it is too
    large, not YAML, or refused by :func:`_check`."""
    if why := size_problem(len(text)):
        raise ConfigError(where, why)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        why = _check(node)
        if why is not None:
            raise ConfigError(where, why)
        return loader.construct_document(node)
    except yaml.YAMLError as e:
        raise ConfigError(where, f"not valid YAML: {shorten(' '.join(str(e).split()), 300)}") from None
    except RecursionError:
        raise ConfigError(where, "nested too deeply") from None
    except ConfigError:
        raise
    except ValueError as e:  # an integer of thousands of digits (Python refuses to convert it)
        raise ConfigError(where, f"a value cannot be read: {shorten(str(e), 120)}") from None
    finally:
        loader.dispose()
