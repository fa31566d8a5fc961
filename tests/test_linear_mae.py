"""Tests for maelab.linear_mae: Lemma 1 (exact enumeration and Monte Carlo), the closed form (Theorem 1) against
gradient descent, the paper's V and C written out by hand, and the m = 0 -> PCA limit (numpy SVD)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from maelab import ParameterError
from maelab import linear_mae as lm


def data(n=200, d=12, seed=0):
    """Correlated data with a well-separated spectrum (so top-k subspaces are well defined)."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    spectrum = np.geomspace(5.0, 0.05, d)
    return rng.normal(size=(n, d)) * np.sqrt(spectrum) @ q.T


def random_factors(d, k, seed=1):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(d, k)), 0.3 * rng.normal(size=(k, d))


# ---------------------------------------------------------------------------------------------------------------
# patches
# ---------------------------------------------------------------------------------------------------------------
def test_patch_indices_by_hand():
    np.testing.assert_array_equal(lm.patch_index_1d(6, 2), [0, 0, 1, 1, 2, 2])
    expected = np.array([[0, 0, 1, 1, 2, 2], [0, 0, 1, 1, 2, 2], [3, 3, 4, 4, 5, 5], [3, 3, 4, 4, 5, 5]]).reshape(-1)
    np.testing.assert_array_equal(lm.patch_index_2d(4, 6, 2), expected)


def test_blkdiag_by_hand():
    S = np.arange(16.0).reshape(4, 4)
    expected = np.array([[0, 1, 0, 0], [4, 5, 0, 0], [0, 0, 10, 11], [0, 0, 14, 15]], dtype=float)
    np.testing.assert_array_equal(lm.blkdiag(S, 2), expected)
    np.testing.assert_array_equal(
        lm.blkdiag(S, np.array([0, 1, 0, 1])),
        np.array([[0, 0, 2, 0], [0, 5, 0, 7], [8, 0, 10, 0], [0, 13, 0, 15]], dtype=float),
    )


