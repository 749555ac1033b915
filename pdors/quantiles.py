"""Order statistics of a run's few values (its decision times, its jobs' training times): NumPy's numbers, by
NumPy's float operations on a sorted list, without NumPy's per-call overhead (tests/test_tiny_runs.py compares
them with ``np.percentile`` and ``np.median``)."""

from __future__ import annotations

import math


def percentile(ordered: list[float], q: float) -> float:
    """``np.percentile(ordered, q)`` (its default "linear" method) of a sorted list of finite floats."""
    quantile = q / 100
    virtual = (len(ordered) - 1) * quantile  # NumPy's virtual index of the linear method
    if virtual >= len(ordered) - 1:
        return ordered[-1]
    below = math.floor(virtual)
    a, b, t = ordered[below], ordered[below + 1], virtual - below
    return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t


def median(ordered: list[float]) -> float:
    """``np.median`` of a sorted list: the middle value, or the mean of the two middle ones (their sum halved,
    as ``np.mean`` takes it)."""
    half = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[half])
    return (float(ordered[half - 1]) + float(ordered[half])) / 2
