"""Theorem 5.1 (a) kernels: hand-computed cases, an independent dense softmax attention, closed forms and
convergence orders against a high-resolution reference."""

import math

import numpy as np
import pytest
import torch
from scipy import stats

from maelab._validate import ParameterError
from maelab.papers.cao2022 import kernels as K


@pytest.mark.parametrize("scaling,width", [("grid", 1.0), ("continuum", 0.1)])
@pytest.mark.parametrize("kernel", K.KERNELS)
def test_constant_map_does_not_change(scaling, width, kernel):
    v = K.feature_map("constant", 12, d=3)
    r = K.layer_change(v, width, scaling, kernel)
    assert max(r[nm] for nm in K.NORMS) < 1e-13
    assert r["bv"] == 0.0


def test_unnormalised_constant_by_hand():
    # n = 2, grid width 1: the two points are one grid unit apart, K1 = [[1, e^-1/2], [e^-1/2, 1]], A1 = K1 / 2
    v = np.ones((2, 2, 1))
    out = K.apply_attention(v, K.attention_1d(2, 1.0, "grid", "gaussian", "none"))
    assert np.allclose(out, ((1 + math.exp(-0.5)) / 2) ** 2, rtol=0, atol=1e-15)


def test_softmax_matches_dense_attention():
    # independent: torch softmax over logits -||x_i - x_j||^2 / (2 w^2) on the n^2 points, W^V = I
    n, w, d = 7, 0.13, 3
    v = K.feature_map("smooth", n, d=d, seed=3)
    x = (np.arange(n) + 0.5) / n
    pts = torch.tensor(np.stack(np.meshgrid(x, x, indexing="ij"), -1).reshape(-1, 2))
    logits = -(torch.cdist(pts, pts) ** 2) / (2 * w * w)
    dense = torch.softmax(logits, dim=-1) @ torch.tensor(v.reshape(-1, d))
    ours = K.apply_attention(v, K.attention_1d(n, w, "continuum", "gaussian"))
    assert np.allclose(ours.reshape(-1, d), dense.numpy(), rtol=0, atol=1e-13)
    # laplace (l1 distance) too
    logits = -torch.cdist(pts, pts, p=1) / w
    dense = torch.softmax(logits, dim=-1) @ torch.tensor(v.reshape(-1, d))
    ours = K.apply_attention(v, K.attention_1d(n, w, "continuum", "laplace"))
    assert np.allclose(ours.reshape(-1, d), dense.numpy(), rtol=0, atol=1e-13)


def test_ramp_symmetric_interior_and_boundary_by_hand():
    n = 41
    v = K.feature_map("ramp", n, d=1)
    out = K.apply_attention(v, K.attention_1d(n, 1.0, "grid"))
    delta = (out - v)[:, :, 0]
    c = n // 2
    assert abs(delta[c, c]) < 1e-15  # exactly symmetric neighbourhood
    assert np.abs(delta[10:31]).max() < 1e-15  # > 10 widths from the boundary: tails below 1e-21
    # n = 3, first point x = 1/6: softmax weights 1, e^-1/2, e^-2 at x = 1/6, 1/2, 5/6
    w = np.array([1.0, math.exp(-0.5), math.exp(-2.0)])
    want = (w @ np.array([1 / 6, 1 / 2, 5 / 6])) / w.sum() - 1 / 6
    out3 = K.apply_attention(K.feature_map("ramp", 3, d=1), K.attention_1d(3, 1.0, "grid"))
    assert out3[0, 1, 0] - 1 / 6 == pytest.approx(want, abs=1e-15)


