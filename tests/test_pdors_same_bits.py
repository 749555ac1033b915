"""PD-ORS's per-decision work done in fewer operations, each against the form it replaces, bit for bit: the
machine classes' row keys (one matrix product), a job's level grid shared by its slot states, the simulator's
reservation of only the cells a plan uses, the premise's cells of every job from one pass, the cached ln(U/L)."""

from __future__ import annotations

import numpy as np
import pytest

from pdors.portable_math import log
from pdors.premise import _cells_by_job
from pdors.primal_dual.config import RoundingConfig
from pdors.primal_dual.job import JobShape, level_grid
from pdors.primal_dual.machine_classes import ROW_HASH_MULTIPLIER, machine_classes, row_keys
from pdors.primal_dual.prices import PriceBounds, prices
from pdors.primal_dual.slot_cost import slot_costs
from pdors.schedule import Schedule
from pdors.simulator import _reserve
from pdors.workload import WorkloadConfig, generate


def _column_loop_keys(words: np.ndarray) -> np.ndarray:
    key = words[:, 0].copy()
    for column in words.T[1:]:
        key *= ROW_HASH_MULTIPLIER
        key += column
    return key


@pytest.mark.parametrize("seed", range(40))
def test_row_keys_equal_the_column_by_column_hash(seed: int) -> None:
    rng = np.random.default_rng(seed)
    words = rng.integers(0, 2**64, (int(rng.integers(1, 60)), int(rng.integers(1, 12))), dtype=np.uint64)
    assert np.array_equal(row_keys(words), _column_loop_keys(words))


def _literal_classes(rows: np.ndarray) -> list[int]:
    """Class of each row: rows equal as floats (-0.0 == 0.0, NaN equal to nothing) share one, numbered by lowest
    member."""
    cls: list[int] = []
    for i in range(len(rows)):
        same = [cls[j] for j in range(i) if bool((rows[j] == rows[i]).all())]
        cls.append(same[0] if same else max(cls, default=-1) + 1)
    return cls


@pytest.mark.parametrize("seed", range(60))
def test_machine_classes_group_equal_rows_as_the_literal_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    kinds = rng.choice([0.0, -0.0, 1.5, 2.0, np.nan], (int(rng.integers(1, 5)), 8))
    rows = kinds[rng.integers(0, len(kinds), int(rng.integers(1, 40)))]
    got = machine_classes(rows[:, :4], rows[:, 4:])
    expected = np.array(_literal_classes(rows))
    assert got.member_class.tolist() == expected.tolist()
    assert got.counts.tolist() == np.bincount(expected).tolist()
    assert got.first.tolist() == [int(np.flatnonzero(expected == c)[0]) for c in range(expected.max() + 1)]


def _shape(rng: np.random.Generator) -> JobShape:
    return JobShape(
        per_sample_internal=float(rng.uniform(0.05, 0.5)),
        per_sample_external=float(rng.uniform(0.1, 1)),
        batch=int(rng.integers(4, 40)),
        gamma=int(rng.integers(1, 6)),
        worker_demand=rng.integers(0, 3, 4).astype(float) + np.eye(4)[1],
        ps_demand=rng.integers(0, 3, 4).astype(float) * (rng.random(4) < 0.7),
    )


