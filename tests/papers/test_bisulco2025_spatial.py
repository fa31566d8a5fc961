"""Tests for maelab.papers.bisulco2025.spatial: torus centring against brute-force minimum-image distances, decay
length and mass radius on maps with a known answer, and the translation average against explicit augmentation with
all shifts."""

from __future__ import annotations

import numpy as np
import pytest

from maelab import ParameterError, metrics
from maelab.papers.bisulco2025 import spatial


def circulant(L, kernel):
    """(d, d) map with W[i, j] = kernel(torus distance between i and j)."""
    d = L * L
    return np.array([[kernel(spatial.torus_distance((L, L), i, j)) for j in range(d)] for i in range(d)])


def test_torus_distance_by_hand():
    assert spatial.torus_distance((8, 8), 0, 7) == 1.0  # (0,0)-(0,7) wraps
    assert spatial.torus_distance((8, 8), 0, 7 * 8 + 7) == pytest.approx(np.sqrt(2))
    assert spatial.torus_distance((8, 6), 0, 3 * 6 + 3) == pytest.approx(np.hypot(3, 3))
    assert spatial.torus_distance((5, 5), 0, 2 * 5 + 3) == pytest.approx(np.hypot(2, 2))


def test_centred_fields_match_brute_force_distances():
    L = 6
    rng = np.random.default_rng(0)
    W = rng.normal(size=(L * L, L * L))
    F = spatial.centred_fields(W, (L, L))
    rows, cols = np.indices((L, L))
    centre_dist = np.hypot(rows - L // 2, cols - L // 2)
    for j in (0, 7, 20, 35):
        # every input pixel appears exactly once, at a position whose distance to the centre is its torus distance
        assert sorted(F[j].ravel()) == sorted(W[:, j])
        for i in range(L * L):
            (a,), (b,) = np.nonzero(F[j] == W[i, j])
            assert centre_dist[a, b] == pytest.approx(spatial.torus_distance((L, L), i, j))
        assert F[j][L // 2, L // 2] == W[j, j]


def test_exponential_kernel_gives_its_decay_length():
    L, ell = 16, 2.5
    W = circulant(L, lambda r: np.exp(-r / ell))
    sc = spatial.spatial_scale(W, (L, L))
    # bins of width 1 average exp(-r/ell) over the distances they hold (plotted at their mean distance): a small
    # convexity bias, well under 1%
    assert sc["decay_length"] == pytest.approx(ell, rel=5e-3)
    # a circulant map: every receptive field is the same, so the mass radius has no spread over fields
    assert sc["mass_radius_sd"] == pytest.approx(0.0, abs=1e-12)
    F = spatial.centred_fields(W, (L, L))
    assert sc["mass_radius"] == pytest.approx(metrics.mass_radius(F[0], (L // 2, L // 2), 0.9))


def test_wider_kernel_has_larger_scale():
    L = 12
    narrow = spatial.spatial_scale(circulant(L, lambda r: np.exp(-r / 1.0)), (L, L))
    wide = spatial.spatial_scale(circulant(L, lambda r: np.exp(-r / 3.0)), (L, L))
    assert wide["decay_length"] > narrow["decay_length"]
    assert wide["mass_radius"] > narrow["mass_radius"]


def test_mass_radius_of_identity_plus_neighbours():
    """W = I + 0.5 (nearest neighbours): mass 1 at r = 0 and 4 x 0.5 at r = 1, so 90% needs r = 1 and 30% r = 0.
    Beyond r = 1 every weight is 0: no decay length can be fitted (nan)."""
    L = 8
    W = circulant(L, lambda r: 1.0 if r == 0 else (0.5 if r == 1 else 0.0))
    sc = spatial.spatial_scale(W, (L, L), q=0.9)
    assert sc["mass_radius"] == 1.0 and np.isnan(sc["decay_length"])
    assert spatial.spatial_scale(W, (L, L), q=0.3)["mass_radius"] == 0.0
    # round-off is not structure: an identity map computed in floating point has no decay length and radius 0
    rng = np.random.default_rng(0)
    noisy_eye = np.eye(L * L) + 1e-16 * rng.normal(size=(L * L, L * L))
    sc = spatial.spatial_scale(noisy_eye, (L, L))
    assert np.isnan(sc["decay_length"]) and sc["mass_radius"] == 0.0


def test_translation_average_equals_explicit_augmentation():
    L, n = 4, 5
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, L * L))
    imgs = X.reshape(n, L, L)
    aug = np.concatenate([np.roll(imgs, (a, b), axis=(1, 2)).reshape(n, -1) for a in range(L) for b in range(L)])
    S_aug = aug.T @ aug / aug.shape[0]
    Z = spatial.translation_averaged_data(X, (L, L))
    np.testing.assert_allclose(Z.T @ Z / (L * L), S_aug, atol=1e-10)
    # already translation invariant data (all shifts present) are left as they are
    Z2 = spatial.translation_averaged_data(aug, (L, L))
    np.testing.assert_allclose(Z2.T @ Z2 / (L * L), S_aug, atol=1e-10)


@pytest.mark.parametrize(
    "call, param",
    [
        (lambda: spatial.spatial_scale(np.eye(16), (4, 5)), "W"),
        (lambda: spatial.spatial_scale(np.eye(16), (4,)), "shape"),
        (lambda: spatial.spatial_scale(np.eye(16), (4, 4), q=0.0), "q"),
        (lambda: spatial.centred_fields(np.eye(16), (4, 4), [16]), "outputs"),
        (lambda: spatial.translation_averaged_data(np.ones((3, 15)), (4, 4)), "X"),
    ],
)
def test_bad_inputs(call, param):
    with pytest.raises(ParameterError) as err:
        call()
    assert err.value.name == param
