"""Realised allocations of a run: integer workers and PSs per (slot, job, machine), plus the claims a
simulator makes about them (locality and restarts per slot, completion slot per job) for the validator to
check."""

from __future__ import annotations

import hashlib
import mmap
from dataclasses import dataclass

import numpy as np

from .compact import compact_repr
from .config import JSON
from .model import Instance

DIGEST_BLOCK_CELLS = 1 << 20  # cells per block scanned by :meth:`Schedule.digest` and :meth:`Schedule.horizon`
NUMPY_HUGE_PAGE_BYTES = 1 << 22  # NumPy advises huge pages for allocations from 4 MiB on


@dataclass(kw_only=True)
class Schedule:
    """``workers[t, i, h]`` = w_ih[t], ``servers[t, i, h]`` = s_ih[t]; ``admitted[i]`` = x_i.

    ``claimed_internal[t, i]``, ``claimed_restart[t, i]`` and ``claimed_completion[i]`` (-1 for none) are what
    the simulator believed; the validator recomputes them from the counts alone.

    ``restart_loss`` is the fraction of a slot's samples a job loses in a *restart* slot: it has workers, it
    had workers in some earlier slot, and its placement (workers and PSs per machine) differs from the previous
    slot's (a checkpoint-restart, as Pollux pays it). 0 (the default) makes restarts free.
    """

    workers: np.ndarray
    servers: np.ndarray
    admitted: np.ndarray
    claimed_internal: np.ndarray
    claimed_completion: np.ndarray
    claimed_restart: np.ndarray
    restart_loss: float = 0.0

    def __repr__(self) -> str:
        return compact_repr(self)

    @classmethod
    def empty(cls, instance: Instance, restart_loss: float = 0.0) -> Schedule:
        shape = (instance.slots, instance.num_jobs, instance.num_machines)
        return cls(
            workers=_zeros_by_page(shape, np.int32),
            servers=_zeros_by_page(shape, np.int32),
            admitted=np.zeros(instance.num_jobs, dtype=bool),
            claimed_internal=np.zeros(shape[:2], dtype=bool),
            claimed_completion=np.full(instance.num_jobs, -1, dtype=np.int64),
            claimed_restart=np.zeros(shape[:2], dtype=bool),
            restart_loss=float(restart_loss),
        )

    def horizon(self) -> int:
        """1 + the last slot with a non-zero count or a claimed restart: every cell from there on is zero, so a
        long horizon's idle tail need not be looked at cell by cell."""
        return _horizon((self.workers, self.servers, self.claimed_restart))

    def digest(self) -> str:
        """A hex fingerprint of the allocations: the shape [T, I, H] as int64, then one (flat index, workers, PSs)
        int64 triple per non-zero cell in index order, then the admissions. Equal digests mean identical
        schedules; the cost is a pass over the slots up to the horizon of the counts and the hashing of the
        non-zero cells, not of T x I x H."""
        h = hashlib.blake2b(digest_size=16)
        h.update(np.array(self.workers.shape, dtype="<i8").tobytes())
        used, cells = _horizon((self.workers, self.servers)), self.workers[0].size
        step = max(1, DIGEST_BLOCK_CELLS // max(1, cells))  # in blocks of slots: the triples' bytes are the same
        for start in range(0, used, step):
            w, s = (a[start : min(start + step, used)].reshape(-1) for a in (self.workers, self.servers))
            at = np.flatnonzero(w | s)
            h.update(np.stack([at + start * cells, w[at], s[at]], axis=1).astype("<i8").tobytes())
        h.update(np.ascontiguousarray(self.admitted, dtype="<i8").data)
        return h.hexdigest()

    def to_sparse(self) -> JSON:
        """JSON-friendly form: one entry per non-zero (slot, job, machine) cell."""
        t, i, h = np.nonzero(self.workers | self.servers)
        return {
            "cells": [
                [int(a), int(b), int(c), int(self.workers[a, b, c]), int(self.servers[a, b, c])]
                for a, b, c in zip(t, i, h, strict=False)
            ],
            "admitted": self.admitted.astype(int).tolist(),
            "restart_loss": self.restart_loss,
        }


def _horizon(arrays: tuple[np.ndarray, ...]) -> int:
    """1 + the last slot (first axis) where any of ``arrays`` is non-zero, 0 if none. Blocks of slots are counted
    from the end (``np.count_nonzero``, at memory speed) until one holds something."""
    step = max(1, DIGEST_BLOCK_CELLS // max(1, arrays[0][0].size))
    for end in range(len(arrays[0]), 0, -step):
        start = max(0, end - step)
        if any(int(np.count_nonzero(a[start:end])) for a in arrays):
            used = np.zeros(end - start, dtype=bool)
            for a in arrays:
                used |= a[start:end].reshape(end - start, -1).any(axis=1)
            last: int = start + int(np.flatnonzero(used)[-1]) + 1
            return last
    return 0


def _zeros_by_page(shape: tuple[int, ...], dtype: type[np.generic]) -> np.ndarray:
    """Zeros in anonymous memory that the kernel backs page by page as it is written. ``np.zeros`` asks for huge
    pages (2 MiB) on an array this large, so the few cells of a sparse schedule, spread over all slots, would make
    the whole [T, I, H] array resident (docs/PERFORMANCE.md, "PD-ORS at 1000 x 1000")."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    if size < NUMPY_HUGE_PAGE_BYTES:  # np.zeros asks for no huge page, and costs no mmap call per array
        return np.zeros(shape, dtype=dtype)
    return np.frombuffer(mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE), dtype=dtype).reshape(shape)
