"""A notebook cell whose value is a result shows it in a line: scalars in full, each large array as its dtype and
shape (``pdors.validate(...)`` printed 637 lines of numbers before)."""

from __future__ import annotations

import numpy as np

import pdors
from pdors.compact import compact_repr


def test_results_of_a_run_show_in_a_line() -> None:
    r = pdors.run(pdors.RunSpec(policy="pdors", machines=6, jobs=12, slots=10, seed=1))
    check = pdors.validate(r.instance, r.simulation.schedule)
    for obj in (check, r, r.simulation, r.simulation.schedule, r.instance, r.instance.jobs, r.summary):
        text = repr(obj)
        assert "\n" not in text and len(text) < 1200 and text.startswith(type(obj).__name__ + "("), text
    assert repr(check).startswith("Validation(ok=True, violations=[], samples=<float64 array 10x12>,")
    assert f"total_utility={check.total_utility!r}" in repr(check) and "ok=True" in repr(r)


def test_small_arrays_and_values_are_shown_whole() -> None:
    cluster = pdors.generate(pdors.WorkloadConfig(), 3, 3, 4, 1).cluster
    assert repr(cluster) == f"Cluster(capacity=<float64 array 3x4>, resources={cluster.resources!r})"
    small = pdors.generate(pdors.WorkloadConfig(), 1, 1, 4, 1).cluster
    assert repr(small) == f"Cluster(capacity={small.capacity.tolist()!r}, resources={small.resources!r})"
    assert compact_repr(small, machines=1).startswith("Cluster(machines=1, capacity=[[")
    assert np.array_equal(small.capacity, np.array(small.capacity.tolist()))
