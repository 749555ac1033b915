"""An instance drawn once and sized for each cluster (a sweep chunk's shared draws) is the instance ``generate``
gives for that cluster, field by field, in every profile."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from pdors.config import build
from pdors.workload import WorkloadConfig, draw, generate

TRACE = str(Path(__file__).resolve().parents[1] / "traces" / "google-2011" / "job_events")


@pytest.mark.parametrize(
    "workload",
    [
        {},
        {"profile": "thesis"},
        {"arrivals": "uniform", "utility": "reciprocal"},
        {"arrivals": "trace", "trace": {"path": TRACE}},
    ],
)
@pytest.mark.parametrize("seed", [1, 7])
def test_drawn_once_on_each_cluster_size_is_what_generate_gives(workload: dict, seed: int) -> None:
    config = build(WorkloadConfig, workload)
    drawn = draw(config, 6, 5, seed)
    for machines in (1, 3, 40):
        a, b = drawn.on(machines), generate(config, machines, 6, 5, seed)
        assert a.cluster.capacity.shape == (machines, len(a.cluster.resources))
        assert np.array_equal(a.cluster.capacity, b.cluster.capacity)
        for f in fields(a.jobs):
            x, y = getattr(a.jobs, f.name), getattr(b.jobs, f.name)
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), f.name
        assert (a.slots, a.meta, a.ps_at_most_workers) == (b.slots, b.meta, b.ps_at_most_workers)
        assert (a.ps_bandwidth is None) == (b.ps_bandwidth is None)
        assert a.ps_bandwidth is None or a.ps_bandwidth.tobytes() == b.ps_bandwidth.tobytes()
        assert a.meta is not drawn.meta  # an instance's meta is its own
