"""Metrics for representations, reconstructions, Jacobians and layer-to-layer change.

Choices made here (and why):

* **Spectra and effective rank.** Singular values are computed in float64 with ``torch.linalg.svdvals``; features
  are column-centred by default (the spectrum of the covariance, which is what "dimensional collapse" refers to).
  The effective rank is Roy & Vetterli (2007): ``exp(H(p))`` with ``p_i = s_i / sum_j s_j`` and ``0 log 0 = 0``.
  It equals ``k`` for ``k`` equal non-zero singular values and 1 for a rank-1 matrix. No threshold is applied.
* **Image quality** goes through `piq` (well-kept, tested): SSIM with an 11 x 11 Gaussian window of sigma 1.5
  (Wang et al. 2004; piq's defaults) **with piq's automatic average-pool downsampling turned off**
  (``downsample=False``). With that, SSIM equals scikit-image's
  ``structural_similarity(gaussian_weights=True, sigma=1.5, use_sample_covariance=False, data_range=...)``
  (both average the SSIM map over the "valid" region, 5 pixels away from each border, and over channels).
  PSNR is piq's, i.e. ``-10 log10(MSE / data_range^2 + 1e-8)`` per image, so identical images give 80 dB rather
  than infinity. MSE is the plain per-image mean of squared differences in image units. FSIM is ``piq.fsim``;
  for 3-channel images it is FSIMc (chromatic, YIQ), for 1-channel images plain FSIM; other channel counts are
  refused. Every metric takes ``data_range`` (the maximum value, images live in ``[0, data_range]``; default 1.0)
  and returns per-image values (``reduction="none"``) or their mean (``"mean"``, default, as piq).
* **Reconstructions.** MAE predictions with ``norm_pix_loss`` live in per-patch normalised units;
  :func:`denormalize_patches` undoes that with the *target* image's per-patch mean and (unbiased, as
  ``Tensor.var`` in the official code) variance: ``pred * sqrt(var + 1e-6) + mean``.
  :func:`reconstruction_metrics` clamps predictions to ``[0, data_range]`` (as one does for display; piq requires
  it) and, with a mask, can score the "paste" image (visible pixels copied from the target, masked pixels from
  the prediction), which is what the MAE paper shows, and reports the MSE on masked pixels only (the quantity
  the MAE loss optimises).
* **CKA** is linear CKA (Kornblith et al. 2019) with the feature-space formula
  ``||Y^T X||_F^2 / (||X^T X||_F ||Y^T Y||_F)`` on column-centred X, Y, in float64.
* **Jacobians** use ``torch.func.vjp``: one vector-Jacobian product with a one-hot cotangent gives the whole row
  of the Jacobian for one output pixel, i.e. how every input pixel influences it. ``f`` must be deterministic
  (e.g. a reconstruction with a fixed mask).
* **Spatial spread** helpers work on the channel-summed absolute value of a (H, W) or (C, H, W) map and Euclidean
  pixel distances to a centre (row, col); they return NumPy values for plotting / fitting.
* **Mean ± standard error** (:func:`mean_sem`): the one formula the library uses for error bars over seeds,
  draws or images, ``std(ddof=1) / sqrt(n)``; with a single value the standard error is NaN (undefined).
* **Attention maps** (:func:`~maelab.attention.cls_attention`, :func:`~maelab.attention.token_attention`) live in
  :mod:`maelab.attention`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch

from ._validate import ParameterError, in_range, is_bool, one_of, positive_int
from .masking import patchify, unpatchify
from .options import DryRunLimits

__all__ = [
    "mean_sem",
    "singular_values",
    "effective_rank",
    "effective_rank_from_spectrum",
    "mse",
    "psnr",
    "ssim",
    "fsim",
    "denormalize_patches",
    "paste_image",
    "reconstruction_metrics",
    "linear_cka",
    "tsne",
    "pixel_jacobian",
    "radial_profile",
    "mass_radius",
    "decay_length",
    "relative_layer_change",
]

NORM_PIX_EPS = 1e-6  # official MAE: (var + 1.e-6) ** .5


def _shape(t) -> tuple:
    return tuple(t.shape) if hasattr(t, "shape") else type(t).__name__


def _as_matrix(name: str, x) -> torch.Tensor:
    if isinstance(x, np.ndarray):
        x = torch.from_numpy(x)
    if not isinstance(x, torch.Tensor) or x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ParameterError(name, "a 2-D tensor (n, d)", _shape(x))
    if not torch.isfinite(x).all():
        raise ParameterError(name, "finite (no NaN/inf)", "non-finite values")
    return x.detach().to("cpu", torch.float64)


# ----------------------------------------------------------------------------------------------------------------
# mean and standard error
# ----------------------------------------------------------------------------------------------------------------
def mean_sem(values, axis: int = 0) -> tuple:
    """Mean and standard error of the mean of ``values`` along ``axis``: ``(mean, std(ddof=1) / sqrt(n))``.

    Floats for 1-D input, arrays otherwise (numpy). With n = 1 the standard error is NaN (undefined, not 0).
    """
    a = np.asarray(values, dtype=np.float64)
    if a.ndim == 0 or a.shape[axis] == 0:
        raise ParameterError("values", "a non-empty array of numbers", a.shape)
    n = a.shape[axis]
    mean = a.mean(axis=axis)
    sem = a.std(axis=axis, ddof=1) / np.sqrt(n) if n > 1 else np.full_like(mean, np.nan)
    if a.ndim == 1:
        return float(mean), float(sem)
    return mean, sem


# ----------------------------------------------------------------------------------------------------------------
# spectrum and effective rank
# ----------------------------------------------------------------------------------------------------------------
def singular_values(features, center: bool = True) -> torch.Tensor:
    """Singular values (descending, float64, CPU) of a feature matrix ``features`` (n, d).

    ``center=True`` subtracts the column (feature) means first, so ``s**2 / (n - 1)`` are the eigenvalues of the
    feature covariance. ``min(n, d)`` values are returned.
    """
    x = _as_matrix("features", features)
    is_bool("center", center)
    if center:
        x = x - x.mean(dim=0, keepdim=True)
    return torch.linalg.svdvals(x)


def effective_rank_from_spectrum(s) -> float:
    """Roy & Vetterli (2007) effective rank of non-negative singular values ``s`` (1-D).

    ``p_i = s_i / sum_j s_j``, ``H = -sum_i p_i log p_i`` (0 log 0 = 0), returns ``exp(H)`` in [1, len(s)].
    """
    if isinstance(s, np.ndarray):
        s = torch.from_numpy(s)
    if not isinstance(s, torch.Tensor) or s.ndim != 1 or s.numel() < 1:
        raise ParameterError("s", "a 1-D tensor of singular values", _shape(s))
    s = s.detach().to("cpu", torch.float64)
    if not torch.isfinite(s).all() or (s < 0).any() or s.sum() <= 0:
        raise ParameterError("s", "finite, non-negative with a positive sum", "other values")
    p = s / s.sum()
    p = p[p > 0]
    return float(torch.exp(-(p * p.log()).sum()))


def effective_rank(features, center: bool = True) -> float:
    """Effective rank (Roy & Vetterli 2007) of a feature matrix (n, d); see :func:`singular_values`."""
    return effective_rank_from_spectrum(singular_values(features, center=center))


# ----------------------------------------------------------------------------------------------------------------
# image quality (piq)
# ----------------------------------------------------------------------------------------------------------------
_REDUCTIONS = ("mean", "none")


def _check_pair(
    x, y, data_range, *, min_size: int = 1, names: tuple[str, str] = ("x", "y")
) -> tuple[torch.Tensor, torch.Tensor, float]:
    xn, yn = names
    for name, t in ((xn, x), (yn, y)):
        if not isinstance(t, torch.Tensor) or t.ndim != 4 or not t.is_floating_point():
            raise ParameterError(name, "a floating 4-D tensor (N, C, H, W)", _shape(t))
    if x.shape != y.shape:
        raise ParameterError(yn, f"the same shape as {xn} {tuple(x.shape)}", tuple(y.shape))
    dr = in_range("data_range", data_range, 0.0, None, low_open=True)
    if min(x.shape[-2:]) < min_size:
        raise ParameterError(xn, f"images at least {min_size}x{min_size} pixels", tuple(x.shape))
    for name, t in ((xn, x), (yn, y)):
        if not torch.isfinite(t).all():
            raise ParameterError(name, "finite (no NaN/inf)", "non-finite values")
        lo, hi = float(t.min()), float(t.max())
        if lo < 0 or hi > dr:
            raise ParameterError(
                name, f"values in [0, data_range={dr:g}] (clamp predictions first)", f"values in [{lo:.4g}, {hi:.4g}]"
            )
    return x.detach(), y.detach(), dr


def _reduce(v: torch.Tensor, reduction: str) -> torch.Tensor:
    one_of("reduction", reduction, _REDUCTIONS)
    return v.mean() if reduction == "mean" else v


def mse(x: torch.Tensor, y: torch.Tensor, data_range: float = 1.0, reduction: str = "mean") -> torch.Tensor:
    """Per-image mean squared error over (C, H, W), in image units (not divided by ``data_range**2``)."""
    one_of("reduction", reduction, _REDUCTIONS)
    x, y, _ = _check_pair(x, y, data_range)
    return _reduce(((x - y) ** 2).mean(dim=(1, 2, 3)), reduction)


def psnr(x: torch.Tensor, y: torch.Tensor, data_range: float = 1.0, reduction: str = "mean") -> torch.Tensor:
    """Per-image PSNR in dB via ``piq.psnr`` (all channels, no greyscale conversion; capped at 80 dB)."""
    import piq

    one_of("reduction", reduction, _REDUCTIONS)
    x, y, dr = _check_pair(x, y, data_range)
    return _reduce(piq.psnr(x, y, data_range=dr, reduction="none"), reduction)


SSIM_KERNEL_SIZE, SSIM_SIGMA = 11, 1.5


def ssim(x: torch.Tensor, y: torch.Tensor, data_range: float = 1.0, reduction: str = "mean") -> torch.Tensor:
    """Per-image SSIM via ``piq.ssim``: Gaussian window 11 x 11, sigma 1.5, K1 = 0.01, K2 = 0.03,
    ``downsample=False`` (matches scikit-image, see module docstring); images need H, W >= 11."""
    import piq

    one_of("reduction", reduction, _REDUCTIONS)
    x, y, dr = _check_pair(x, y, data_range, min_size=SSIM_KERNEL_SIZE)
    v = piq.ssim(
        x, y, kernel_size=SSIM_KERNEL_SIZE, kernel_sigma=SSIM_SIGMA, data_range=dr, reduction="none", downsample=False
    )
    return _reduce(v, reduction)


def fsim(
    x: torch.Tensor, y: torch.Tensor, data_range: float = 1.0, reduction: str = "mean", chromatic: bool | None = None
) -> torch.Tensor:
    """Per-image FSIM via ``piq.fsim`` (Zhang et al. 2011). ``chromatic=None`` means FSIMc for 3-channel
    images and FSIM for 1-channel images; other channel counts are refused."""
    import piq

    one_of("reduction", reduction, _REDUCTIONS)
    x, y, dr = _check_pair(x, y, data_range)
    c = x.shape[1]
    if c not in (1, 3):
        raise ParameterError("x", "images with 1 or 3 channels for FSIM", tuple(x.shape))
    if chromatic is None:
        chromatic = c == 3
    is_bool("chromatic", chromatic)
    if chromatic and c != 3:
        raise ParameterError("chromatic", "False for 1-channel images", chromatic)
    v = piq.fsim(x, y, data_range=dr, reduction="none", chromatic=chromatic)
    return _reduce(v, reduction)


def denormalize_patches(pred: torch.Tensor, target_imgs: torch.Tensor, patch_size: int) -> torch.Tensor:
    """Undo MAE's per-patch target normalisation (``norm_pix_loss``) and return images.

    Args:
        pred: (N, L, p*p*C) predictions in normalised units (the model's ``pred``, channel fastest as
            :func:`maelab.masking.patchify`).
        target_imgs: (N, C, H, W) the images the targets came from.
        patch_size: p.
    Returns:
        (N, C, H, W) ``unpatchify(pred * sqrt(var + 1e-6) + mean)`` with ``mean``/``var`` of each target patch
        over its p*p*C values (``var`` unbiased, as ``Tensor.var`` in the official code).
    """
    if not isinstance(target_imgs, torch.Tensor) or target_imgs.ndim != 4:
        raise ParameterError("target_imgs", "a 4-D tensor (N, C, H, W)", _shape(target_imgs))
    target = patchify(target_imgs, patch_size)
    if not isinstance(pred, torch.Tensor) or pred.shape != target.shape:
        raise ParameterError("pred", f"a tensor of shape {tuple(target.shape)} (N, L, p*p*C)", _shape(pred))
    mean = target.mean(dim=-1, keepdim=True)
    var = target.var(dim=-1, keepdim=True)
    n, c, h, w = target_imgs.shape
    return unpatchify(pred * (var + NORM_PIX_EPS) ** 0.5 + mean, patch_size, c, (h // patch_size, w // patch_size))


def _pixel_mask(mask: torch.Tensor, shape: torch.Size, patch_size: int | None) -> torch.Tensor:
    n, c, h, w = shape
    if mask.ndim == 4:
        if mask.shape[0] != n or mask.shape[1] != 1 or tuple(mask.shape[2:]) != (h, w):
            raise ParameterError(
                "mask", f"a pixel mask (N, 1, H, W) = {(n, 1, h, w)} or a token mask (N, L)", tuple(mask.shape)
            )
        return mask.to(torch.float32)
    if mask.ndim == 2:
        if patch_size is None:
            raise ParameterError("patch_size", "given with a token mask (N, L)", patch_size)
        positive_int("patch_size", patch_size)
        if h % patch_size or w % patch_size or mask.shape != (n, (h // patch_size) * (w // patch_size)):
            raise ParameterError(
                "mask",
                f"a token mask (N, L) matching images {tuple(shape)} and patch_size={patch_size}",
                tuple(mask.shape),
            )
        gh, gw = h // patch_size, w // patch_size
        m = mask.reshape(n, gh, 1, gw, 1).expand(n, gh, patch_size, gw, patch_size)
        return m.reshape(n, 1, h, w).to(torch.float32)
    raise ParameterError("mask", "a pixel mask (N, 1, H, W) or a token mask (N, L)", _shape(mask))


def paste_image(
    pred_imgs: torch.Tensor, target_imgs: torch.Tensor, mask: torch.Tensor, patch_size: int | None = None
) -> torch.Tensor:
    """Visible pixels from ``target_imgs``, masked pixels (mask = 1 = removed) from ``pred_imgs``.

    ``mask`` is a pixel mask (N, 1, H, W) or a token mask (N, L) together with ``patch_size``.
    """
    if pred_imgs.shape != target_imgs.shape or pred_imgs.ndim != 4:
        raise ParameterError(
            "pred_imgs", f"a 4-D tensor shaped like target_imgs {tuple(target_imgs.shape)}", tuple(pred_imgs.shape)
        )
    m = _pixel_mask(mask, target_imgs.shape, patch_size).to(pred_imgs.device, pred_imgs.dtype)
    return target_imgs * (1 - m) + pred_imgs * m


def reconstruction_metrics(
    pred_imgs: torch.Tensor,
    target_imgs: torch.Tensor,
    mask: torch.Tensor | None = None,
    data_range: float = 1.0,
    *,
    patch_size: int | None = None,
    paste: bool = False,
    fsim_metric: bool = True,
    clamp: bool = True,
) -> dict[str, float]:
    """MSE, PSNR, SSIM (and FSIM) of reconstructions against targets, averaged over the batch.

    Args:
        pred_imgs, target_imgs: (N, C, H, W), targets in ``[0, data_range]``. Predictions are clamped to
            ``[0, data_range]`` when ``clamp`` (default) – otherwise they must already lie there.
        mask: optional pixel mask (N, 1, H, W) or token mask (N, L) (then give ``patch_size``), 1 = removed.
        paste: score the "paste" image (visible pixels from the target, masked pixels from the prediction)
            instead of the raw prediction; needs ``mask``.
        fsim_metric: include FSIM (1- or 3-channel images only; it is the slowest metric).
    Returns:
        A dict ``{"mse", "psnr", "ssim"[, "fsim"]}`` of floats; with a mask also ``"mse_masked"``, the MSE over
        masked pixels only (per image, then averaged), computed on the clamped prediction.
    """
    is_bool("paste", paste)
    is_bool("clamp", clamp)
    is_bool("fsim_metric", fsim_metric)
    dr = in_range("data_range", data_range, 0.0, None, low_open=True)
    if (
        not isinstance(pred_imgs, torch.Tensor)
        or not isinstance(target_imgs, torch.Tensor)
        or pred_imgs.shape != target_imgs.shape
        or pred_imgs.ndim != 4
    ):
        raise ParameterError(
            "pred_imgs", f"a 4-D tensor shaped like target_imgs {_shape(target_imgs)}", _shape(pred_imgs)
        )
    if paste and mask is None:
        raise ParameterError("mask", "given when paste=True", None)
    pred = pred_imgs.detach().to(target_imgs.dtype)
    if clamp:
        pred = pred.clamp(0.0, dr)
    target = target_imgs.detach()
    _check_pair(pred, target, dr, min_size=SSIM_KERNEL_SIZE, names=("pred_imgs", "target_imgs"))
    out: dict[str, float] = {}
    if mask is not None:
        m = _pixel_mask(mask, target.shape, patch_size).to(pred.device, pred.dtype)
        sq = ((pred - target) ** 2 * m).sum(dim=(1, 2, 3))
        cnt = m.sum(dim=(1, 2, 3)) * target.shape[1]
        out_masked = (sq / cnt.clamp_min(1)).mean()
        if paste:
            pred = target * (1 - m) + pred * m
    out["mse"] = float(mse(pred, target, dr))
    out["psnr"] = float(psnr(pred, target, dr))
    out["ssim"] = float(ssim(pred, target, dr))
    if fsim_metric:
        out["fsim"] = float(fsim(pred, target, dr))
    if mask is not None:
        out["mse_masked"] = float(out_masked)
    return out


# ----------------------------------------------------------------------------------------------------------------
# representation similarity and embeddings
# ----------------------------------------------------------------------------------------------------------------
def linear_cka(x, y) -> float:
    """Linear CKA (Kornblith et al. 2019) between ``x`` (n, d1) and ``y`` (n, d2), rows = the same n examples.

    ``||Yc^T Xc||_F^2 / (||Xc^T Xc||_F ||Yc^T Yc||_F)`` with column-centred Xc, Yc (float64). In [0, 1];
    invariant to orthogonal transforms and isotropic scaling of either side.
    """
    x = _as_matrix("x", x)
    y = _as_matrix("y", y)
    if x.shape[0] != y.shape[0]:
        raise ParameterError("y", f"the same number of rows as x ({x.shape[0]})", tuple(y.shape))
    x = x - x.mean(0, keepdim=True)
    y = y - y.mean(0, keepdim=True)
    den = torch.linalg.matrix_norm(x.T @ x) * torch.linalg.matrix_norm(y.T @ y)
    if den == 0:
        raise ParameterError("x", "non-constant features on both sides", "a constant matrix")
    return float(torch.linalg.matrix_norm(y.T @ x) ** 2 / den)


def tsne(
    features,
    *,
    perplexity: float = 30.0,
    seed: int = 0,
    max_iter: int = 1000,
    pca_dims: int | None = None,
    caps: DryRunLimits | None = None,
) -> np.ndarray:
    """2-D t-SNE embedding (n, 2) with scikit-learn ``TSNE`` (PCA init, ``learning_rate="auto"``, Barnes-Hut,
    ``random_state=seed``): same seed -> same embedding. ``pca_dims`` optionally reduces the features with
    (exact, deterministic) PCA first, a common speed-up for wide features. Needs ``perplexity < n``. ``caps``: a
    dry run's (:class:`maelab.options.DryRunLimits`): scikit-learn's fewest iterations (250); None: a real run.
    """
    from sklearn.manifold import TSNE

    x = _as_matrix("features", features).numpy()
    n = x.shape[0]
    if n < 4:
        raise ParameterError("features", "at least 4 rows", (n, x.shape[1]))
    in_range("perplexity", perplexity, 0.0, n, low_open=True, high_open=True)
    positive_int("max_iter", max_iter, minimum=250)
    if caps is not None:  # a dry run: scikit-learn's fewest iterations
        max_iter = 250
    if pca_dims is not None:
        positive_int("pca_dims", pca_dims, minimum=2)
        if pca_dims < min(x.shape):
            from sklearn.decomposition import PCA

            x = PCA(n_components=pca_dims, svd_solver="full").fit_transform(x)
    emb = TSNE(
        n_components=2,
        perplexity=float(perplexity),
        init="pca",
        learning_rate="auto",
        max_iter=max_iter,
        random_state=seed,
    ).fit_transform(x)
    return emb.astype(np.float32)


# ----------------------------------------------------------------------------------------------------------------
# Jacobians and spatial spread
# ----------------------------------------------------------------------------------------------------------------
def pixel_jacobian(
    f: Callable[[torch.Tensor], torch.Tensor], image: torch.Tensor, out_pixel: Sequence[int]
) -> torch.Tensor:
    """Gradient of one output entry ``f(image)[out_pixel]`` with respect to the input image.

    Args:
        f: a deterministic function of one image, e.g. ``(C, H, W) -> (C, H, W)`` (a model's reconstruction with
            a fixed mask); it must be differentiable by ``torch.func``.
        image: the input (C, H, W) (any shape ``f`` accepts).
        out_pixel: index into ``f``'s output, e.g. ``(c, i, j)``.
    Returns:
        A tensor shaped like ``image``, ``d f(image)[c, i, j] / d image`` (one row of the Jacobian), computed by
        one vector-Jacobian product with a one-hot cotangent.
    """
    from torch.func import vjp

    if not callable(f):
        raise ParameterError("f", "a callable image -> output", type(f).__name__)
    if not isinstance(image, torch.Tensor) or not image.is_floating_point():
        raise ParameterError("image", "a floating tensor", _shape(image))
    out, vjp_fn = vjp(f, image.detach())
    idx = tuple(int(i) for i in out_pixel) if isinstance(out_pixel, (tuple, list)) else None
    if idx is None or len(idx) != out.ndim or any(not (-s <= i < s) for i, s in zip(idx, out.shape)):
        raise ParameterError("out_pixel", f"an index tuple into f's output of shape {tuple(out.shape)}", out_pixel)
    cot = torch.zeros_like(out)
    cot[idx] = 1.0
    (grad,) = vjp_fn(cot)
    return grad.detach()


def _abs_map(map_, name: str = "map") -> np.ndarray:
    if isinstance(map_, torch.Tensor):
        map_ = map_.detach().cpu().double().numpy()
    a = np.asarray(map_, dtype=np.float64)
    if a.ndim == 3:
        a = np.abs(a).sum(axis=0)
    elif a.ndim == 2:
        a = np.abs(a)
    else:
        raise ParameterError(name, "a 2-D (H, W) or 3-D (C, H, W) map", a.shape)
    if not np.isfinite(a).all():
        raise ParameterError(name, "finite (no NaN/inf)", "non-finite values")
    return a


def _distances(shape: tuple[int, int], centre) -> np.ndarray:
    if not isinstance(centre, (tuple, list)) or len(centre) != 2:
        raise ParameterError("centre", "a (row, col) pair", centre)
    if not all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in centre):
        raise ParameterError("centre", "a (row, col) pair of numbers", centre)
    r0, c0 = (in_range("centre", float(v)) for v in centre)
    rows, cols = np.indices(shape)
    return np.hypot(rows - r0, cols - c0)


def radial_profile(map_, centre, *, normalize: str | None = "max") -> tuple[np.ndarray, np.ndarray]:
    """Mean absolute value against distance from ``centre`` (row, col).

    The map's absolute value is summed over channels (for (C, H, W)); pixels are binned by ``round(distance)``
    (bins of width 1 around integers). Returns ``(radii, profile)``: ``radii`` the mean distance of the pixels in
    each non-empty bin, ``profile`` the mean absolute value there, divided by its maximum (``normalize="max"``),
    by its sum (``"sum"``) or left as is (``None``).
    """
    one_of("normalize", normalize, ("max", "sum", None))
    a = _abs_map(map_)
    d = _distances(a.shape, centre).ravel()
    b = np.rint(d).astype(np.int64)
    cnt = np.bincount(b)
    keep = cnt > 0
    radii = np.bincount(b, weights=d)[keep] / cnt[keep]
    prof = np.bincount(b, weights=a.ravel())[keep] / cnt[keep]
    if normalize is not None:
        z = prof.max() if normalize == "max" else prof.sum()
        if z <= 0:
            raise ParameterError("map", "a map with non-zero absolute values", "all zeros")
        prof = prof / z
    return radii, prof


def mass_radius(map_, centre, q: float = 0.9) -> float:
    """Smallest distance r from ``centre`` (row, col) such that pixels within r hold at least a fraction ``q`` of
    the total absolute weight (channel-summed absolute value). Returns a pixel distance (one of the actual
    pixel-to-centre distances)."""
    q = in_range("q", q, 0.0, 1.0, low_open=True)
    a2 = _abs_map(map_)
    a = a2.ravel()
    total = a.sum()
    if total <= 0:
        raise ParameterError("map", "a map with non-zero absolute values", "all zeros")
    d = _distances(a2.shape, centre).ravel()
    order = np.argsort(d, kind="stable")
    cum = np.cumsum(a[order])
    k = int(np.searchsorted(cum, q * total * (1 - 1e-12), side="left"))
    return float(d[order][min(k, len(d) - 1)])


def decay_length(distances, values, *, method: str = "loglinear", return_amplitude: bool = False):
    """Fit ``values ~ A exp(-distance / ell)`` and return the decay length ``ell`` (and ``A`` if asked).

    ``method="loglinear"``: least squares of ``log|values|`` on distance (points with value 0 are dropped);
    ``"curve_fit"``: ``scipy.optimize.curve_fit`` on the values themselves (started from the log-linear fit),
    which weighs the large values near the centre more. A non-decaying fit (slope >= 0) gives ``inf``.
    """
    one_of("method", method, ("loglinear", "curve_fit"))
    is_bool("return_amplitude", return_amplitude)
    d = np.asarray(distances.detach().cpu() if isinstance(distances, torch.Tensor) else distances, dtype=np.float64)
    v = np.asarray(values.detach().cpu() if isinstance(values, torch.Tensor) else values, dtype=np.float64)
    if d.ndim != 1 or v.shape != d.shape:
        raise ParameterError("values", f"a 1-D array matching distances {d.shape}", v.shape)
    if not (np.isfinite(d).all() and np.isfinite(v).all()):
        raise ParameterError("values", "finite (no NaN/inf)", "non-finite values")
    v = np.abs(v)
    ok = v > 0
    if ok.sum() < 2 or np.ptp(d[ok]) == 0:
        raise ParameterError("values", "at least 2 non-zero values at distinct distances", int(ok.sum()))
    slope, intercept = np.polyfit(d[ok], np.log(v[ok]), 1)
    ell, amp = (math.inf if slope >= 0 else -1.0 / slope), math.exp(intercept)
    if method == "curve_fit" and math.isfinite(ell):
        from scipy.optimize import curve_fit

        (amp, ell), _ = curve_fit(
            lambda x, a_, l_: a_ * np.exp(-x / l_),
            d,
            v,
            p0=(amp, ell),
            bounds=([0.0, 1e-12], [np.inf, np.inf]),
            maxfev=10000,
        )
        amp, ell = float(amp), float(ell)
    return (float(ell), float(amp)) if return_amplitude else float(ell)


# ----------------------------------------------------------------------------------------------------------------
# layer-to-layer change
# ----------------------------------------------------------------------------------------------------------------
def relative_layer_change(tokens: Sequence[torch.Tensor], mode: str = "token", eps: float = 1e-12) -> torch.Tensor:
    """Relative change between consecutive layers' token representations.

    Args:
        tokens: list of per-layer tensors of one shape, e.g. (N, T, D) (the last axis is the feature axis).
        mode: ``"token"``: ``||v_{t+1} - v_t|| / ||v_t||`` for every token (norm over the last axis), then averaged
            over all tokens and samples; ``"global"``: ``||V_{t+1} - V_t||_F / ||V_t||_F`` over the whole tensor.
        eps: added to the denominator.
    Returns:
        float64 tensor of length ``len(tokens) - 1``; entry t compares layer t+1 with layer t.
    """
    one_of("mode", mode, ("token", "global"))
    in_range("eps", eps, 0.0, None)
    if not isinstance(tokens, (list, tuple)) or len(tokens) < 2:
        raise ParameterError("tokens", "a list of at least 2 per-layer tensors", type(tokens).__name__)
    shape = tokens[0].shape
    for t in tokens:
        if not isinstance(t, torch.Tensor) or t.shape != shape or t.ndim < 1:
            raise ParameterError("tokens", f"tensors of one shape {tuple(shape)}", _shape(t))
    out = []
    for a, b in zip(tokens[:-1], tokens[1:]):
        a = a.detach().double()
        b = b.detach().double()
        if mode == "token":
            out.append(((b - a).norm(dim=-1) / (a.norm(dim=-1) + eps)).mean())
        else:
            out.append((b - a).norm() / (a.norm() + eps))
    return torch.stack(out).cpu()
