"""Each job's solo-fastest schedule is computed once per instance: PD-ORS's workload grid and the run's summary
(utility ceiling, fluid bound) share it."""

from __future__ import annotations

import numpy as np

import pdors.solo
from pdors.run import RunSpec, make_instance, run


def test_one_pdors_run_computes_the_solo_rates_once(monkeypatch):
    calls = []
    compute = pdors.solo._max_samples_per_slot

    def counted(instance):
        calls.append(instance)
        return compute(instance)

    monkeypatch.setattr(pdors.solo, "_max_samples_per_slot", counted)
    spec = RunSpec(policy="pdors", machines=6, jobs=8, slots=10, seed=3)
    instance = make_instance(spec)
    result = run(spec, instance)
    assert len(calls) == 1 and calls[0] is instance
    rates = pdors.solo.max_samples_per_slot(instance)
    assert rates is pdors.solo.max_samples_per_slot(instance) and not rates.flags.writeable
    assert np.array_equal(rates, compute(instance))
    assert result.summary.utility_ceiling == pdors.solo.utility_ceiling(instance)
