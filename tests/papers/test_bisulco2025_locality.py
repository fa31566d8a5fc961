"""Tests for maelab.papers.bisulco2025.locality: linear AE = PCA projector (numpy SVD), the linear-MAE weights as
the closed-form product, central pixels, and spreads and profiles on hand examples."""

from __future__ import annotations

import numpy as np
import pytest

from maelab import ParameterError, metrics
from maelab.papers.bisulco2025 import locality as J


def images(n=300, size=6, seed=0):
    """Smooth random images (correlated pixels), flattened row-major, centred."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, size + 2, size + 2))
    x = (x[:, :-2, :-2] + x[:, 1:-1, 1:-1] + x[:, 2:, 2:] + x[:, 1:-1, :-2]) / 4  # local averaging
    x = x.reshape(n, -1)
    return x - x.mean(0)


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
    m[2, 3] = 2.0  # bin 1 = round(distance) = 1: 4 pixels at distance 1 and 4 at sqrt(2)
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


def test_image_mean_loss_is_the_mean_pixel_variance_and_the_expected_masked_loss():
    # image 1: pixels 0, 0, 2, 2 -> mean 1, variance 1; image 2: constant -> 0 (hand-computed): mean 0.5
    imgs = np.array([[[0.0, 0.0], [2.0, 2.0]], [[3.0, 3.0], [3.0, 3.0]]])
    assert J.image_mean_loss(imgs) == pytest.approx(0.5)
    # the same number as the loss of filling removed patches with the image mean, averaged over every mask that
    # removes one of four 1-pixel patches (the MAE loss of a mean predictor, enumerated)
    rng = np.random.default_rng(0)
    x = rng.random((3, 4))
    losses = [np.mean([(x[i, j] - x[i].mean()) ** 2 for i in range(3)]) for j in range(4)]
    assert J.image_mean_loss(x.reshape(3, 2, 2)) == pytest.approx(np.mean(losses))
    with pytest.raises(ParameterError, match="images"):
        J.image_mean_loss(np.zeros((0, 4)))


def test_visible_mean_loss_hand_cases():
    # two 1x2-pixel patches [0, 0] and [2, 2]: at m = 0.5 one is removed and filled with the other's mean, an error
    # of 2 on each of its pixels whichever is removed: loss 4 for every mask (hand-computed)
    img = np.array([[[0.0, 0.0, 2.0, 2.0], [0.0, 0.0, 2.0, 2.0]]])  # (1, 2, 4): patch 2 -> 2 patches
    assert J.visible_mean_loss(img, 0.5, 2, n_masks=5) == pytest.approx(4.0)
    # without masking every patch counts and the visible mean is the image mean: the pixel variance
    rng = np.random.default_rng(1)
    x = rng.random((4, 8, 8))
    assert J.visible_mean_loss(x, 0.0, 4, n_masks=2) == pytest.approx(J.image_mean_loss(x))
    # 4 patches, one kept (m = 0.75): the loss averages (removed - kept mean)^2 over the 4 choices; many masks
    # approach that enumeration, and a fixed seed repeats itself
    y = np.array([[[0.0, 1.0], [2.0, 3.0]]])  # 4 one-pixel patches
    enum = np.mean([np.mean([(y.ravel()[j] - y.ravel()[k]) ** 2 for j in range(4) if j != k]) for k in range(4)])
    est = J.visible_mean_loss(y, 0.75, 1, n_masks=4000, seed=3)
    assert est == pytest.approx(enum, rel=0.05) and est == J.visible_mean_loss(y, 0.75, 1, n_masks=4000, seed=3)
    with pytest.raises(ParameterError, match="n_masks"):
        J.visible_mean_loss(x, 0.5, 4, n_masks=0)
