"""Machine classes of a slot state: machines with identical prices and residual capacities, found by a checked
64-bit row hash (:func:`machine_classes`), their members (:class:`ClassMembers`), and the state's fingerprint."""

from __future__ import annotations

import hashlib
from typing import NamedTuple

import numpy as np

ROW_HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # odd: the row hash of :func:`machine_classes` mixes every word


def state_digest(prices: np.ndarray, free: np.ndarray) -> int:
    """A stable 64-bit fingerprint of a slot state (seeds the rounding and keys caches)."""
    h = hashlib.blake2b(digest_size=8)
    h.update(np.ascontiguousarray(prices, dtype=np.float64).data)  # the buffer itself: its bytes, not copied
    h.update(np.ascontiguousarray(free, dtype=np.float64).data)
    return int.from_bytes(h.digest(), "little")


class MachineClasses(NamedTuple):
    """Machines with identical prices and residual capacities: each class's lowest member, its size, and the
    class of every machine (classes ordered by lowest member, for deterministic ties)."""

    first: np.ndarray
    counts: np.ndarray
    member_class: np.ndarray


def row_keys(words: np.ndarray) -> np.ndarray:
    """The 64-bit hash of each row of ``words`` [H, n] (uint64): (..((w_0 m + w_1) m + w_2) m ..) + w_(n-1) modulo
    2^64 with m = ``ROW_HASH_MULTIPLIER``, i.e. sum_j w_j m^(n-1-j). Unsigned integer arithmetic wraps modulo 2^64
    whatever the order of the operations, so one matrix product gives the same keys as the column-by-column loop
    (tests/test_pdors_same_bits.py)."""
    width = words.shape[1]
    powers = np.array([pow(int(ROW_HASH_MULTIPLIER), width - 1 - j, 1 << 64) for j in range(width)], dtype=np.uint64)
    keys: np.ndarray = words @ powers
    return keys


def machine_classes(prices: np.ndarray, free: np.ndarray) -> MachineClasses:
    """The classes of a slot state (a function of the state alone, so callers may keep them per state).

    Rows are grouped by one stable sort of a 64-bit hash of their bits (-0.0 made 0.0, so that equal floats have
    equal bits), checked: if rows of one hash differ (a collision, or NaN), by one stable lexicographic sort of
    their values instead (``np.unique(axis=0)``'s grouping, float equality). Either way the groups are the same
    and the first row of each group in sorted order is its lowest member."""
    rows = np.concatenate([prices, free], axis=1) + 0.0
    key = row_keys(rows.view(np.uint64))
    order = key.argsort(kind="stable")
    ordered = rows[order]
    start = np.ones(len(order), dtype=bool)
    sorted_key = key[order]
    start[1:] = sorted_key[1:] != sorted_key[:-1]
    if not (ordered == ordered[start.nonzero()[0][start.cumsum() - 1]]).all():  # each row equals its group's first
        order = np.lexsort(rows.T[::-1])
        ordered = rows[order]
        start[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    starts = start.nonzero()[0]
    first = order[starts]
    counts = np.diff(np.append(starts, len(order)))
    by_first = first.argsort()
    rank = np.empty_like(by_first)
    rank[by_first] = np.arange(len(by_first))
    member_class = np.empty_like(order)
    member_class[order] = rank[start.cumsum() - 1]
    return MachineClasses(first[by_first], counts[by_first], member_class)


class ClassMembers:
    """Machine indices of each class, ascending: ``members[c]`` is a slice of one sorted index array (a list of
    per-class arrays would build up to H arrays per slot state, where a rounding reads a few)."""

    def __init__(self, member_class: np.ndarray, classes: int):
        self.order = np.argsort(member_class, kind="stable")
        self.sizes = np.bincount(member_class, minlength=classes)
        ends = np.cumsum(self.sizes)
        self.starts = ends - self.sizes  # members[c][0] is order[starts[c]]
        self.ends = ends.tolist()

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, c: int | np.integer) -> np.ndarray:
        return self.order[(self.ends[c - 1] if c > 0 else 0) : self.ends[c]]
