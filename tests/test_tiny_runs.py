"""The shortcuts that make a tiny run cheap (docs/appendix/TINY_RUNS.md) give the numbers of the paths they
replace, bit for bit."""

from __future__ import annotations

import numpy as np

from pdors.run import percentile


def test_percentile_is_numpys_linear_percentile_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    for k in range(3000):
        values = rng.exponential(size=int(rng.integers(1, 60))) * 10 ** rng.uniform(-6, 3)
        if k % 5 == 0:
            values = np.round(values, 1)  # ties
        ordered = sorted(values.tolist())
        for q in (0, 25, 37.5, 50, 99, 100):
            assert percentile(ordered, q) == float(np.percentile(values, q)), (k, q)
