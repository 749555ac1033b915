"""The pre-rounding gain G_delta of Theorems 3-4 and the competitive bound of Theorems 5-6."""

from __future__ import annotations

import math
from collections.abc import Iterable

from ..portable_math import log


def gain_eq29(delta: float, w2: float, resources: int, machines: int) -> float:
    """Eq. (29): G = 1 + x - sqrt(x^2 + 2x), x = 3 ln(3(RH+1)/delta) / (2 W_2); in (0, 1].

    Written as 1 - 2x / (x + sqrt(x^2 + 2x)) to stay accurate when W_2 is small (G -> 0 as W_2 -> 0).
    """
    _check_delta(delta)
    if w2 <= 0:
        return 0.0
    x = 3.0 * log(3.0 * (resources * machines + 1) / delta) / (2.0 * w2)
    return 1.0 - 2.0 * x / (x + math.sqrt(x * x + 2.0 * x))


def gain_eq30(delta: float, w1: float) -> float:
    """Eq. (30): G = 1 + m / W_1 + sqrt((m / W_1)^2 + 2 m / W_1), m = ln(3 / delta); G > 1."""
    _check_delta(delta)
    if w1 <= 0:
        return math.inf
    y = log(3.0 / delta) / w1
    return 1.0 + y + math.sqrt(y * y + 2.0 * y)


def competitive_bound(gain: float, delta: float, log_ratios: Iterable[float]) -> float:
    """Theorems 5-6: 6 G_delta / delta * max_r(1, ln(U^r / L))."""
    _check_delta(delta)
    return 6.0 * gain / delta * max([1.0, *map(float, log_ratios)])


def _check_delta(delta: float) -> None:
    if not 0.0 < delta <= 1.0:
        raise ValueError(f"delta must lie in (0, 1], got {delta}")
