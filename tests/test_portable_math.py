"""pdors.portable_math against the platform's libm: within one ulp, special values as IEEE specifies."""

import math

import numpy as np
import pytest

from pdors import portable_math as pm


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    return np.abs(got - want) / np.spacing(np.abs(want))


def test_exp_is_within_one_ulp_of_libm_over_the_whole_range():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-708, 709, 20000), rng.uniform(-1, 1, 20000), rng.uniform(-1e-9, 1e-9, 100)])
    want = np.array([math.exp(v) for v in x])
    assert _ulps(pm.exp(x), want).max() <= 1.0


def test_exp_special_values():
    got = pm.exp(np.array([0.0, -0.0, 709.8, 1e4, -746.0, -1e4, np.inf, -np.inf, np.nan]))
    assert got[:2].tolist() == [1.0, 1.0]
    assert np.isinf(got[2:4]).all() and got[4:6].tolist() == [0.0, 0.0]
    assert got[6] == np.inf and got[7] == 0.0 and np.isnan(got[8])
    assert pm.exp(-745.0) == math.exp(-745.0) > 0  # subnormal result, rounded once
    assert isinstance(pm.exp(1.0), float)


def test_log_is_within_one_ulp_of_libm_and_inverts_exp():
    rng = np.random.default_rng(2)
    x = np.concatenate([np.exp(rng.uniform(-700, 700, 20000)), rng.uniform(0.5, 2.0, 20000), [5e-324, 1e-310]])
    want = np.array([math.log(v) for v in x])
    assert _ulps(pm.log(x), want).max() <= 1.0
    assert pm.log(1.0) == 0.0
    special = pm.log(np.array([0.0, -1.0, np.inf, np.nan]))
    assert special[0] == -np.inf and np.isnan(special[1]) and special[2] == np.inf and np.isnan(special[3])


@pytest.mark.parametrize("p", [-1.0, 1.0, 2.0, 0.5])
def test_power_is_the_exact_operation_where_there_is_one(p):
    x = np.random.default_rng(3).uniform(0, 10, 1000)
    assert np.array_equal(pm.power(x, p), {-1.0: 1.0 / x, 1.0: x, 2.0: x * x, 0.5: np.sqrt(x)}[p])


def test_power_elsewhere_and_at_zero_and_infinity():
    x = np.random.default_rng(4).uniform(1e-3, 1e3, 1000)
    assert np.allclose(pm.power(x, -2.5), x**-2.5, rtol=1e-14, atol=0)
    assert pm.power(np.array([0.0, np.inf]), -3.0).tolist() == [np.inf, 0.0]


def test_dot_is_a_matrix_product():
    rng = np.random.default_rng(5)
    a, b, v = rng.random((3, 5, 7)), rng.random((7, 2)), rng.random(7)
    assert np.allclose(pm.dot(a, b), a @ b, rtol=1e-14) and pm.dot(a, b).shape == (3, 5, 2)
    assert np.allclose(pm.dot(a, v), a @ v, rtol=1e-14) and pm.dot(a, v).shape == (3, 5)
    counts = rng.integers(0, 9, (4, 7))
    assert np.allclose(pm.dot(counts, b), counts @ b, rtol=1e-14)