# ---------------------------------------------------------------------------------------------------------------
# Lemma 1
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("m", [0.3, 0.6])
def test_lemma1_exact_enumeration(m):
    """Average the loss over every possible mask, weighted by its probability."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(7, 6))
    A, B = rng.normal(size=(6, 2)), rng.normal(size=(2, 6))
    ids = np.array([0, 0, 1, 1, 2, 2])
    W = A @ B
    bern = 0.0
    for keep in itertools.product([0, 1], repeat=3):  # masks are independent across samples: enumerate per sample
        prob = np.prod([(1 - m) if c else m for c in keep])
        r = np.array(keep)[ids]
        bern += prob * ((X - (X * r) @ W) ** 2).sum()
    assert lm.expected_loss(X, A, B, m, ids) == pytest.approx(bern, rel=1e-12)
    kept = int(3 * (1 - m))
    subsets = list(itertools.combinations(range(3), kept))
    fixed = sum(((X - (X * np.isin(ids, s)) @ W) ** 2).sum() for s in subsets) / len(subsets)
    assert lm.expected_loss(X, A, B, m, ids, mask_mode="fixed") == pytest.approx(fixed, rel=1e-12)


def test_lemma1_paper_form():
    """||X - (1-m) X A B||^2 + m (1-m) ||G A B||^2 with G^T G = Blkdiag_p(X^T X) (G via Cholesky per block)."""
    X = data(50, 8)
    A, B = random_factors(8, 3)
    m, p = 0.4, 2
    G_blocks = []
    for b in range(4):
        cols = slice(b * p, (b + 1) * p)
        G_blocks.append(np.linalg.cholesky(X[:, cols].T @ X[:, cols]).T)
    G = np.zeros((8, 8))
    for b, g in enumerate(G_blocks):
        G[b * p : (b + 1) * p, b * p : (b + 1) * p] = g
    paper = np.sum((X - (1 - m) * X @ A @ B) ** 2) + m * (1 - m) * np.sum((G @ A @ B) ** 2)
    assert lm.expected_loss(X, A, B, m, p) == pytest.approx(paper, rel=1e-10)


@pytest.mark.parametrize(
    "m, patches, mode", [(0.5, 3, "bernoulli"), (0.75, 2, "bernoulli"), (0.5, 4, "fixed"), (0.6, "2d", "bernoulli")]
)
def test_lemma1_monte_carlo(m, patches, mode):
    if patches == "2d":  # 4 x 4 image, 2 x 2 patches
        X, patches = data(40, 16, seed=3), lm.patch_index_2d(4, 4, 2)
    else:
        X = data(40, 12, seed=3)
    A, B = random_factors(X.shape[1], 3)
    exact = lm.expected_loss(X, A, B, m, patches, mask_mode=mode)
    mean, se = lm.sampled_loss(X, A, B, m, patches, draws=3000, mask_mode=mode, rng=11, return_se=True)
    assert abs(mean - exact) < 4 * se
    assert se < 0.02 * exact  # the check has power


def test_sample_masks_statistics():
    R = lm.sample_masks(4000, 3, 0.7, d=12, rng=0)
    assert R.shape == (4000, 12)
    assert np.all(R[:, 0::3] == R[:, 1::3]) and np.all(R[:, 0::3] == R[:, 2::3])  # patches share their fate
    assert R.mean() == pytest.approx(0.3, abs=0.01)
    F = lm.sample_masks(500, 3, 0.5, d=12, mask_mode="fixed", rng=0)
    assert np.all(F[:, ::3].sum(1) == 2)  # int(4 * 0.5) = 2 of 4 patches kept in every sample


# ---------------------------------------------------------------------------------------------------------------
# closed form (Theorem 1)
# ---------------------------------------------------------------------------------------------------------------
def test_closed_form_is_papers_statement():
    X = data()
    m, p, k = 0.6, 3, 4
    A, B, min_loss, eigvals = cf = lm.closed_form(X, m, p, k)  # the brief's 4-tuple
    mats = lm.mae_matrices(X, m, p)
    S = X.T @ X
    blk = np.zeros_like(S)
    for i in range(12):
        for j in range(12):
            if i // p == j // p:
                blk[i, j] = S[i, j]
    V = (1 - m) * S + m * blk
    C = S @ np.linalg.inv(V) @ S
    lam = np.sort(np.linalg.eigvalsh(C))[::-1]
    np.testing.assert_allclose(mats["V"], V, rtol=1e-12)
    np.testing.assert_allclose(mats["C"], C, rtol=1e-8, atol=1e-8 * np.abs(C).max())
    np.testing.assert_allclose(eigvals, lam, rtol=1e-8)
    assert cf.min_loss == pytest.approx(np.trace(S) - (1 - m) * lam[:k].sum(), rel=1e-10)
    # paper eq. 14: A* = V^-1 X^T X B^T (B B^T)^-1
    A14 = np.linalg.inv(V) @ S @ cf.B.T @ np.linalg.inv(cf.B @ cf.B.T)
    np.testing.assert_allclose(cf.A, A14, rtol=1e-8, atol=1e-10)
    assert lm.expected_loss(X, cf.A, cf.B, m, p) == pytest.approx(cf.min_loss, rel=1e-10)


@pytest.mark.parametrize(
    "m, patches, mode", [(0.5, 3, "bernoulli"), (0.8, 2, "bernoulli"), (0.5, 4, "fixed"), (0.5, "2d", "bernoulli")]
)
def test_closed_form_matches_gradient_descent(m, patches, mode):
    if patches == "2d":
        X, patches = data(200, 16, seed=4), lm.patch_index_2d(4, 4, 2)
    else:
        X = data()
    k = 3
    cf = lm.closed_form(X, m, patches, k, mask_mode=mode)
    fit = lm.train_linear_mae(
        X, m, patches, k, steps=1500, lr=3e-2, seed=0, objective="expected", mask_mode=mode, progress=False
    )
    loss = lm.expected_loss(X, fit.A, fit.B, m, patches, mask_mode=mode)  # Lemma 1, checked by enumeration
    assert loss == pytest.approx(fit.final_loss, rel=1e-9)
    gap = (loss - cf.min_loss) / cf.min_loss
    assert -1e-9 < gap < 1e-3
    angles = lm.principal_angles(fit.B.T, cf.B.T, degrees=True)  # decoder row spaces
    assert angles.max() < 1.0


def test_sampled_training_approaches_closed_form():
    X = data()
    cf = lm.closed_form(X, 0.5, 3, 3)
    fit = lm.train_linear_mae(X, 0.5, 3, 3, steps=1500, lr=1e-2, seed=0, objective="sampled", progress=False)
    assert (fit.final_loss - cf.min_loss) / cf.min_loss < 1e-2
    assert lm.principal_angles(fit.B.T, cf.B.T, degrees=True).max() < 5.0
    again = lm.train_linear_mae(X, 0.5, 3, 3, steps=1500, lr=1e-2, seed=0, objective="sampled", progress=False)
    np.testing.assert_array_equal(fit.A, again.A)  # same seed -> same numbers


def test_closed_form_is_a_lower_bound():
    X = data(60, 8, seed=5)
    cf = lm.closed_form(X, 0.5, 2, 2)
    rng = np.random.default_rng(0)
    for _ in range(20):
        A, B = rng.normal(size=(8, 2)), rng.normal(size=(2, 8))
        assert lm.expected_loss(X, A, B, 0.5, 2) >= cf.min_loss
        eps = 1e-3
        assert lm.expected_loss(X, cf.A + eps * A, cf.B + eps * B, 0.5, 2) >= cf.min_loss - 1e-9


def test_m_zero_is_pca():
    X = data(100, 10, seed=6)
    k = 3
    _, s, vt = np.linalg.svd(X, full_matrices=False)
    for p in (1, 2, 5):
        cf = lm.closed_form(X, 0.0, p, k)
        assert cf.min_loss == pytest.approx((s[k:] ** 2).sum(), rel=1e-9)
        assert lm.principal_angles(cf.B.T, vt[:k].T, degrees=True).max() < 1e-6
        np.testing.assert_allclose(cf.eigvals, s**2, rtol=1e-8)


def test_masking_changes_the_solution():
    X = data()
    pca = lm.closed_form(X, 0.0, 3, 3)
    masked = lm.closed_form(X, 0.75, 3, 3)
    assert lm.principal_angles(pca.B.T, masked.B.T, degrees=True).max() > 1.0


def test_principal_angles_by_hand():
    e = np.eye(3)
    u = e[:, :1]
    v = (e[:, :1] + e[:, 1:2]) / np.sqrt(2)
    assert lm.principal_angles(u, v, degrees=True)[0] == pytest.approx(45.0)
    assert lm.principal_angles(e[:, :2], e[:, 2:], degrees=True)[0] == pytest.approx(90.0)


def test_sampled_training_then_exact_polish_reaches_theorem1():
    """The notebook's pipeline: sampled-mask Adam, then Adam on the exact expected loss from there (init=...).
    Theorem 1's checks: relative loss gap < 1e-3 and largest principal angle < 1 degree."""
    X = data()
    m, p, k = 0.5, 3, 3
    cf = lm.closed_form(X, m, p, k)
    fit = lm.train_linear_mae(X, m, p, k, steps=1500, lr=1e-2, seed=1, objective="sampled", progress=False)
    gap_sgd = (lm.expected_loss(X, fit.A, fit.B, m, p) - cf.min_loss) / cf.min_loss
    assert 0 <= gap_sgd < 1e-2
    pol = lm.train_linear_mae(
        X, m, p, k, steps=500, lr=1e-3, seed=1, objective="expected", init=(fit.A, fit.B), progress=False
    )
    gap = (lm.expected_loss(X, pol.A, pol.B, m, p) - cf.min_loss) / cf.min_loss
    assert -1e-9 < gap < 1e-3 and gap <= gap_sgd
    assert lm.principal_angles(pol.B.T, cf.B.T, degrees=True).max() < 1.0
    # init is used as given: zero steps of learning rate ~0 leave it (almost) unchanged
    same = lm.train_linear_mae(X, m, p, k, steps=1, lr=1e-12, objective="expected", init=(cf.A, cf.B), progress=False)
    np.testing.assert_allclose(same.A, cf.A, atol=1e-9)


