"""The shortcuts that make a tiny run cheap (docs/appendix/TINY_RUNS.md) give the numbers of the paths they
replace, bit for bit."""

from __future__ import annotations

import numpy as np

from pdors.policies.placement import FEW_MACHINES, _passes_few, room, round_robin_passes
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


def test_round_robin_on_few_machines_places_as_the_array_passes_do() -> None:
    """``_passes_few`` (lists, up to FEW_MACHINES machines) gives the placement and cursor of
    ``round_robin_passes`` (arrays) on random free capacities, demands, counts and cursors, misfits included."""
    rng = np.random.default_rng(1)
    placed = refused = 0
    for _ in range(3000):
        H = int(rng.integers(1, FEW_MACHINES + 1))
        free = rng.integers(0, 12, size=(H, 4)).astype(float) * rng.choice([1.0, 0.5], size=(H, 4))
        demand = rng.integers(0, 4, size=4).astype(float)
        count, cursor = int(rng.integers(2, 3 * H + 10)), int(rng.integers(0, H))
        fast = _passes_few(room(free, demand, count).tolist(), count, cursor)
        reference = round_robin_passes(free, demand, count, cursor)
        if reference is None:
            assert fast is None
            refused += 1
        else:
            assert fast is not None and fast[1] == reference[1] and np.array_equal(fast[0], reference[0])
            placed += 1
    assert placed >= 500 and refused >= 500, (placed, refused)
