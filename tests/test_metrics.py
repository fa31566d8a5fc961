"""Tests for maelab.metrics: every expected value comes from a closed form, a hand computation or another library."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from maelab import attention as A
from maelab import metrics as M
from maelab._validate import ParameterError
from maelab.masking import block_masking, patchify, random_masking


def _orthonormal(rows: int, cols: int, seed: int, centred: bool = False) -> torch.Tensor:
    a = torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    if centred:
        a = a - a.mean(0, keepdim=True)
    return torch.linalg.qr(a).Q


# ------------------------------------------------------------------------------------------------ spectrum
@pytest.mark.parametrize("k", [1, 3, 7])
@pytest.mark.parametrize("centred", [False, True])
def test_effective_rank_of_k_equal_singular_values_is_k(k, centred):
    u = _orthonormal(50, k, seed=k, centred=centred)  # centred columns stay centred: centring is a no-op
    v = _orthonormal(20, k, seed=100 + k)
    x = 3.0 * u @ v.T
    assert M.effective_rank(x, center=centred) == pytest.approx(k, abs=1e-8)


def test_effective_rank_of_rank_one_matrix_is_one():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(40, 1, generator=g) @ torch.randn(1, 16, generator=g)
    assert M.effective_rank(x, center=False) == pytest.approx(1.0, abs=1e-5)
    # centring a rank-1 matrix with a non-zero column mean can only keep or lower the rank (here: still 1)
    assert M.effective_rank(x, center=True) == pytest.approx(1.0, abs=1e-5)


def test_effective_rank_hand_computed_spectrum():
    p = np.array([3.0, 1.0]) / 4.0
    expected = math.exp(-(p * np.log(p)).sum())
    assert M.effective_rank_from_spectrum(torch.tensor([3.0, 1.0, 0.0])) == pytest.approx(expected, rel=1e-12)


def test_singular_values_match_numpy_on_centred_matrix():
    x = np.random.default_rng(0).normal(size=(30, 8)) + 5.0
    ref = np.linalg.svd(x - x.mean(0), compute_uv=False)
    np.testing.assert_allclose(M.singular_values(torch.from_numpy(x)).numpy(), ref, rtol=1e-10)
    ref_raw = np.linalg.svd(x, compute_uv=False)
    np.testing.assert_allclose(M.singular_values(x, center=False).numpy(), ref_raw, rtol=1e-10)


def test_spectrum_bad_inputs():
    with pytest.raises(ParameterError, match="features"):
        M.singular_values(torch.randn(5))
    with pytest.raises(ParameterError, match="center"):
        M.singular_values(torch.randn(5, 3), center="yes")
    with pytest.raises(ParameterError, match="^s must"):
        M.effective_rank_from_spectrum(torch.tensor([1.0, -1.0]))


# ------------------------------------------------------------------------------------------------ image quality
def _skimage_ssim(x: torch.Tensor, y: torch.Tensor, data_range: float = 1.0) -> np.ndarray:
    from skimage.metrics import structural_similarity

    return np.array(
        [
            structural_similarity(
                a.numpy(),
                b.numpy(),
                gaussian_weights=True,
                sigma=1.5,
                use_sample_covariance=False,
                data_range=data_range,
                channel_axis=0,
            )
            for a, b in zip(x.double(), y.double())
        ]
    )


def _skimage_psnr(x, y, data_range=1.0):
    from skimage.metrics import peak_signal_noise_ratio

    return np.array(
        [peak_signal_noise_ratio(b.numpy(), a.numpy(), data_range=data_range) for a, b in zip(x.double(), y.double())]
    )


def _noisy(x: torch.Tensor, sigma: float, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (x + sigma * torch.randn(x.shape, generator=g, dtype=x.dtype)).clamp(0, 1)


@pytest.mark.parametrize("channels", [1, 3])
def test_ssim_psnr_match_skimage_on_random_images(channels):
    x = torch.rand(3, channels, 32, 28, generator=torch.Generator().manual_seed(channels))
    y = _noisy(x, 0.1, seed=1)
    np.testing.assert_allclose(M.ssim(x, y, reduction="none").numpy(), _skimage_ssim(x, y), atol=1e-4)
    np.testing.assert_allclose(M.psnr(x, y, reduction="none").numpy(), _skimage_psnr(x, y), atol=1e-4)
    assert float(M.ssim(x, y)) == pytest.approx(_skimage_ssim(x, y).mean(), abs=1e-4)


def _natural_images():
    import skimage.data

    astro = torch.from_numpy(skimage.data.astronaut()).permute(2, 0, 1)[None].float() / 255.0  # 512 x 512 RGB
    camera = torch.from_numpy(skimage.data.camera())[None, None].float() / 255.0  # 512 x 512 grey
    return astro, camera


def test_ssim_psnr_match_skimage_on_natural_images():
    for img in _natural_images():
        img = img[..., 100:400, 100:400]  # 300 x 300: piq would average-pool by 1 (no-op) but keep test fast
        y = _noisy(img, 0.05, seed=2)
        np.testing.assert_allclose(M.ssim(img, y, reduction="none").numpy(), _skimage_ssim(img, y), atol=1e-4)
        np.testing.assert_allclose(M.psnr(img, y, reduction="none").numpy(), _skimage_psnr(img, y), atol=1e-4)


def test_ssim_disables_piq_downsampling_on_large_images():
    import piq

    astro, _ = _natural_images()  # 512 x 512: piq's default would average-pool by 2 first
    y = _noisy(astro, 0.05, seed=3)
    ref = _skimage_ssim(astro, y)[0]
    assert float(M.ssim(astro, y)) == pytest.approx(ref, abs=1e-4)
    assert abs(float(piq.ssim(astro, y, data_range=1.0)) - ref) > 1e-2  # the default really differs


def test_mse_and_data_range_scaling():
    x = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(4))
    y = _noisy(x, 0.2, seed=5)
    ref = ((x.double() - y.double()) ** 2).numpy().reshape(2, -1).mean(1)
    np.testing.assert_allclose(M.mse(x, y, reduction="none").numpy(), ref, rtol=1e-5)
    # metrics in [0, 255] units with data_range=255: same SSIM and PSNR, MSE scaled by 255^2
    assert float(M.ssim(x * 255, y * 255, data_range=255)) == pytest.approx(float(M.ssim(x, y)), abs=1e-5)
    assert float(M.psnr(x * 255, y * 255, data_range=255.0)) == pytest.approx(float(M.psnr(x, y)), abs=1e-3)
    np.testing.assert_allclose(float(M.mse(x * 255, y * 255, 255.0)), 255**2 * ref.mean(), rtol=1e-4)


def test_fsim_identity_monotone_and_channels():
    x = torch.rand(2, 3, 48, 48, generator=torch.Generator().manual_seed(6))
    assert M.fsim(x, x, reduction="none").numpy() == pytest.approx([1.0, 1.0], abs=1e-5)
    scores = [float(M.fsim(x, _noisy(x, s, seed=7))) for s in (0.02, 0.1, 0.3)]
    assert scores[0] > scores[1] > scores[2]
    grey = x[:, :1]
    assert float(M.fsim(grey, grey)) == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(ParameterError, match="chromatic"):
        M.fsim(grey, grey, chromatic=True)
    with pytest.raises(ParameterError, match="^x must"):
        M.fsim(x[:, :2], x[:, :2])


def test_image_metric_bad_inputs():
    x = torch.rand(1, 3, 16, 16)
    with pytest.raises(ParameterError, match="data_range"):
        M.ssim(x, x, data_range=0)
    with pytest.raises(ParameterError, match="^y must"):
        M.psnr(x, x[..., :8])
    with pytest.raises(ParameterError, match=r"^x must be values in \[0, data_range"):
        M.mse(x + 1.5, x)
    with pytest.raises(ParameterError, match="reduction"):
        M.mse(x, x, reduction="sum")
    with pytest.raises(ParameterError, match="^x must"):
        M.ssim(x[..., :8, :8], x[..., :8, :8])  # smaller than the 11 x 11 window


# ------------------------------------------------------------------------------------------------ reconstructions
def _normalise_patches_by_hand(imgs: torch.Tensor, p: int) -> torch.Tensor:
    """Official norm-pix target, computed patch by patch on the image (independent of patchify's ordering)."""
    out = torch.empty_like(imgs)
    n, c, h, w = imgs.shape
    for i in range(0, h, p):
        for j in range(0, w, p):
            patch = imgs[:, :, i : i + p, j : j + p].reshape(n, -1)
            mean = patch.mean(1)
            var = patch.var(1)  # unbiased, as Tensor.var in the official code
            out[:, :, i : i + p, j : j + p] = (imgs[:, :, i : i + p, j : j + p] - mean.view(n, 1, 1, 1)) / (
                var.view(n, 1, 1, 1) + 1e-6
            ).sqrt()
    return out


def test_denormalize_patches_inverts_norm_pix():
    imgs = torch.rand(2, 3, 16, 12, generator=torch.Generator().manual_seed(8), dtype=torch.float64)
    pred = patchify(_normalise_patches_by_hand(imgs, 4), 4)
    torch.testing.assert_close(M.denormalize_patches(pred, imgs, 4), imgs, rtol=0, atol=1e-12)
    with pytest.raises(ParameterError, match="pred"):
        M.denormalize_patches(pred[:, :-1], imgs, 4)


def test_paste_image_and_reconstruction_metrics():
    g = torch.Generator().manual_seed(9)
    target = torch.rand(2, 3, 16, 16, generator=g)
    pred = torch.rand(2, 3, 16, 16, generator=g)
    _, mask, _ = random_masking(torch.zeros(2, 16, 1), 0.75, generator=g)  # 4 x 4 grid of 4 x 4 patches
    pasted = M.paste_image(pred, target, mask, patch_size=4)
    for n in range(2):
        for t in range(16):
            i, j = 4 * (t // 4), 4 * (t % 4)
            src = pred if mask[n, t] == 1 else target
            torch.testing.assert_close(pasted[n, :, i : i + 4, j : j + 4], src[n, :, i : i + 4, j : j + 4])
    full = M.reconstruction_metrics(pred, target, mask, patch_size=4)
    err = ((pred - target) ** 2).mean(dim=1, keepdim=True)  # per pixel
    pix = mask.reshape(2, 4, 1, 4, 1).expand(2, 4, 4, 4, 4).reshape(2, 1, 16, 16)
    mse_masked_ref = float(((err * pix).sum((1, 2, 3)) / pix.sum((1, 2, 3))).mean())
    assert full["mse_masked"] == pytest.approx(mse_masked_ref, rel=1e-5)
    assert full["mse"] == pytest.approx(float(err.mean()), rel=1e-5)
    assert full["ssim"] == pytest.approx(float(_skimage_ssim(pred, target).mean()), abs=1e-4)
    # the paste image is exact on visible pixels: its MSE is the masked MSE times the masked fraction (0.75)
    pst = M.reconstruction_metrics(pred, target, mask, patch_size=4, paste=True, fsim_metric=False)
    assert pst["mse"] == pytest.approx(0.75 * mse_masked_ref, rel=1e-5)
    assert pst["psnr"] == pytest.approx(float(np.mean(_skimage_psnr(pasted, target))), abs=1e-3)
    assert "fsim" not in pst and 0 < full["fsim"] <= 1


def test_reconstruction_metrics_clamps_predictions_and_checks_inputs():
    target = torch.rand(1, 1, 16, 16, generator=torch.Generator().manual_seed(10))
    pred = target.clone()
    pred[..., 0, 0] = 3.0  # outside [0, 1]: clamped to 1
    res = M.reconstruction_metrics(pred, target, fsim_metric=False)
    assert res["mse"] == pytest.approx(float((1.0 - target[0, 0, 0, 0]) ** 2 / 256), rel=1e-5)
    with pytest.raises(ParameterError, match="^pred_imgs must be values"):
        M.reconstruction_metrics(pred, target, clamp=False)
    with pytest.raises(ParameterError, match="mask"):
        M.reconstruction_metrics(target, target, paste=True)
    with pytest.raises(ParameterError, match="patch_size"):
        M.reconstruction_metrics(target, target, torch.zeros(1, 16))
    with pytest.raises(ParameterError, match="data_range"):
        M.reconstruction_metrics(target, target, data_range=-1.0)


# ------------------------------------------------------------------------------------------------ CKA
def _cka_hsic(x: np.ndarray, y: np.ndarray) -> float:
    """Kornblith et al. eq. via HSIC with centred Gram matrices (independent of the feature-space formula)."""
    n = x.shape[0]
    h = np.eye(n) - np.ones((n, n)) / n
    k, l_ = x @ x.T, y @ y.T

    def hsic(a, b):
        return np.trace(a @ h @ b @ h) / (n - 1) ** 2

    return hsic(k, l_) / math.sqrt(hsic(k, k) * hsic(l_, l_))


def test_linear_cka_properties_and_hsic_formula():
    rng = np.random.default_rng(11)
    x = rng.normal(size=(40, 6))
    y = np.tanh(x @ rng.normal(size=(6, 9))) + 0.5 * rng.normal(size=(40, 9))
    q, _ = np.linalg.qr(rng.normal(size=(9, 9)))
    assert M.linear_cka(x, x) == pytest.approx(1.0, abs=1e-12)
    assert M.linear_cka(x, y) == pytest.approx(_cka_hsic(x, y), rel=1e-10)
    assert M.linear_cka(x, 7.0 * (y @ q) + 3.0) == pytest.approx(M.linear_cka(x, y), rel=1e-10)
    assert 0.0 < M.linear_cka(x, y) < 1.0
    with pytest.raises(ParameterError, match="^y must"):
        M.linear_cka(x, y[:-1])


# ------------------------------------------------------------------------------------------------ t-SNE
def test_tsne_seeded_shape_and_keeps_clusters_apart():
    rng = np.random.default_rng(12)
    x = np.concatenate([rng.normal(size=(25, 10)), rng.normal(size=(25, 10)) + 8.0])
    e1 = M.tsne(x, perplexity=10, seed=0, max_iter=500)
    e2 = M.tsne(torch.from_numpy(x), perplexity=10, seed=0, max_iter=500)
    assert e1.shape == (50, 2)
    np.testing.assert_array_equal(e1, e2)
    d = np.linalg.norm(e1[:, None] - e1[None], axis=-1)
    np.fill_diagonal(d, np.inf)
    nearest = d.argmin(1)
    assert ((nearest < 25) == (np.arange(50) < 25)).all()  # each point's nearest neighbour is in its cluster
    with pytest.raises(ParameterError, match="perplexity"):
        M.tsne(x, perplexity=50)


# ------------------------------------------------------------------------------------------------ Jacobians
def test_pixel_jacobian_of_convolution_is_the_kernel_at_the_position():
    g = torch.Generator().manual_seed(13)
    w = torch.randn(2, 2, 3, 3, generator=g, dtype=torch.float64)  # (C_out, C_in, 3, 3)

    def f(img):
        return torch.nn.functional.conv2d(img[None], w, padding=1)[0]

    img = torch.rand(2, 8, 9, generator=g, dtype=torch.float64)
    # PyTorch's conv2d is a cross-correlation: out[c,i,j] = sum w[c,c',a,b] x[c', i+a-1, j+b-1], so the Jacobian
    # row is the (unflipped) kernel centred on (i, j); a true convolution would give the flipped kernel.
    for c, i, j in [(0, 4, 5), (1, 2, 3), (1, 0, 0)]:
        expected = torch.zeros_like(img)
        for a in range(3):
            for b in range(3):
                ii, jj = i + a - 1, j + b - 1
                if 0 <= ii < 8 and 0 <= jj < 9:
                    expected[:, ii, jj] = w[c, :, a, b]
        torch.testing.assert_close(M.pixel_jacobian(f, img, (c, i, j)), expected, rtol=0, atol=1e-12)


def test_pixel_jacobian_matches_finite_differences():
    g = torch.Generator().manual_seed(14)
    w = torch.randn(2, 2, 3, 3, generator=g, dtype=torch.float64)

    def f(img):
        return torch.tanh(torch.nn.functional.conv2d(img[None], w, padding=1)[0]) ** 2 + img.mean()

    img = torch.rand(2, 5, 5, generator=g, dtype=torch.float64)
    out_pixel, h = (1, 2, 3), 1e-6
    fd = torch.zeros_like(img)
    for idx in np.ndindex(*img.shape):
        e = torch.zeros_like(img)
        e[idx] = h
        fd[idx] = (f(img + e)[out_pixel] - f(img - e)[out_pixel]) / (2 * h)
    torch.testing.assert_close(M.pixel_jacobian(f, img, out_pixel), fd, rtol=1e-6, atol=1e-8)
    with pytest.raises(ParameterError, match="out_pixel"):
        M.pixel_jacobian(f, img, (0, 5, 0))


# ------------------------------------------------------------------------------------------------ spatial spread
def _exp_map(size: int, ell: float, centre) -> np.ndarray:
    r = np.hypot(*(np.indices((size, size)) - np.array(centre, dtype=float).reshape(2, 1, 1)))
    return np.exp(-r / ell)


def test_radial_profile_hand_example():
    m = np.zeros((7, 7))
    m[3, 3] = 2.0
    m[2, 3], m[4, 3], m[3, 2], m[3, 4] = 1.0, -1.0, 1.0, -1.0  # distance 1; the 4 diagonals (sqrt 2) are 0
    radii, prof = M.radial_profile(m, (3, 3))
    assert radii[0] == 0 and radii[1] == pytest.approx((4 * 1 + 4 * math.sqrt(2)) / 8)
    assert prof[:3] == pytest.approx([1.0, (4 / 8) / 2.0, 0.0])  # ring 1 mean |m| = 0.5, divided by max 2
    _, raw = M.radial_profile(torch.from_numpy(np.stack([m, m])), (3, 3), normalize=None)
    assert raw[:2] == pytest.approx([4.0, 1.0])  # channels are summed in absolute value
    _, s = M.radial_profile(m, (3, 3), normalize="sum")
    assert s.sum() == pytest.approx(1.0)


def test_radial_profile_then_decay_length_recovers_known_length():
    ell = 3.0
    radii, prof = M.radial_profile(_exp_map(61, ell, (30, 30)), (30, 30))
    sel = radii <= 15
    assert M.decay_length(radii[sel], prof[sel]) == pytest.approx(ell, rel=0.03)


def test_mass_radius_hand_example_and_exponential_closed_form():
    from scipy.optimize import brentq

    m = np.zeros((9, 9))
    m[4, 4] = 0.5
    m[1, 4] = m[7, 4] = m[4, 1] = m[4, 7] = -0.125  # distance 3
    assert M.mass_radius(m, (4, 4), q=0.4) == 0.0
    assert M.mass_radius(m, (4, 4), q=0.5) == 0.0
    assert M.mass_radius(m, (4, 4), q=0.9) == 3.0
    assert M.mass_radius(m, (4, 4), q=1.0) == 3.0
    # continuous 2-D exponential: mass within r is 1 - exp(-x)(1 + x), x = r / ell
    ell, q = 4.0, 0.9
    x = brentq(lambda t: 1 - math.exp(-t) * (1 + t) - q, 0.1, 20)
    assert M.mass_radius(_exp_map(161, ell, (80, 80)), (80, 80), q=q) == pytest.approx(x * ell, rel=0.03)
    with pytest.raises(ParameterError, match="^q must"):
        M.mass_radius(m, (4, 4), q=0)
    with pytest.raises(ParameterError, match="centre"):
        M.mass_radius(m, (4,), q=0.5)


def test_decay_length_fits():
    d = np.linspace(0, 10, 21)
    v = 2.5 * np.exp(-d / 1.7)
    assert M.decay_length(d, v) == pytest.approx(1.7, rel=1e-10)
    ell, amp = M.decay_length(torch.from_numpy(d), torch.from_numpy(v), method="curve_fit", return_amplitude=True)
    assert (ell, amp) == (pytest.approx(1.7, rel=1e-6), pytest.approx(2.5, rel=1e-6))
    noisy = v * (1 + 0.02 * np.random.default_rng(15).normal(size=d.shape))
    assert M.decay_length(d, noisy, method="curve_fit") == pytest.approx(1.7, rel=0.05)
    v0 = v.copy()
    v0[-1] = 0.0  # dropped by the log fit
    assert M.decay_length(d, v0) == pytest.approx(1.7, rel=1e-10)
    assert M.decay_length(d, np.exp(d / 3)) == math.inf
    with pytest.raises(ParameterError, match="values"):
        M.decay_length(d, v[:-1])
    with pytest.raises(ParameterError, match="method"):
        M.decay_length(d, v, method="spline")


# ------------------------------------------------------------------------------------------------ attention
def _coded_attention(ids_keep: torch.Tensor, heads: int, query_code: bool = False) -> torch.Tensor:
    """(N, heads, 1 + Lk, 1 + Lk) whose entry for key token k is the key's grid position + 1000 * head
    (+ 100000 * (query grid position + 1) when query_code; the [CLS] query has code 0)."""
    n, lk = ids_keep.shape
    attn = torch.zeros(n, heads, 1 + lk, 1 + lk, dtype=torch.float64)
    for b in range(n):
        for h in range(heads):
            for qi in range(1 + lk):
                qpos = -1 if qi == 0 else int(ids_keep[b, qi - 1])
                for k in range(lk):
                    attn[b, h, qi, 1 + k] = ids_keep[b, k] + 1000 * h + (100000 * (qpos + 1) if query_code else 0)
    return attn


def test_cls_attention_places_visible_tokens_on_the_grid():
    g = torch.Generator().manual_seed(16)
    grid = (3, 4)
    _, mask, ids_restore = random_masking(torch.zeros(2, 12, 1), 0.5, generator=g)
    ids_keep = torch.argsort(ids_restore, dim=1)[:, :6]  # grid positions of the encoder's visible tokens
    attn = _coded_attention(ids_keep, heads=2)
    out = A.cls_attention(attn, grid, ids_restore=ids_restore)
    assert out.shape == (2, 2, 3, 4)
    for b in range(2):
        for h in range(2):
            for p in range(12):
                v = out[b, h, p // 4, p % 4]
                if mask[b, p] == 1:
                    assert torch.isnan(v)
                else:
                    assert v == p + 1000 * h
    zero = A.cls_attention(attn, grid, ids_restore=ids_restore, fill=0.0)
    assert (zero[mask.view(2, 1, 3, 4).expand(2, 2, 3, 4) == 1] == 0).all()


def test_cls_attention_with_block_mask_and_without_mask():
    g = torch.Generator().manual_seed(17)
    _, mask, ids_restore = block_masking(torch.zeros(1, 16, 1), 0.5, grid=(4, 4), unit=2, generator=g)
    ids_keep = torch.argsort(ids_restore, dim=1)[:, :8]
    attn = _coded_attention(ids_keep, heads=1)
    by_mask = A.cls_attention(attn, (4, 4), mask=mask)  # block masking keeps visible tokens in raster order
    by_ids = A.cls_attention(attn, (4, 4), ids_restore=ids_restore)
    torch.testing.assert_close(by_mask, by_ids, equal_nan=True)
    full = _coded_attention(torch.arange(16)[None], heads=1)
    torch.testing.assert_close(A.cls_attention(full, (4, 4)), torch.arange(16.0, dtype=torch.float64).view(1, 1, 4, 4))
    with pytest.raises(ParameterError, match="grid"):
        A.cls_attention(attn, (4, 4))
    with pytest.raises(ParameterError, match="attn_layer"):
        A.cls_attention(attn[0], (4, 4))


def test_token_attention_query_lookup_and_masked_query():
    grid = (2, 3)
    # sample 0 keeps patches [4, 0, 2] (encoder order), sample 1 keeps [1, 5, 3]
    ids_keep = torch.tensor([[4, 0, 2], [1, 5, 3]])
    ids_shuffle = torch.cat([ids_keep, torch.tensor([[1, 3, 5], [0, 2, 4]])], dim=1)
    ids_restore = torch.argsort(ids_shuffle, dim=1)
    attn = _coded_attention(ids_keep, heads=2, query_code=True)
    out = A.token_attention(attn, (0, 2), grid, ids_restore=ids_restore)  # patch 2: visible in 0, masked in 1
    assert out.shape == (2, 2, 2, 3)
    assert torch.isnan(out[1]).all()
    for h in range(2):
        for p in range(6):
            v = out[0, h, p // 3, p % 3]
            if p in (4, 0, 2):
                assert v == p + 1000 * h + 100000 * 3
            else:
                assert torch.isnan(v)
    torch.testing.assert_close(A.token_attention(attn, 2, grid, ids_restore=ids_restore), out, equal_nan=True)
    with pytest.raises(ParameterError, match="token_index"):
        A.token_attention(attn, 6, grid, ids_restore=ids_restore)


# ------------------------------------------------------------------------------------------------ layer change
def test_relative_layer_change_token_and_global():
    t0 = torch.tensor([[[1.0, 0.0], [10.0, 0.0]]])  # (N=1, T=2, D=2)
    t1 = torch.tensor([[[1.0, 1.0], [10.0, 0.0]]])  # only the small token moves, by 1
    t2 = 2 * t1
    tok = M.relative_layer_change([t0, t1, t2], mode="token")
    glo = M.relative_layer_change([t0, t1, t2], mode="global")
    assert tok.tolist() == pytest.approx([(1 / 1 + 0 / 10) / 2, 1.0])
    assert glo.tolist() == pytest.approx([1 / math.sqrt(101), 1.0])
    with pytest.raises(ParameterError, match="tokens"):
        M.relative_layer_change([t0])
    with pytest.raises(ParameterError, match="tokens"):
        M.relative_layer_change([t0, t0[:, :1]])
    with pytest.raises(ParameterError, match="mode"):
        M.relative_layer_change([t0, t1], mode="per-layer")


def test_mean_sem_by_hand():
    mean, sem = M.mean_sem([1.0, 2.0, 4.0])  # mean 7/3; sample variance ((4/3)^2 + (1/3)^2 + (5/3)^2) / 2
    assert mean == pytest.approx(7 / 3) and sem == pytest.approx(math.sqrt(42 / 18 / 3))
    m, s = M.mean_sem(np.array([[1.0, 0.0], [3.0, 0.0]]))  # per column
    np.testing.assert_allclose(m, [2.0, 0.0]) and np.testing.assert_allclose(s, [1.0, 0.0])
    m1, s1 = M.mean_sem([5.0])
    assert m1 == 5.0 and math.isnan(s1)  # one value: no standard error
    with pytest.raises(ParameterError):
        M.mean_sem([])