# ---------------------------------------------------------------------------------------------------------------
# denoising autoencoder baseline
# ---------------------------------------------------------------------------------------------------------------
def test_dae_expected_loss_monte_carlo():
    X = data(30, 8, seed=7)
    A, B = random_factors(8, 3)
    sigma = 0.7
    rng = np.random.default_rng(0)
    W = A @ B
    per = np.array([((X - (X + sigma * rng.normal(size=X.shape)) @ W) ** 2).sum() for _ in range(4000)])
    exact = lm.dae_expected_loss(X, A, B, sigma)
    assert abs(per.mean() - exact) < 4 * per.std(ddof=1) / np.sqrt(len(per))


def test_dae_closed_form_is_shrunk_pca():
    X = data(80, 10, seed=8)
    n, k, sigma = 80, 4, 0.5
    _, s, vt = np.linalg.svd(X, full_matrices=False)
    lam = s**2
    W_hand = vt[:k].T @ np.diag(lam[:k] / (lam[:k] + n * sigma**2)) @ vt[:k]
    cf = lm.dae_closed_form(X, sigma, k)
    np.testing.assert_allclose(cf.A @ cf.B, W_hand, atol=1e-10)
    assert cf.min_loss == pytest.approx(lm.dae_expected_loss(X, cf.A, cf.B, sigma), rel=1e-10)
    rng = np.random.default_rng(0)
    for _ in range(10):  # a minimum: random perturbations of the factors never do better
        dA, dB = rng.normal(size=cf.A.shape), rng.normal(size=cf.B.shape)
        assert lm.dae_expected_loss(X, cf.A + 1e-3 * dA, cf.B + 1e-3 * dB, sigma) >= cf.min_loss - 1e-9
    pca = lm.dae_closed_form(X, 0.0, k)
    assert pca.min_loss == pytest.approx((lam[k:]).sum(), rel=1e-9)


