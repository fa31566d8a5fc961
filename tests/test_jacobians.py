"""Tests for maelab.jacobians: linear AE = PCA projector (numpy SVD), the DAE closed form (ridge regression from
scikit-learn at full rank, Monte-Carlo loss, optimality against perturbations), weight maps and spreads on hand
examples, and the masked-pixel Jacobian of a ViT MAE (same prediction as the model's forward, zero on removed
pixels, per-image vjp from maelab.metrics.pixel_jacobian, finite differences)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from maelab import ParameterError, metrics, models
from maelab import jacobians as J


def images(n=300, size=6, seed=0):
    """Smooth random images (correlated pixels), flattened row-major, centred."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, size + 2, size + 2))
    x = (x[:, :-2, :-2] + x[:, 1:-1, 1:-1] + x[:, 2:, 2:] + x[:, 1:-1, :-2]) / 4  # local averaging
    x = x.reshape(n, -1)
    return x - x.mean(0)


# ---------------------------------------------------------------------------------------------------------------
# linear models
# ---------------------------------------------------------------------------------------------------------------
def test_linear_ae_is_the_pca_projector():
    X = images()
    k = 10
    W = J.linear_weights(X, 0.0, 2, k, 6, 6)
    _, _, vt = np.linalg.svd(X, full_matrices=False)
    np.testing.assert_allclose(W, vt[:k].T @ vt[:k], atol=1e-8)


def test_linear_mae_weights_are_the_closed_form_product():
    from maelab import linear_mae

    X = images()
    A, B, _, _ = linear_mae.closed_form(X, 0.5, linear_mae.patch_index_2d(6, 6, 3), 8)
    np.testing.assert_allclose(J.linear_weights(X, 0.5, 3, 8, 6, 6), A @ B, atol=1e-12)
    with pytest.raises(ParameterError):
        J.linear_weights(X, 0.5, 3, 8, 5, 6)


def test_dae_full_rank_is_ridge_regression():
    from sklearn.linear_model import Ridge

    X = images(n=200, size=4)
    n, d = X.shape
    sigma = 0.3
    A, B, _, _ = J.dae_closed_form(X, sigma, d)
    ridge = Ridge(alpha=n * sigma ** 2, fit_intercept=False).fit(X, X)
    np.testing.assert_allclose(A @ B, ridge.coef_.T, atol=1e-8)


def test_dae_loss_formula_matches_monte_carlo_and_closed_form_is_optimal():
    X = images(n=100, size=4)
    n, d = X.shape
    sigma, k = 0.4, 5
    A, B, min_loss, evals = J.dae_closed_form(X, sigma, k)
    assert J.dae_expected_loss(X, A, B, sigma) == pytest.approx(min_loss, rel=1e-9)
    # Monte-Carlo estimate of E ||X - (X + N) A B||^2 for the same factors
    rng = np.random.default_rng(0)
    W = A @ B
    mc = np.mean([((X - (X + sigma * rng.normal(size=X.shape)) @ W) ** 2).sum() for _ in range(4000)])
    assert mc == pytest.approx(min_loss, rel=1e-2)
    # no nearby rank-k factorisation does better
    for s in range(20):
        r = np.random.default_rng(s)
        dA, dB = 1e-2 * r.normal(size=A.shape), 1e-2 * r.normal(size=B.shape)
        assert J.dae_expected_loss(X, A + dA, B + dB, sigma) >= min_loss - 1e-9
    assert np.all(np.diff(evals) <= 1e-9)


def test_dae_bad_inputs():
    X = images(n=20, size=3)
    with pytest.raises(ParameterError):
        J.dae_closed_form(X, 0.0, 2)
    with pytest.raises(ParameterError):
        J.dae_closed_form(X, 0.1, 10)
    with pytest.raises(ParameterError):
        J.dae_expected_loss(X, np.ones((9, 2)), np.ones((3, 9)), 0.1)


def test_weight_maps_are_columns():
    W = np.arange(16.0).reshape(4, 4)
    maps = J.weight_maps(W, 2, 2)
    # output pixel 1 = (0, 1) reads input j with weight W[j, 1]
    np.testing.assert_array_equal(maps[1], [[1.0, 5.0], [9.0, 13.0]])
    with pytest.raises(ParameterError):
        J.weight_maps(W, 3, 2)


def test_central_pixels():
    c = J.central_pixels(5, 5, 2)
    np.testing.assert_array_equal(c, [[2, 2]])
    assert len(J.central_pixels(6, 8, 1)) == 4 * 6
    with pytest.raises(ParameterError):
        J.central_pixels(4, 4, 2)


def test_spreads_on_hand_examples():
    # a delta has zero spread; a ring of radius 2 (4 pixels at distance 2) has spread 2
    m = np.zeros((2, 7, 7))
    m[0, 3, 3] = 5.0
    m[1, 1, 3] = m[1, 5, 3] = m[1, 3, 1] = m[1, 3, 5] = -1.0
    np.testing.assert_array_equal(J.map_spread(m, [[3, 3], [3, 3]], 0.5), [0.0, 2.0])
    # channels are summed in absolute value, as in metrics.mass_radius
    mc = np.stack([m, -m], axis=1)
    np.testing.assert_array_equal(J.map_spread(mc, [[3, 3], [3, 3]], 0.5), [0.0, 2.0])
    # uniform over visible pixels: only (3, 3) and (3, 6) visible -> half of the mass at distance 0
    vis = np.zeros((1, 7, 7))
    vis[0, 3, 3] = vis[0, 3, 6] = 1
    assert J.uniform_visible_spread(vis, [[3, 3]], 0.5)[0] == 0.0
    assert J.uniform_visible_spread(vis, [[3, 3]], 0.9)[0] == 3.0
    with pytest.raises(ParameterError):
        J.map_spread(m, [[3, 3]], 0.5)


