"""Theorem 5.2: first- vs second-kind equations with a discretised attention kernel (hand cases, hand bounds,
SVD formula against Monte Carlo)."""

import math

import numpy as np
import pytest

from maelab._validate import ParameterError
from maelab.papers.cao2022 import tikhonov as T


def test_two_point_operator_by_hand():
    # n = 2, grid width 1: K1 = [[1, c], [c, 1]] / 2, c = e^-1/2; equal row sums -> A = K1 / (1 + c) symmetric,
    # eigenvalues 1 and (1 - c) / (1 + c)
    c = math.exp(-0.5)
    a, alpha = T.attention_operator(2, 1.0, "grid", dim=1)
    assert np.allclose(a, np.array([[1, c], [c, 1]]) / (1 + c), atol=1e-15)
    assert np.allclose(alpha, (1 + c) / 2, atol=1e-15)
    lo = (1 - c) / (1 + c)
    for beta in (0.0, 0.3):
        r = T.conditioning(a, alpha, beta)
        assert r["cond_2"] == pytest.approx((beta + 1) / (beta + lo), rel=1e-12)
        assert r["cond_alpha"] == pytest.approx((beta + 1) / (beta + lo), rel=1e-12)
        assert r["amp_rms"] == pytest.approx(math.sqrt(((beta + 1) ** -2 + (beta + lo) ** -2) / 2), rel=1e-12)


@pytest.mark.parametrize("dim,n", [(1, 40), (2, 12)])
@pytest.mark.parametrize("scaling,width", [("continuum", 0.1), ("grid", 1.5)])
def test_second_kind_condition_below_hand_bound(dim, n, scaling, width):
    a, alpha = T.attention_operator(n, width, scaling, dim=dim)
    # A row-stochastic with non-negative entries: ||A||_alpha = spectral radius = 1
    assert np.allclose(a.sum(1), 1.0) and (a >= 0).all()
    for beta in (1e-3, 0.1, 1.0, 10.0):
        r = T.conditioning(a, alpha, beta)
        assert r["norm_alpha"] == pytest.approx(1.0, abs=1e-12)
        assert r["cond_alpha"] <= (beta + 1.0) / beta * (1 + 1e-12)
        assert r["cond_2"] <= r["bound_2"] * (1 + 1e-12)
        assert r["amp_worst"] <= 1.0 / beta * np.sqrt(alpha.max() / alpha.min()) ** 2 * (1 + 1e-12)


def test_first_kind_condition_grows_with_n_for_a_smoothing_kernel():
    conds = [T.conditioning(*T.attention_operator(n, 0.1, "continuum"), 0.0)["cond_2"] for n in (6, 9, 12, 16, 20)]
    assert all(b > 2 * a for a, b in zip(conds[:-1], conds[1:]))
    # while the second kind stays below its bound at every n
    assert all(
        T.conditioning(*T.attention_operator(n, 0.1, "continuum"), 0.05)["cond_alpha"] <= 21.0 + 1e-9
        for n in (6, 20, 60)
    )


def test_noise_error_matches_svd_formula():
    a, alpha = T.attention_operator(12, 0.1, "continuum")  # first kind: cond ~3e2, still accurate in float64
    for beta in (0.0, 0.01, 0.5):
        m = beta * np.eye(12) + a
        r = T.conditioning(a, alpha, beta)
        # exact identity E||M^-1 e||^2 = sigma^2 ||M^-1||_F^2, independently of the SVD
        assert r["amp_rms"] == pytest.approx(np.linalg.norm(np.linalg.inv(m)) / math.sqrt(12), rel=1e-6)
        mc = T.noise_error_mc(m, sigma=2.0, draws=20000, seed=1)
        assert mc == pytest.approx(2.0 * r["amp_rms"], rel=0.05)


def test_recovery_splits_bias_and_noise():
    a, _ = T.attention_operator(20, 0.1, "continuum")
    u = np.sin(np.linspace(0, 3, 20))
    r0 = T.recovery(a, u, 0.0, 0.0)
    assert r0["bias"] < 1e-8 and r0["noise"] == 0.0
    big = T.recovery(a, u, 1e6, 0.0)  # (beta I + A)^-1 A u -> 0: the relative bias tends to 1
    assert big["bias"] == pytest.approx(1.0, abs=1e-5)


def test_bad_input():
    with pytest.raises(ParameterError, match="beta"):
        T.conditioning(*T.attention_operator(4, 0.1), -1.0)
    with pytest.raises(ParameterError, match="n must be"):
        T.attention_operator(100, 0.1, dim=2)
    with pytest.raises(ParameterError, match="dim"):
        T.attention_operator(4, 0.1, dim=3)
