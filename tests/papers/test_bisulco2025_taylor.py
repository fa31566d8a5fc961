"""Tests for maelab.papers.bisulco2025.taylor: Lemma 6 by hand and by Monte Carlo, the tanh autoencoder's Jacobian
against finite differences, Lemmas 4-5 exact for a nearly linear f, and Lemma 5's trace term by hand."""

from __future__ import annotations

import numpy as np
import pytest

from maelab import ParameterError
from maelab import linear_mae as lm
from maelab.papers.bisulco2025 import taylor as tl


def data(n=200, d=12, seed=0):
    """Correlated data with a well-separated spectrum (as in tests/test_linear_mae.py)."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    spectrum = np.geomspace(5.0, 0.05, d)
    return rng.normal(size=(n, d)) * np.sqrt(spectrum) @ q.T


def random_factors(d, k, seed=1):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(d, k)), 0.3 * rng.normal(size=(k, d))


def test_lemma6_terms_by_hand_and_monte_carlo():
    X = data(40, 12, seed=9)
    A, B = random_factors(12, 3)
    m, p = 0.4, 3
    W = A @ B
    t = tl.lemma6_terms(X, A, B, m, p)
    assert t["mean_fit"] == pytest.approx(((X - (1 - m) * X @ W) ** 2).sum(), rel=1e-12)
    assert t["mean_norm"] == pytest.approx((((1 - m) * X @ W) ** 2).sum(), rel=1e-12)
    assert t["total"] == pytest.approx(lm.expected_loss(X, A, B, m, p), rel=1e-10)
    R = lm.sample_masks(40, p, m, d=12, rng=3, draws=3000)
    var = np.array([(((r * X) @ W - (1 - m) * X @ W) ** 2).sum() for r in R])
    assert abs(var.mean() - t["variance"]) < 4 * var.std(ddof=1) / np.sqrt(len(var))


def test_tanh_autoencoder_jacobian_finite_differences():
    rng = np.random.default_rng(4)
    A, B = rng.normal(size=(6, 2)), rng.normal(size=(2, 6))
    f = tl.TanhAutoencoder(A, B, s=0.8)
    x = rng.normal(size=(3, 6))
    J = f.jacobian(x)
    eps = 1e-6
    for i in range(6):
        e = np.zeros(6)
        e[i] = eps
        np.testing.assert_allclose((f(x + e) - f(x - e)) / (2 * eps), J[:, :, i], atol=1e-7)
    np.testing.assert_allclose(f.jacobian(np.zeros((1, 6)))[0], (A @ B).T, atol=1e-12)  # grad f(0)^T = A B
    assert np.allclose(f(np.zeros((1, 6))), 0.0)


def test_taylor_lemmas_exact_for_a_nearly_linear_f():
    """With s large f is linear to ~1e-12 relative, so Lemmas 4 and 5 are both the exact Lemma-1 loss."""
    X = data(30, 12, seed=10)
    A, B = random_factors(12, 3)
    f = tl.TanhAutoencoder(A, B, s=1e6)
    exact = lm.expected_loss(X, A, B, 0.5, 3)
    assert tl.lemma4_loss(X, f, 0.5, 3) == pytest.approx(exact, rel=1e-9)
    assert tl.lemma5_loss(X, f, 0.5, 3) == pytest.approx(exact, rel=1e-6)
    mc, se = tl.nonlinear_sampled_loss(X, f, 0.5, 3, draws=2000, rng=1)
    assert abs(mc - exact) < 4 * se


def test_lemma5_trace_term_by_hand():
    """m(1-m) Tr(F_x Blkdiag(x^T x)) written with an explicit block-diagonal matrix, one sample at a time."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(4, 6))
    f = tl.TanhAutoencoder(rng.normal(size=(6, 2)), rng.normal(size=(2, 6)), s=1.0)
    m, p = 0.3, 2
    total = 0.0
    for x in X:
        xm = (1 - m) * x
        J = f.jacobian(xm[None])[0]
        total += ((x - f(xm[None])[0]) ** 2).sum() + m * (1 - m) * np.trace(J.T @ J @ lm.blkdiag(np.outer(x, x), p))
    assert tl.lemma5_loss(X, f, m, p) == pytest.approx(total, rel=1e-12)


def test_tanh_autoencoder_bad_scale():
    with pytest.raises(ParameterError) as err:
        tl.TanhAutoencoder(np.zeros((12, 2)), np.zeros((2, 12)), s=0.0)
    assert err.value.name == "s"