def smooth_images(n=300, size=6, seed=0):
    """Smooth random images (correlated pixels), flattened row-major, centred."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, size + 2, size + 2))
    x = (x[:, :-2, :-2] + x[:, 1:-1, 1:-1] + x[:, 2:, 2:] + x[:, 1:-1, :-2]) / 4  # local averaging
    x = x.reshape(n, -1)
    return x - x.mean(0)


def test_dae_full_rank_is_ridge_regression():
    from sklearn.linear_model import Ridge

    X = smooth_images(n=200, size=4)
    n, d = X.shape
    sigma = 0.3
    A, B, _, _ = lm.dae_closed_form(X, sigma, d)
    ridge = Ridge(alpha=n * sigma**2, fit_intercept=False).fit(X, X)
    np.testing.assert_allclose(A @ B, ridge.coef_.T, atol=1e-8)


def test_dae_loss_formula_matches_monte_carlo_and_closed_form_is_optimal():
    X = smooth_images(n=100, size=4)
    n, d = X.shape
    sigma, k = 0.4, 5
    A, B, min_loss, evals = lm.dae_closed_form(X, sigma, k)
    assert lm.dae_expected_loss(X, A, B, sigma) == pytest.approx(min_loss, rel=1e-9)
    # Monte-Carlo estimate of E ||X - (X + N) A B||^2 for the same factors
    rng = np.random.default_rng(0)
    W = A @ B
    mc = np.mean([((X - (X + sigma * rng.normal(size=X.shape)) @ W) ** 2).sum() for _ in range(4000)])
    assert mc == pytest.approx(min_loss, rel=1e-2)
    # no nearby rank-k factorisation does better
    for s in range(20):
        r = np.random.default_rng(s)
        dA, dB = 1e-2 * r.normal(size=A.shape), 1e-2 * r.normal(size=B.shape)
        assert lm.dae_expected_loss(X, A + dA, B + dB, sigma) >= min_loss - 1e-9
    assert np.all(np.diff(evals) <= 1e-9)


def test_dae_bad_inputs():
    X = smooth_images(n=20, size=3)
    with pytest.raises(ParameterError, match="^sigma"):  # sigma = 0 needs X^T X invertible: here rank 5 < d = 9
        lm.dae_closed_form(X[:5], 0.0, 2)
    with pytest.raises(ParameterError):
        lm.dae_closed_form(X, 0.1, 10)
    with pytest.raises(ParameterError):
        lm.dae_expected_loss(X, np.ones((9, 2)), np.ones((3, 9)), 0.1)


def test_dae_closed_form_agrees_with_the_pseudo_inverse_algorithm():
    """The project had two DAE closed forms: V^+ by a symmetric pseudo-inverse (maelab.linear_mae) and V^-1 S by an
    LU solve (formerly in maelab.jacobians). The solve was kept (no explicit inverse); both agree to ~1e-10 here."""
    for X, sigma, k in (
        (data(80, 10, seed=8), 0.5, 4),
        (smooth_images(n=200, size=4), 0.3, 7),
        (data(60, 12, seed=3), 0.05, 12),
        (data(80, 10, seed=8), 0.0, 3),
    ):
        n, d = X.shape
        S = X.T @ X
        V_pinv = np.linalg.pinv(S + n * sigma**2 * np.eye(d), hermitian=True)  # the removed version, verbatim
        C = S @ V_pinv @ S
        evals, evecs = np.linalg.eigh((C + C.T) / 2)
        order = np.argsort(evals)[::-1]
        evals, U = evals[order], evecs[:, order][:, :k]
        cf = lm.dae_closed_form(X, sigma, k)
        scale = np.abs(V_pinv @ S @ U @ U.T).max()
        np.testing.assert_allclose(cf.A @ cf.B, V_pinv @ S @ U @ U.T, rtol=0, atol=1e-10 * scale)
        np.testing.assert_allclose(cf.eigvals, evals, rtol=0, atol=1e-10 * evals[0])
        assert cf.min_loss == pytest.approx(float(np.trace(S) - evals[:k].sum()), rel=1e-10)


# ---------------------------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call, param",
    [
        (lambda X: lm.closed_form(X, 1.0, 3, 2), "m"),
        (lambda X: lm.closed_form(X, -0.1, 3, 2), "m"),
        (lambda X: lm.closed_form(X, 0.5, 5, 2), "p"),
        (lambda X: lm.closed_form(X, 0.5, np.zeros(5, dtype=int), 2), "patches"),
        (lambda X: lm.closed_form(X, 0.5, 3, 0), "k"),
        (lambda X: lm.closed_form(X, 0.5, 3, 13), "k"),
        (lambda X: lm.closed_form(X, 0.5, 3, 2, mask_mode="grid"), "mask_mode"),
        (lambda X: lm.closed_form(X, 0.9, 3, 2, mask_mode="fixed"), "m"),  # int(4 * 0.1) = 0 patches kept
        (lambda X: lm.closed_form(X[0], 0.5, 3, 2), "X"),
        (lambda X: lm.expected_loss(X, np.zeros((12, 2)), np.zeros((3, 12)), 0.5, 3), "B"),
        (lambda X: lm.train_linear_mae(X, 0.5, 3, 2, objective="exact"), "objective"),
        (lambda X: lm.patch_index_2d(4, 6, 4), "p"),
        (lambda X: lm.train_linear_mae(X, 0.5, 3, 2, init=(np.zeros((12, 3)), np.zeros((3, 12)))), "init"),
        (lambda X: lm.train_linear_mae(X, 0.5, 3, 2, init=np.zeros((12, 2))), "init"),
        (lambda X: lm.dae_closed_form(X, -1.0, 2), "sigma"),
    ],
)
def test_bad_inputs(call, param):
    with pytest.raises(ParameterError) as err:
        call(data())
    assert err.value.name == param


def test_closed_forms_at_several_ranks_equal_one_call_per_rank_bit_for_bit():
    X = np.random.default_rng(3).normal(size=(40, 16))
    ids = lm.patch_index_2d(4, 4, 2)
    for got, k in zip(lm.closed_forms(X, 0.5, ids, [2, 5, 16]), (2, 5, 16)):
        ref = lm.closed_form(X, 0.5, ids, k)
        assert np.array_equal(got.A, ref.A) and np.array_equal(got.B, ref.B) and got.min_loss == ref.min_loss
    for got, k in zip(lm.dae_closed_forms(X, 0.3, [1, 7]), (1, 7)):
        ref = lm.dae_closed_form(X, 0.3, k)
        assert np.array_equal(got.A, ref.A) and np.array_equal(got.B, ref.B) and got.min_loss == ref.min_loss
    with pytest.raises(ValueError, match="^ks must be a non-empty sequence of ranks"):
        lm.closed_forms(X, 0.5, ids, [])
    with pytest.raises(ValueError, match=r"^k must be an integer in \[1, d=16\]; got 17$"):
        lm.closed_forms(X, 0.5, ids, [2, 17])
