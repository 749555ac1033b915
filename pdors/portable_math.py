"""Arithmetic whose every bit is the same on every machine: the only arithmetic a decision may rest on.

IEEE 754 rounds each +, -, *, / and sqrt correctly, so numpy's elementwise ufuncs for them give the same bits
whatever the CPU and SIMD kernel; so do its reductions, whose order depends only on the array's shape
(sequential along an outer axis, a fixed pairwise tree along the contiguous one). Three things do not
(docs/MODEL.md, "Bit-identical decisions"):

* BLAS (``@``, ``np.dot``, ``matmul``): OpenBLAS picks a kernel per CPU (``OPENBLAS_CORETYPE``) and each sums
  in its own order; :func:`dot` multiplies elementwise and sums in numpy's fixed order instead.
* numpy's ``exp``, ``log`` and ``power``: SIMD kernels (AVX-512, SVML) chosen at run time, which differ from
  the scalar libm in the last bit; :func:`exp`, :func:`log` and :func:`power` are fdlibm's algorithms
  (Sun Microsystems, e_exp.c and e_log.c, error < 1 ulp) written with correctly rounded operations only.
* ``math.exp``/``math.log``: glibc selects FMA or SSE2 variants by CPU; the same functions serve scalars.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, overload

import numpy as np
from numpy.typing import ArrayLike

_LN2_HI = 6.93147180369123816490e-01  # ln 2 split so that k * _LN2_HI is exact for |k| < 2^20
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00
_EXP_P = (
    1.66666666666666019037e-01,
    -2.77777777770155933842e-03,
    6.61375632143793436117e-05,
    -1.65339022054652515390e-06,
    4.13813679705723846039e-08,
)
_LOG_LG = (
    6.666666666666735130e-01,
    3.999999999940941908e-01,
    2.857142874366239149e-01,
    2.222219843214978396e-01,
    1.818357216161805012e-01,
    1.531383769920937332e-01,
    1.479819860511658591e-01,
)
_SQRT_HALF = 0.70710678118654752440


@overload
def exp(x: float) -> float: ...
@overload
def exp(x: np.ndarray) -> np.ndarray: ...
def exp(x: ArrayLike) -> Any:
    """e^x, elementwise (fdlibm's e_exp.c); inf above ~709.78, 0 below ~-745.13. Scalars give a float."""
    x = np.asarray(x, dtype=np.float64)
    xc = np.clip(x, -746.0, 710.0)  # beyond: 0 or inf either way; keeps k a small integer
    k = np.rint(xc * _INV_LN2)
    hi = xc - k * _LN2_HI
    lo = k * _LN2_LO
    r = hi - lo
    t = r * r
    p1, p2, p3, p4, p5 = _EXP_P
    c = r - t * (p1 + t * (p2 + t * (p3 + t * (p4 + t * p5))))
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)  # e^r in [0.7, 1.42]
    out = _scale(y, np.where(np.isnan(k), 0, k).astype(np.int64))
    out = np.where(np.isnan(x), x, out)
    return float(out) if out.ndim == 0 else out


@overload
def log(x: float) -> float: ...
@overload
def log(x: np.ndarray) -> np.ndarray: ...
def log(x: ArrayLike) -> Any:
    """Natural logarithm, elementwise (fdlibm's e_log.c): -inf at 0, nan below. Scalars give a float."""
    x = np.asarray(x, dtype=np.float64)
    m, e = np.frexp(np.where(np.isfinite(x) & (x > 0), x, 1.0))  # exact: x = m 2^e, m in [0.5, 1)
    low = m < _SQRT_HALF
    m = np.where(low, m * 2.0, m)  # m in [sqrt(1/2), sqrt(2))
    k = (e - low).astype(np.float64)
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    g1, g2, g3, g4, g5, g6, g7 = _LOG_LG
    t1 = w * (g2 + w * (g4 + w * g6))
    t2 = z * (g1 + w * (g3 + w * (g5 + w * g7)))
    hfsq = 0.5 * f * f
    out = k * _LN2_HI - ((hfsq - (s * (hfsq + t1 + t2) + k * _LN2_LO)) - f)
    out = np.where(x == 0, -np.inf, np.where(x < 0, np.nan, np.where(np.isfinite(x), out, x)))
    return float(out) if out.ndim == 0 else out


def power(x: ArrayLike, p: float) -> Any:
    """x ** p for x >= 0 (0 ** p = inf for p < 0, 0 for p > 0): exp(p log x), or the one correctly rounded
    operation it is for p in {-1, 1, 2, 0.5}."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore"):
        exact: Callable[[], np.ndarray] | None = {
            -1.0: lambda: 1.0 / x,
            1.0: lambda: x,
            2.0: lambda: x * x,
            0.5: lambda: np.sqrt(x),
        }.get(p)
        return exact() if exact is not None else exp(p * log(x))


def dot(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """``a @ b`` for ``a`` [..., K] and ``b`` [K] or [K, N], multiplied elementwise and summed over K in
    numpy's fixed order (pairwise along a contiguous K, sequential otherwise), never by BLAS."""
    a, b = np.asarray(a), np.asarray(b)
    out: np.ndarray = (a * b).sum(axis=-1) if b.ndim == 1 else (a[..., :, None] * b).sum(axis=-2)
    return out


def _scale(y: np.ndarray, k: np.ndarray) -> np.ndarray:
    """y 2^k, exactly (one rounding if the result is subnormal): two multiplications by powers of two built
    from their bits, each factor a normal number, the first product normal too."""
    k1 = k // 2
    with np.errstate(over="ignore"):
        out: np.ndarray = y * _two_to(k1) * _two_to(k - k1)
    return out


def _two_to(k: np.ndarray) -> np.ndarray:
    return ((k + 1023).astype(np.int64) << 52).view(np.float64)