def _state(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    k = int(rng.integers(1, 5))
    rows = rng.integers(0, k, int(rng.integers(2, 20)))
    return rng.uniform(1e-3, 2, (k, 4))[rows], (rng.uniform(0, 25, (k, 4)) * (rng.random((k, 4)) < 0.9))[rows]


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("reject", [False, True])
def test_a_grid_shared_by_a_jobs_states_gives_each_what_its_own_gives(seed: int, reject: bool) -> None:
    """Several slot states of one job with one level grid, refined in random orders, against each state computed
    with a grid of its own: the same theta, exactness, allocations and statistics; the grid is left unchanged."""
    rng = np.random.default_rng(seed)
    shape, q = _shape(rng), 16
    levels = np.arange(q + 1) * float(rng.uniform(5, 80)) / q
    rounding = RoundingConfig(gain=1.0, delta=1.0, feasible_solutions=3, max_attempts=150)
    grid = level_grid(shape, levels, reject)
    kept = [a.copy() for a in grid if isinstance(a, np.ndarray)]
    for s in range(4):
        price, free = _state(rng)
        shared = slot_costs(
            shape, levels, price, free, rounding, (seed, s), lazy=True, reject_on_failure=reject, grid=grid
        )
        alone = slot_costs(shape, levels, price, free, rounding, (seed, s), lazy=True, reject_on_failure=reject)
        for k in rng.permutation(np.arange(1, q + 1)).tolist():
            assert shared.refine(k) == alone.refine(k)
        assert shared.cost.tobytes() == alone.cost.tobytes() and shared.exact.tolist() == alone.exact.tolist()
        assert shared.external_solves == alone.external_solves and shared.lp_solves == alone.lp_solves
        for k in range(1, q + 1):
            a, b = shared.options[k], alone.options[k]
            assert (a is None) == (b is None)
            if a is not None and b is not None:
                assert (a.cost, a.machines.tolist(), a.workers.tolist(), a.servers.tolist(), a.internal) == (
                    b.cost,
                    b.machines.tolist(),
                    b.workers.tolist(),
                    b.servers.tolist(),
                    b.internal,
                )
    assert all(np.array_equal(a, b) for a, b in zip(kept, [a for a in grid if isinstance(a, np.ndarray)], strict=True))


def _dense_reserve(reserved, instance, i, workers, servers, slots, sign=1.0):
    """The reservation over every machine of the busy slots (the form the simulator had)."""
    busy = np.flatnonzero(workers.any(axis=1) | servers.any(axis=1))
    jobs, target = instance.jobs, reserved[slots]
    w, s = workers[busy, :, None], servers[busy, :, None]
    target[busy] += sign * (w * jobs.worker_demand[i] + s * jobs.ps_demand[i])


@pytest.mark.parametrize("seed", range(20))
def test_reserving_only_used_cells_leaves_the_bits_of_reserving_every_machine(seed: int) -> None:
    rng = np.random.default_rng(seed)
    instance = generate(WorkloadConfig(), 12, 6, 10, seed)
    slots, machines = instance.slots, instance.num_machines
    fast = np.zeros((slots, machines, len(instance.cluster.resources)))
    dense = fast.copy()
    plans = []
    for i in range(instance.num_jobs):
        mask = rng.random((slots, machines)) < 0.15
        workers = np.where(mask, rng.integers(0, 4, (slots, machines)), 0)
        servers = np.where(mask & (rng.random((slots, machines)) < 0.5), rng.integers(0, 3, (slots, machines)), 0)
        plans.append((workers, servers))
        _reserve(fast, instance, i, workers, servers, slice(None))
        _dense_reserve(dense, instance, i, workers, servers, slice(None))
        assert fast.tobytes() == dense.tobytes()
    for i, (workers, servers) in enumerate(plans):  # take back the rest of each plan from a random slot on
        later = slice(int(rng.integers(0, slots)), slots)
        _reserve(fast, instance, i, workers[later], servers[later], later, -1.0)
        _dense_reserve(dense, instance, i, workers[later], servers[later], later, -1.0)
        assert fast.tobytes() == dense.tobytes()


@pytest.mark.parametrize("seed", range(20))
def test_cells_of_every_job_from_one_pass_are_each_jobs_nonzero_cells(seed: int) -> None:
    rng = np.random.default_rng(seed)
    instance = generate(WorkloadConfig(), 9, 14, 12, seed)
    sched = Schedule.empty(instance)
    shape = sched.workers.shape
    sched.workers[:] = np.where(rng.random(shape) < 0.05, rng.integers(1, 4, shape), 0)
    sched.servers[:] = np.where(rng.random(shape) < 0.05, rng.integers(1, 3, shape), 0)
    cells = _cells_by_job(sched)
    for i in range(instance.num_jobs):
        t, h = cells(i)
        want_t, want_h = np.nonzero(sched.workers[:, i, :] | sched.servers[:, i, :])
        assert t.tolist() == want_t.tolist() and h.tolist() == want_h.tolist()


def test_the_cached_log_ratio_is_the_portable_log_and_read_only() -> None:
    bounds = PriceBounds(upper=np.array([3.0, 7.5, 1e-3, 2.0]), lower=1e-3)
    assert bounds.log_ratio().tobytes() == log(bounds.upper / bounds.lower).tobytes()
    assert bounds.log_ratio() is bounds.log_ratio()
    with pytest.raises(ValueError):
        bounds.log_ratio()[0] = 0.0
    used = np.array([[[0.0, 5.0, 1.0, 0.0]]])
    expected = bounds.lower * np.exp(used / 10.0 * log(bounds.upper / bounds.lower))
    assert np.allclose(prices(bounds, used, np.full(4, 10.0)), expected)


@pytest.mark.parametrize("seed", range(40))
def test_internal_case_over_the_holding_classes_is_the_full_grid_argmin(seed: int) -> None:
    """The internal case priced over only the classes that hold a level, against the whole [C, Q] grid's first
    minimum per level (inf where nothing fits, class 0 then): the same costs and hosts, bit for bit."""
    rng = np.random.default_rng(seed)
    shape, q = _shape(rng), 24
    levels = np.arange(q + 1) * float(rng.uniform(5, 200)) / q
    price, free = _state(rng)
    free = free * rng.choice([0.2, 1.0, 3.0])  # from nothing fitting to most levels fitting
    rounding = RoundingConfig(gain=1.0, delta=1.0, feasible_solutions=3, max_attempts=150)
    got = slot_costs(shape, levels, price, free, rounding, (seed,), lazy=True).options
    grid, classes = level_grid(shape, levels), machine_classes(price, free)
    fits = (grid.need[None, :, :] <= free[classes.first][:, None, :] + 1e-9).all(axis=2) & grid.allowed[None, :]
    full = np.where(fits, (price[classes.first][:, None, :] * grid.need[None, :, :]).sum(axis=-1), np.inf)
    best = full.argmin(axis=0)
    assert got.internal.tobytes() == full[best, np.arange(q + 1)].tobytes()
    assert got.host.tolist() == classes.first[best].tolist()