def test_continuum_limit_is_truncated_normal_mean_second_order():
    # continuum operator on v = x_1: mean of N(x, w^2) truncated to [0, 1]; the discrete one is a midpoint rule, O(h^2)
    w = 0.15
    errs = []
    for n in (27, 81):
        out = K.apply_attention(K.feature_map("ramp", n, d=1), K.attention_1d(n, w, "continuum"))[:, 0, 0]
        x = K.grid_points(n)
        exact = stats.truncnorm.mean((0 - x) / w, (1 - x) / w, loc=x, scale=w)
        errs.append(np.abs(out - exact).max())
    assert errs[0] < 1e-3
    assert 7.0 < errs[0] / errs[1] < 11.0


def test_convergence_order_against_high_resolution_reference():
    w, ref_n = 0.12, 729
    ref = K.apply_attention(K.feature_map("smooth", ref_n, seed=1), K.attention_1d(ref_n, w, "continuum"))
    errs = []
    for n in (27, 81):
        step = ref_n // n  # cell centres of n nest in those of 3^k n at offset step // 2
        sub = ref[step // 2 :: step, step // 2 :: step]
        out = K.apply_attention(K.feature_map("smooth", n, seed=1), K.attention_1d(n, w, "continuum"))
        errs.append(np.abs(out - sub).max())
    assert 7.0 < errs[0] / errs[1] < 11.0


def test_bv_seminorm_by_hand():
    for n in (4, 10):
        assert K.bv_seminorm(K.feature_map("ramp", n, d=1)) == pytest.approx((n - 1) / n, abs=1e-14)
    # v = x_1 + x_2 (one channel): every interior point has differences (1/n, 1/n) -> sqrt(2)/n
    n = 5
    x = K.grid_points(n)
    v = (x[:, None] + x[None, :])[:, :, None]
    want = ((n - 1) ** 2 * math.sqrt(2) / n + 2 * (n - 1) / n) / n
    assert K.bv_seminorm(v) == pytest.approx(want, abs=1e-14)


def test_norms_by_hand():
    v = np.zeros((4, 4, 2))
    v[0, 0] = (3.0, 4.0)
    assert K.field_norm(v, "sup") == 5.0
    assert K.field_norm(v, "l1") == 5.0 / 16
    assert K.field_norm(v, "l2") == pytest.approx(math.sqrt(25 / 16))
    assert K.field_norm(v, "l2_interior") == 0.0  # (0, 0) lies outside [1/4, 3/4]^2


def test_rates_follow_the_kernel_scaling():
    ns = [16, 32, 64, 128]
    grid = K.rate_study(ns, n_maps=3, scaling="grid", width=1.0)
    assert grid["rate"]["sup"][0] == pytest.approx(-1.0, abs=0.15)  # boundary layer: 1/n
    assert grid["rate"]["l2_interior"][0] == pytest.approx(-2.0, abs=0.15)  # symmetric interior: 1/n^2
    assert grid["rate"]["l2"][2] < -1.0
    cont = K.rate_study(ns, n_maps=3, scaling="continuum", width=0.1)
    assert abs(cont["rate"]["l2"][0]) < 0.1  # converges to a fixed smoothing
    unnorm = K.rate_study(ns, n_maps=3, scaling="grid", width=1.0, normalisation="none")
    assert abs(unnorm["rate"]["l2"][0]) < 0.1


def test_loglog_slope_and_ci_by_hand():
    assert K.loglog_slope([2, 4, 8], [1.0, 0.5, 0.25]) == pytest.approx(-1.0)
    m, lo, hi = K.mean_ci([1.0, 3.0])
    assert m == 2.0 and hi - m == pytest.approx(stats.t.ppf(0.975, 1) * math.sqrt(2) / math.sqrt(2))


def test_bad_input_one_line():
    with pytest.raises(ParameterError, match="scaling"):
        K.attention_1d(4, 1.0, "pixels")
    with pytest.raises(ParameterError, match="width"):
        K.attention_1d(4, 0.0)
    with pytest.raises(ParameterError, match="v must be"):
        K.apply_attention(np.zeros((3, 4)), np.eye(3))
    with pytest.raises(ParameterError, match="values"):
        K.loglog_slope([1, 2], [1.0, 0.0])
