"""Hand-built tiny instances for tests whose expected outcome is derived by hand."""

from __future__ import annotations

import numpy as np

from pdors.model import SENSITIVE, Cluster, Instance, Jobs


def tiny_instance(jobs: list[dict], machines: int = 2, slots: int = 3, capacity=(1.0, 4.0, 10.0, 10.0)) -> Instance:
    """Jobs using only cpu (1 per worker, 1 per PS) unless overridden; g = 0 so both rates are 1/tau."""
    defaults = dict(
        arrival=0,
        epochs=1,
        samples=4,
        grad_mb=0.0,
        tau=0.5,
        gamma=1,
        batch=2,
        bw_internal=40.0,
        bw_external=1.0,
        worker_demand=(0, 1, 0, 0),
        ps_demand=(0, 1, 0, 0),
        theta1=10.0,
        theta2=1.0,
        theta3=0.0,
        sensitivity=SENSITIVE,
    )
    rows = [{**defaults, **j} for j in jobs]
    arrays = {k: np.array([r[k] for r in rows]) for k in defaults}
    return Instance(
        jobs=Jobs(**arrays), cluster=Cluster(np.tile(np.array(capacity, float), (machines, 1))), slots=slots
    )