def test_profiles_by_hand():
    m = np.zeros((5, 5))
    m[2, 2] = 4.0
    m[2, 3] = 2.0          # bin 1 = round(distance) = 1: 4 pixels at distance 1 and 4 at sqrt(2)
    p = J.binned_profile(m, (2, 2), 2)
    np.testing.assert_allclose(p[:2], [4.0, 2.0 / 8])
    # restricting to some pixels averages over those only
    where = np.zeros((5, 5), bool)
    where[2, 3] = where[2, 2] = True
    np.testing.assert_allclose(J.binned_profile(m, (2, 2), 2, where), [4.0, 2.0, np.nan])
    prof = J.mean_profile(np.stack([m, 2 * m]), [[2, 2], [2, 2]], 2)
    np.testing.assert_allclose(prof[:2], [1.0, 0.0625])
    # agrees with metrics.radial_profile where bins coincide (the centre bin)
    _, rp = metrics.radial_profile(m, (2, 2), normalize=None)
    assert rp[0] == p[0]


# ---------------------------------------------------------------------------------------------------------------
# nonlinear MAE
# ---------------------------------------------------------------------------------------------------------------
def tiny_mae(seed=0):
    return models.create("mae", "micro", img_size=16, patch_size=4, in_chans=1, embed_dim=32, depth=1, num_heads=2,
                         decoder_embed_dim=32, decoder_depth=1, decoder_num_heads=2, norm_pix_loss=False,
                         seed=seed).double().eval()


def test_masked_prediction_equals_model_forward_with_same_mask():
    model = tiny_mae()
    x = torch.rand(3, 1, 16, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    out = model(x, mask_ratio=0.5, generator=torch.Generator().manual_seed(7))
    mask, ids_restore, ids_keep = J.draw_masks(model, 3, 0.5, torch.Generator().manual_seed(7))
    assert torch.equal(mask, out["mask"])
    pred = J.masked_prediction(model, x, ids_keep, ids_restore)
    torch.testing.assert_close(pred, model.unpatchify(out["pred"]))
    with pytest.raises(ParameterError):
        J.masked_prediction(model, x, ids_keep[:2], ids_restore)


def test_masked_pixel_jacobians_match_per_image_vjp_and_finite_differences():
    model = tiny_mae()
    x = torch.rand(3, 1, 16, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    res = J.masked_pixel_jacobians(model, x, 0.75, 3, generator=torch.Generator().manual_seed(5))
    jac, pix, vis = res["jac"], res["pixels"], res["visible"]
    assert jac.shape == (3, 3, 1, 16, 16) and pix.shape == (3, 3, 2) and vis.shape == (3, 16, 16)
    _, ids_restore, ids_keep = J.draw_masks(model, 3, 0.75, torch.Generator().manual_seed(5))
    for i in range(3):
        # the output pixels are removed pixels, and distinct
        assert all(vis[i, r, c] == 0 for r, c in pix[i].tolist())
        assert len({tuple(p) for p in pix[i].tolist()}) == 3
        # removed input pixels get exactly zero derivative (the encoder never sees them)
        assert torch.all(jac[i, :, 0][:, vis[i] == 0] == 0)
        f = lambda im, i=i: J.masked_prediction(model, im[None], ids_keep[i:i + 1], ids_restore[i:i + 1])[0]
        for j in range(3):
            r, c = pix[i, j].tolist()
            ref = metrics.pixel_jacobian(f, x[i], (0, r, c))
            torch.testing.assert_close(jac[i, j], ref)
    # central finite difference on one visible input pixel
    i, j = 0, 0
    r, c = pix[i, j].tolist()
    vr, vc = [int(v) for v in torch.nonzero(vis[i])[0]]
    f = lambda im: J.masked_prediction(model, im, ids_keep[:1], ids_restore[:1])[0, 0, r, c]
    e = torch.zeros_like(x[:1])
    e[0, 0, vr, vc] = 1e-6
    with torch.no_grad():
        fd = (f(x[:1] + e) - f(x[:1] - e)) / 2e-6
    assert float(jac[i, j, 0, vr, vc]) == pytest.approx(float(fd), rel=1e-5, abs=1e-9)


def test_masked_pixel_jacobians_without_mask_and_seeded():
    model = tiny_mae()
    x = torch.rand(2, 1, 16, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    a = J.masked_pixel_jacobians(model, x, 0.0, 2, generator=torch.Generator().manual_seed(0))
    b = J.masked_pixel_jacobians(model, x, 0.0, 2, generator=torch.Generator().manual_seed(0))
    assert torch.equal(a["jac"], b["jac"]) and torch.equal(a["pixels"], b["pixels"])
    assert torch.all(a["visible"] == 1)
    assert a["jac"].abs().sum() > 0
    with pytest.raises(ParameterError):
        J.masked_pixel_jacobians(model, x, 0.75, 1000, generator=torch.Generator().manual_seed(0))
    simmim = models.create("simmim", "micro", img_size=16, patch_size=4, in_chans=1)
    with pytest.raises(ParameterError):
        J.masked_pixel_jacobians(simmim, x.float(), 0.5, 1)
