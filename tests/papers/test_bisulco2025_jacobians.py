"""Tests for maelab.papers.bisulco2025.jacobians: weight maps as columns, and the masked-pixel Jacobian of a ViT
MAE (same prediction as the model's forward, zero on removed pixels, per-image vjp from
maelab.metrics.pixel_jacobian, finite differences)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from maelab import ParameterError, metrics, models
from maelab.papers.bisulco2025 import jacobians as J


def test_weight_maps_are_columns():
    W = np.arange(16.0).reshape(4, 4)
    maps = J.weight_maps(W, 2, 2)
    # output pixel 1 = (0, 1) reads input j with weight W[j, 1]
    np.testing.assert_array_equal(maps[1], [[1.0, 5.0], [9.0, 13.0]])
    with pytest.raises(ParameterError):
        J.weight_maps(W, 3, 2)


# ---------------------------------------------------------------------------------------------------------------
# nonlinear MAE
# ---------------------------------------------------------------------------------------------------------------
def tiny_mae(seed=0):
    return (
        models.create(
            "mae",
            "micro",
            img_size=16,
            patch_size=4,
            in_chans=1,
            embed_dim=32,
            depth=1,
            num_heads=2,
            decoder_embed_dim=32,
            decoder_depth=1,
            decoder_num_heads=2,
            norm_pix_loss=False,
            seed=seed,
        )
        .double()
        .eval()
    )


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
        f = lambda im, i=i: J.masked_prediction(model, im[None], ids_keep[i : i + 1], ids_restore[i : i + 1])[0]
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


def test_masked_pixel_spreads_are_per_image_means_of_the_maps_radii_batch_by_batch():
    from maelab.papers.bisulco2025 import locality as loc

    model = tiny_mae()
    x = torch.rand(3, 1, 16, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    got = loc.masked_pixel_spreads(model, x, 0.5, 2, q=0.5, seed=9, batch_size=2)
    assert got["spread"].shape == got["baseline"].shape == (3,)
    # by hand: the same draws (images 0-1, then image 2, from one generator), each map's radius from mass_radius
    g = torch.Generator().manual_seed(9)
    want_s, want_b = [], []
    for part in (x[:2], x[2:]):
        res = J.masked_pixel_jacobians(model, part, 0.5, 2, generator=g)
        for i in range(part.shape[0]):
            pix = res["pixels"][i].tolist()
            maps = [res["jac"][i, j, 0].abs().numpy() for j in range(2)]
            vis = res["visible"][i].numpy().astype(float)
            want_s.append(np.mean([metrics.mass_radius(m, (r, c), 0.5) for m, (r, c) in zip(maps, pix)]))
            want_b.append(np.mean([metrics.mass_radius(vis, (r, c), 0.5) for r, c in pix]))
    np.testing.assert_allclose(got["spread"], want_s, rtol=1e-12)
    np.testing.assert_allclose(got["baseline"], want_b, rtol=1e-12)
    # one batch of 3 draws in another order (every mask, then every pixel): the batch size is part of the draws
    one = loc.masked_pixel_spreads(model, x, 0.5, 2, q=0.5, seed=9, batch_size=3)
    assert not np.allclose(one["spread"], got["spread"])
    with pytest.raises(ParameterError, match="^n_pixels"):
        loc.masked_pixel_spreads(model, x, 0.5, 0)
    with pytest.raises(ParameterError, match="^images"):
        loc.masked_pixel_spreads(model, x[:, 0], 0.5, 2)
