"""The memory estimate against measured peak RSS of real runs, each in a fresh process: fitted on a few sizes
by the rule of pipeline/sizing.py, it predicts a size it was not fitted on within 1.5x; and the default limit
follows the machine's available memory and the runs at once."""

from __future__ import annotations

import pytest

from pipeline import sizing

pytestmark = pytest.mark.slow


def test_fit_on_small_sizes_predicts_a_larger_one_within_1_5x() -> None:
    fitted = [sizing.measure("fifo", h, i, t) for h, i, t in [(10, 10, 10), (300, 300, 80), (100, 100, 800)]]
    base, per_cell = sizing.fit(fitted)
    unseen = sizing.measure("fifo", 600, 600, 80)
    predicted = base + per_cell * unseen.cells
    print(
        f"fit: base {base / 2**20:.1f} MiB, {per_cell:.2f} B/cell; 600x600x80: peak "
        f"{unseen.peak_bytes / 2**20:.1f} MiB, predicted {predicted / 2**20:.1f} MiB"
    )
    assert 1 / 1.5 <= predicted / unseen.peak_bytes <= 1.5
    shipped = sizing.run_bytes(600, 600, 80)  # the constants in the code, fitted on SIZES
    assert shipped >= unseen.peak_bytes / 1.5  # never far below: the estimate guards against running out


@pytest.mark.xfail(
    strict=True,
    reason="the shipped constants over-estimate 600x600x80 by about 1.8x: schedule arrays are resident only where "
    "written since issue 37, and fit()'s slope comes from the 100x100x80 size, where the base's noise dominates",
)
def test_shipped_constants_are_at_most_1_5x_above_a_larger_run() -> None:
    unseen = sizing.measure("fifo", 600, 600, 80)
    assert sizing.run_bytes(600, 600, 80) <= 1.5 * unseen.peak_bytes


def test_default_limit_is_the_machines_share_over_the_runs_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sizing, "available_bytes", lambda: 24 * 2**30)
    assert sizing.memory_problem(1000, 1000, 80, None) is None  # the run, on a 24 GiB machine
    assert sizing.memory_problem(1000, 1000, 80, None, parallel=2) is None  # both cores busy
    refused = sizing.memory_problem(1000, 100000, 80, None)
    assert refused is not None and refused.startswith("H=1000 I=100000 T=80 needs about")
    assert "over the limit of 12.00 GB (50% of the 24.0 GB available over 1 run(s) at once" in refused
    assert sizing.memory_problem(1000, 1000, 80, None, parallel=24) is not None  # 0.5 GB each
    assert sizing.memory_problem(1000, 1000, 80, 0.5) is not None  # an explicit limit is kept
