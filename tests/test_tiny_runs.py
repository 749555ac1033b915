"""The shortcuts that make a tiny run cheap (docs/appendix/TINY_RUNS.md) give the numbers of the paths they
replace, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from pdors.policies.placement import FEW_MACHINES, _passes_few, room, round_robin_passes
from pdors.quantiles import median, percentile


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
    placed = refused = one_pass = 0
    for _ in range(3000):
        H = int(rng.integers(1, FEW_MACHINES + 1))
        free = rng.integers(0, 12, size=(H, 4)).astype(float) * rng.choice([1.0, 0.5], size=(H, 4))
        demand = rng.integers(0, 4, size=4).astype(float)
        count, cursor = int(rng.integers(2, 3 * H + 10)), int(rng.integers(0, H))
        rooms = room(free, demand, count)
        one_pass += int((rooms > 0).sum() >= count)  # a task on each of the first machines with room
        fast = _passes_few(rooms.tolist(), count, cursor)
        reference = round_robin_passes(free, demand, count, cursor)
        if reference is None:
            assert fast is None
            refused += 1
        else:
            assert fast is not None and fast[1] == reference[1] and np.array_equal(fast[0], reference[0])
            placed += 1
    assert placed >= 500 and refused >= 500 and one_pass >= 200, (placed, refused, one_pass)


def test_median_is_numpys_median() -> None:
    rng = np.random.default_rng(2)
    for k in range(2000):
        n = int(rng.integers(1, 40))
        values = rng.integers(0, 30, size=n) if k % 2 else rng.exponential(size=n) * 10 ** rng.uniform(-3, 3)
        assert median(sorted(values.tolist())) == float(np.median(values)), k


def test_usage_of_all_slots_at_once_is_the_slot_by_slot_sum(monkeypatch: pytest.MonkeyPatch) -> None:
    """The validator's small-schedule usage (every job's products, zeros included, summed at once) has the bits of
    the slot-by-slot sum over the busy jobs only, for fractional demands whose sums round."""
    import pdors.validator as validator

    rng = np.random.default_rng(3)
    cases = []
    for _ in range(600):
        T, H, R = (int(x) for x in rng.integers(1, 12, size=3))
        jobs = int(rng.integers(1, 40))  # sums of more than 8 jobs: a pairwise order would show
        w = rng.integers(0, 4, size=(T, jobs, H)).astype(np.int32) * (rng.random((T, jobs, 1)) < 0.6)
        s = rng.integers(0, 3, size=(T, jobs, H)).astype(np.int32) * (w > 0)
        alpha, beta = rng.random((jobs, R)) * 7.3, rng.random((jobs, R)) * 3.1
        cases.append((w, s, alpha, beta, validator._usage(w, s, alpha, beta)))
    monkeypatch.setattr(validator, "USAGE_AT_ONCE", 0)
    for w, s, alpha, beta, at_once in cases:
        assert at_once.tobytes() == validator._usage(w, s, alpha, beta).tobytes()
