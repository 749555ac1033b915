"""Realised allocations of a run: integer workers and PSs per (slot, job, machine), plus the claims a
simulator makes about them (locality per slot, completion slot per job) for the validator to check."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import Instance


@dataclass
class Schedule:
    """``workers[t, i, h]`` = w_ih[t], ``servers[t, i, h]`` = s_ih[t]; ``admitted[i]`` = x_i.

    ``claimed_internal[t, i]`` and ``claimed_completion[i]`` (-1 for none) are what the simulator believed;
    the validator recomputes both from the counts alone.
    """

    workers: np.ndarray
    servers: np.ndarray
    admitted: np.ndarray
    claimed_internal: np.ndarray
    claimed_completion: np.ndarray

    @classmethod
    def empty(cls, instance: Instance) -> "Schedule":
        shape = (instance.slots, instance.num_jobs, instance.num_machines)
        return cls(
            workers=np.zeros(shape, dtype=np.int32),
            servers=np.zeros(shape, dtype=np.int32),
            admitted=np.zeros(instance.num_jobs, dtype=bool),
            claimed_internal=np.zeros(shape[:2], dtype=bool),
            claimed_completion=np.full(instance.num_jobs, -1, dtype=np.int64),
        )

    def to_sparse(self) -> dict:
        """JSON-friendly form: one entry per non-zero (slot, job, machine) cell."""
        t, i, h = np.nonzero(self.workers | self.servers)
        return {
            "cells": [[int(a), int(b), int(c), int(self.workers[a, b, c]), int(self.servers[a, b, c])]
                      for a, b, c in zip(t, i, h)],
            "admitted": self.admitted.astype(int).tolist(),
        }
