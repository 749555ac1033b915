"""HiGHS built one way for every caller (PD-ORS's slot LPs, its literal reference, Dorm's MILP).

Every instance is silent and single-threaded, so that a solve does the same work, and returns the same answer,
whatever the machine's cores and load. HiGHS's thread scheduler is process-wide and fixed by the first solve:
every instance in the process must ask for the same thread count (offline_opt's solves ask for 1 too), or HiGHS
refuses to run.
"""

from __future__ import annotations

from typing import Any

import highspy
import numpy as np


def new_highs() -> Any:
    """A HiGHS instance that prints nothing and runs on one thread.

    The bare solver (``highspy._Highs``, exported by highspy), not its ``Highs`` wrapper: the wrapper's constructor
    installs Python callbacks through a solver call, which prints HiGHS's banner to stdout before ``output_flag``
    can be set. The wrapper adds nothing used here (callbacks, the modelling API)."""
    highs = highspy._Highs()  # type: ignore[attr-defined]  # exported, but not in highspy's stubs
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("threads", 1)
    return highs


def highs_lp(
    cost: np.ndarray,
    num_row: int,
    csc: tuple[np.ndarray, np.ndarray, np.ndarray],
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_upper: np.ndarray | None = None,
    integer: bool = False,
) -> highspy.HighsLp:
    """min ``cost`` x over ``0 <= x <= col_upper`` (default unbounded) with ``row_lower <= A x <= row_upper``;
    ``csc`` = A column-wise as (start, index, value); ``integer``: every column integral."""
    n = len(cost)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, num_row
    lp.col_cost_ = cost
    lp.col_lower_ = np.zeros(n)
    lp.col_upper_ = np.full(n, np.inf) if col_upper is None else col_upper
    lp.row_lower_, lp.row_upper_ = row_lower, row_upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = csc
    if integer:
        lp.integrality_ = [highspy.HighsVarType.kInteger] * n
    return lp


def pass_lp(
    highs: Any,
    cost: np.ndarray,
    num_row: int,
    csc: tuple[np.ndarray, np.ndarray, np.ndarray],
    row_lower: np.ndarray,
    row_upper: np.ndarray,
) -> None:
    """Load the LP of :func:`highs_lp` (no column upper bounds, continuous) into ``highs`` from the arrays
    themselves: HiGHS reads them through their buffers, where a ``HighsLp``'s fields are copied element by
    element (a third of the cost of building a small LP). HiGHS holds the same model either way."""
    n = len(cost)
    start, index, value = csc
    status = highs.passModel(
        n,
        num_row,
        len(value),
        int(highspy.MatrixFormat.kColwise),
        int(highspy.ObjSense.kMinimize),
        0.0,
        np.ascontiguousarray(cost, dtype=np.float64),
        np.zeros(n),
        np.full(n, np.inf),
        np.ascontiguousarray(row_lower, dtype=np.float64),
        np.ascontiguousarray(row_upper, dtype=np.float64),
        np.ascontiguousarray(start, dtype=np.int32),
        np.ascontiguousarray(index, dtype=np.int32),
        np.ascontiguousarray(value, dtype=np.float64),
        np.zeros(n, dtype=np.int32),  # kContinuous: a null pointer cannot be passed
    )
    if status != highspy.HighsStatus.kOk:
        raise RuntimeError(f"HiGHS refused the LP: {status}")
