"""Proposition 3.1: exact low-rank matrices, selections, block CUR, non-uniqueness and the existence construction,
on hand-checkable small cases."""

import numpy as np
import pytest

from maelab._validate import ParameterError
from maelab.papers.cao2022 import lowrank as L


def test_selections_shape_and_counts():
    p = L.permutation_selection(6, seed=3)
    assert (p.sum(0) == 1).all() and (p.sum(1) == 1).all()
    u = L.uniform_selection(6, 6, seed=3)
    assert u.sum() == 6
    t = L.two_permutation_selection(6, seed=3)
    assert (t.sum(0) == 2).all() and (t.sum(1) == 2).all()
    assert len(L.components(t)) == 1 and len(L.components(p)) == 6
    assert L.recoverable_fraction(p) == pytest.approx(1 / 6) and L.recoverable_fraction(t) == 1.0


def test_block_cur_by_hand_rank_one():
    # 4 x 4 rank-1 image a b^T, 2 x 2 patches; selected (0,0), (0,1), (1,1): patch (1,0) = u11 u01^+ u00
    a, b = np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, -1.0, 2.0, 0.5])
    img = np.outer(a, b)
    sel = np.array([[True, True], [False, True]])
    rec, known = L.block_cur(img, sel, 2)
    assert known.all()
    assert np.allclose(rec, img, atol=1e-13)
    # the path formula by hand for patch (1, 0)
    u = lambda i, j: img[2 * i : 2 * i + 2, 2 * j : 2 * j + 2]
    assert np.allclose(rec[2:, :2], u(1, 1) @ np.linalg.pinv(u(0, 1)) @ u(0, 0), atol=1e-13)


def test_permutation_selection_determines_only_its_patches():
    img = np.outer([1.0, 2.0, 3.0, 4.0], [1.0, -1.0, 2.0, 0.5])
    sel = np.array([[True, False], [False, True]])
    rec, known = L.block_cur(img, sel, 2)
    assert known.tolist() == [[True, False], [False, True]]
    assert np.allclose(rec[:2, :2], img[:2, :2]) and np.allclose(rec[2:, 2:], img[2:, 2:])
    fill = (img[:2, :2].mean() + img[2:, 2:].mean()) / 2
    assert np.allclose(rec[:2, 2:], fill)
    # and no method can do better: a different rank-1 image agrees on both selected patches
    other = L.nonunique_witness(img, sel, 2, 1)
    assert np.linalg.matrix_rank(other) == 1
    assert np.allclose(other[:2, :2], img[:2, :2]) and np.allclose(other[2:, 2:], img[2:, 2:])
    assert not np.allclose(other[:2, 2:], img[:2, 2:])


@pytest.mark.parametrize("r,nc", [(1, 4), (3, 4), (4, 4), (2, 6)])
def test_connected_selection_recovers_exact_low_rank(r, nc):
    n = 5
    img = L.low_rank_image(n * nc, r, seed=r)
    assert np.linalg.matrix_rank(img) == r
    rec, known = L.block_cur(img, L.two_permutation_selection(n, seed=1), nc, rank=r)
    assert known.all()
    assert L.relative_errors(img, rec, known, nc)["all"] < 1e-9


def test_rank_above_patch_side_breaks_block_cur():
    n, nc, r = 4, 3, 5
    img = L.low_rank_image(n * nc, r, seed=0)
    rec, known = L.block_cur(img, L.two_permutation_selection(n), nc, rank=r)
    assert L.relative_errors(img, rec, known, nc)["all"] > 1e-2


def test_identifiability_deficiency_closed_form():
    # n = 2, N_c = 2, r = 1 by hand: rank-1 4 x 4 matrices have 2*4 - 1 = 7 dimensions; the two diagonal patches
    # are rank-1 2 x 2 blocks (3 each): one direction (the relative scale) is unseen
    assert L.identifiability_deficiency(np.eye(2, dtype=bool), 2, 1) == 1
    for n, nc, r in [(4, 2, 1), (4, 3, 2), (3, 4, 3)]:
        assert L.identifiability_deficiency(L.permutation_selection(n), nc, r) == (n - 1) * r * r
        assert L.identifiability_deficiency(L.two_permutation_selection(n), nc, r) == 0


def test_factor_embedding_existence_reading():
    n, nc, r = 4, 6, 3
    img = np.random.default_rng(0).standard_normal((n * nc, n * nc))
    best, eps = L.truncate_rank(img, r)
    sel = L.permutation_selection(n, seed=2)
    y = L.factor_embedding(img, sel, nc, r)
    assert y.shape == (n, nc * nc)
    out = L.factor_reconstruct(y, sel, nc, r)
    assert np.allclose(out, best, atol=1e-12)
    assert np.linalg.norm(img - out) / np.linalg.norm(img) == pytest.approx(eps)
    with pytest.raises(ParameterError, match="r must be"):
        L.factor_embedding(img, sel, nc, 4)


def test_truncate_rank_error_by_hand():
    img = np.diag([3.0, 4.0])
    best, eps = L.truncate_rank(img, 1)
    assert np.allclose(best, np.diag([0.0, 4.0])) and eps == pytest.approx(3.0 / 5.0)


def test_bad_input():
    with pytest.raises(ParameterError, match="kind"):
        L.selection("diagonal", 4)
    with pytest.raises(ParameterError, match="patch"):
        L.block_cur(np.zeros((8, 8)), np.eye(4, dtype=bool), 3)
    with pytest.raises(ParameterError, match="sel"):
        L.components(np.zeros((3, 3), dtype=bool))
