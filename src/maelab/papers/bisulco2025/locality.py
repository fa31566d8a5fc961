"""Bisulco et al. (2025), main Fig. 1 and supplement Figs. 5, 6, 13: how far what an MAE reads reaches.

**Paper-specific:** the measurements behind the ``bisulco_jacobians`` claims. The maps themselves (a linear
map's weight maps, a ViT MAE's masked-pixel Jacobians) come from :mod:`maelab.papers.bisulco2025.jacobians`; the
closed forms from :mod:`maelab.linear_mae`. Here:

* :func:`linear_weights`: ``W = A* B*`` of the optimal rank-k linear MAE (Theorem 1, Bernoulli masks) on H x W
  crops with p x p patches; ``m = 0`` is the plain linear **AE**, W = U_k U_k^T, the projector on the top-k
  principal components (checked against an SVD in the tests). The linear **DAE** baseline is
  :func:`maelab.linear_mae.dae_closed_form`.
* **Spread** (:func:`map_spread`): the ``q``-mass radius (:func:`maelab.metrics.mass_radius`) of a map around its
  output pixel: the smallest distance holding a fraction q of the absolute weight (q = 0.5: the half-mass
  radius). Masking alone pushes the visible pixels away from a removed pixel, so for the nonlinear maps we also
  report the same radius for a map that weighs every visible pixel equally (:func:`uniform_visible_spread`): the
  spread of a model that had no spatial preference at all.
* **Profiles** (:func:`binned_profile`, :func:`mean_profile`): mean absolute weight against distance, normalised
  per map as the paper's "normalised weight" (Fig. 13C).
* **Per image** (:func:`masked_pixel_spreads`): the spread of a trained ViT MAE's masked-pixel Jacobians and of
  the uniform-over-visible map, each averaged over the image's output pixels -- one number per test image, the
  measurement of the mask-ratio row on the shared zoo.
* **The trivial predictor** (:func:`visible_mean_loss`): the reconstruction loss of filling every removed pixel
  with the mean of the image's visible pixels -- the predictor whose Jacobian is the uniform-over-visible map of
  :func:`uniform_visible_spread`; the learning precondition of the nonlinear claims
  (:class:`maelab.claims.ReconstructionCheck`) compares each trained MAE's loss with it. :func:`image_mean_loss`
  is its closed form without masking (m = 0: the per-image pixel variance).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch

from maelab import linear_mae, metrics
from maelab._util import blas_limit
from maelab._validate import ParameterError, positive_int
from maelab.options import DryRunLimits, cap

from .jacobians import masked_pixel_jacobians

__all__ = [
    "binned_profile",
    "central_pixels",
    "image_mean_loss",
    "linear_weights",
    "map_spread",
    "masked_pixel_spreads",
    "mean_profile",
    "uniform_visible_spread",
    "visible_mean_loss",
]


def linear_weights(X: Any, m: float, patch_size: int, k: int, height: int, width: int) -> np.ndarray:
    """W = A* B* (d, d) of the optimal rank-k linear MAE (Bernoulli masks, mask ratio m, p x p patches of an
    H x W image); ``m = 0`` gives the linear AE (the top-k PCA projector)."""
    patches = linear_mae.patch_index_2d(height, width, patch_size)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != height * width:
        raise ParameterError("X", f"a 2-D array with height*width={height * width} columns", X.shape)
    with blas_limit(1):  # as the stored results were computed (see maelab._util.blas_limit)
        A, B, _, _ = linear_mae.closed_form(X, m, patches, k)
        return A @ B


def central_pixels(height: int, width: int, margin: int) -> np.ndarray:
    """(P, 2) (row, col) of the pixels at least ``margin`` pixels from every border, row-major."""
    positive_int("height", height)
    positive_int("width", width)
    positive_int("margin", margin, minimum=0)
    if 2 * margin >= min(height, width):
        raise ParameterError("margin", f"an integer < min(height, width)/2 = {min(height, width) / 2:g}", margin)
    r, c = np.mgrid[margin : height - margin, margin : width - margin]
    return np.stack([r.ravel(), c.ravel()], axis=1)


# ----------------------------------------------------------------------------------------------------------------
# spread and profiles
# ----------------------------------------------------------------------------------------------------------------
def _maps_np(maps: Any) -> np.ndarray:
    if isinstance(maps, torch.Tensor):
        maps = maps.detach().cpu().double().numpy()
    a = np.asarray(maps, dtype=np.float64)
    if a.ndim == 4:  # (N, C, H, W): sum |.| over channels
        a = np.abs(a).sum(axis=1)
    if a.ndim != 3:
        raise ParameterError("maps", "an (N, H, W) or (N, C, H, W) array", a.shape)
    return np.abs(a)


def _centres(centres: Any, n: int) -> np.ndarray:
    c = np.asarray(centres)
    if c.shape != (n, 2):
        raise ParameterError("centres", f"an ({n}, 2) array of (row, col)", c.shape)
    return c


def map_spread(maps: Any, centres: Any, q: float = 0.5) -> np.ndarray:
    """(N,) q-mass radius (:func:`maelab.metrics.mass_radius`) of each map around its centre (row, col)."""
    a = _maps_np(maps)
    c = _centres(centres, len(a))
    return np.array([metrics.mass_radius(m, (float(r), float(cc)), q) for m, (r, cc) in zip(a, c)])


def uniform_visible_spread(visible: Any, centres: Any, q: float = 0.5) -> np.ndarray:
    """(N,) q-mass radius of maps equal to 1 on visible pixels (``visible`` (N, H, W), 1 = visible) and 0 elsewhere:
    the spread of a reconstruction that weighs every visible pixel the same."""
    v = visible.detach().cpu().numpy() if isinstance(visible, torch.Tensor) else np.asarray(visible)
    if v.ndim != 3:
        raise ParameterError("visible", "an (N, H, W) 0/1 array", v.shape)
    return map_spread((v > 0).astype(np.float64), centres, q)


def masked_pixel_spreads(
    model,
    images: Any,
    mask_ratio: float,
    n_pixels: int,
    *,
    q: float = 0.5,
    seed: int = 0,
    batch_size: int = 500,
    caps: DryRunLimits | None = None,
) -> dict[str, np.ndarray]:
    """Per test image, the mean over ``n_pixels`` masked output pixels of the ``q``-mass radius of the model's
    Jacobian (``spread``, :func:`map_spread` of :func:`~maelab.papers.bisulco2025.jacobians.masked_pixel_jacobians`,
    channels summed) and of the uniform-over-visible map at the same pixels under the same mask (``baseline``,
    :func:`uniform_visible_spread`): two (N,) arrays.

    One mask per image, drawn at ``mask_ratio`` as the model draws them. ``images`` are taken ``batch_size`` at a
    time (the memory of one backward pass per pixel over a batch), and masks and pixels are drawn batch after batch
    from one CPU generator seeded with ``seed``: the numbers depend on ``batch_size`` as on ``seed``, so a stored
    result lists both. The radius does not depend on the scale of a map, so a model trained on normalised-pixel
    targets (the zoo) is read the same way as one trained on raw pixels. A dry run (``caps``) reads the first few
    images (:attr:`maelab.options.DryRunLimits.eval_images`)."""
    positive_int("n_pixels", n_pixels)
    positive_int("batch_size", batch_size)
    x = torch.as_tensor(images)
    if x.ndim != 4 or x.shape[0] == 0:
        raise ParameterError("images", "an (N, C, H, W) tensor with N >= 1", tuple(x.shape))
    x = x[: cap(x.shape[0], caps, "eval_images")]  # a dry run: the first few images
    g = torch.Generator().manual_seed(int(seed))
    spread, baseline = [], []
    for s in range(0, x.shape[0], batch_size):
        out = masked_pixel_jacobians(model, x[s : s + batch_size], mask_ratio, n_pixels, g)
        n = out["pixels"].shape[0]
        maps = out["jac"].reshape(n * n_pixels, *out["jac"].shape[2:])
        centres = out["pixels"].reshape(-1, 2).numpy()
        visible = out["visible"].repeat_interleave(n_pixels, dim=0)
        spread.append(map_spread(maps, centres, q).reshape(n, n_pixels).mean(axis=1))
        baseline.append(uniform_visible_spread(visible, centres, q).reshape(n, n_pixels).mean(axis=1))
    return {"spread": np.concatenate(spread), "baseline": np.concatenate(baseline)}


def binned_profile(map_: Any, centre, max_r: int, where: Any = None) -> np.ndarray:
    """Mean absolute value of ``map_`` (H, W) in distance bins ``round(|pixel - centre|) = 0..max_r``, counting only
    pixels where ``where`` (H, W) is true (all pixels when None). Empty bins are NaN. Not normalised."""
    a = _maps_np(map_[None] if isinstance(map_, torch.Tensor) else np.asarray(map_)[None])[0]
    positive_int("max_r", max_r, minimum=0)
    rows, cols = np.indices(a.shape)
    b = np.rint(np.hypot(rows - float(centre[0]), cols - float(centre[1]))).astype(np.int64).ravel()
    ok = np.ones(a.size, bool) if where is None else np.asarray(where, bool).ravel()
    if ok.shape[0] != a.size:
        raise ParameterError("where", f"a boolean map of shape {a.shape}", np.asarray(where).shape)
    ok &= b <= max_r
    cnt = np.bincount(b[ok], minlength=max_r + 1)
    tot = np.bincount(b[ok], weights=a.ravel()[ok], minlength=max_r + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan)


def mean_profile(maps: Any, centres: Any, max_r: int, where: Any = None) -> np.ndarray:
    """Average over maps of :func:`binned_profile`, each first divided by its own maximum (the paper's "normalised
    weight"); then the average is divided by its maximum again. Returns (max_r + 1,) for distances 0..max_r."""
    a = _maps_np(maps)
    c = _centres(centres, len(a))
    w = None if where is None else np.asarray(where.detach().cpu() if isinstance(where, torch.Tensor) else where, bool)
    profs = []
    for i, m in enumerate(a):
        p = binned_profile(m, c[i], max_r, None if w is None else w[i])
        top = np.nanmax(p) if np.isfinite(p).any() else 0.0
        if top > 0:
            profs.append(p / top)
    if not profs:
        raise ParameterError("maps", "at least one map with non-zero values", "all zeros")
    with warnings.catch_warnings():  # a bin empty in every map (e.g. distance 0 of a removed pixel) stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        out = np.nanmean(np.stack(profs), axis=0)
    return out / np.nanmax(out)


def image_mean_loss(images: Any) -> float:
    """Expected MAE loss (raw-pixel targets: per-pixel squared error averaged over the removed patches, then over
    images) of the trivial predictor that fills every removed pixel with its image's mean grey level.

    With patches removed uniformly at random every pixel is equally likely removed, so the expectation over masks is
    the mean over images of the per-image pixel variance (population variance). ``images``: (n, ...) array or tensor,
    one image per row. The predictor knows the mean of the whole image (removed pixels included), so it is, if
    anything, better than any predictor from the visible pixels' mean.
    """
    x = torch.as_tensor(images, dtype=torch.float64)
    if x.ndim < 2 or x.shape[0] == 0 or x[0].numel() < 2:
        raise ParameterError("images", "an (n, ...) array of n >= 1 images with >= 2 pixels each", tuple(x.shape))
    x = x.reshape(x.shape[0], -1)
    if not torch.isfinite(x).all():
        raise ParameterError("images", "finite pixel values", "non-finite values")
    return float(x.var(dim=1, unbiased=False).mean())


def visible_mean_loss(
    images: Any,
    mask_ratio: float,
    patch_size: int,
    *,
    n_masks: int = 8,
    seed: int = 0,
    caps: DryRunLimits | None = None,
) -> float:
    """MAE loss (raw-pixel targets, the official loss: per-pixel squared error averaged over the removed patches of
    the batch) of the trivial predictor that fills every removed pixel with the mean of its image's visible pixels.

    Its Jacobian weighs every visible pixel equally (the map of :func:`uniform_visible_spread`): a model whose loss
    is not well below this one has learned no spatial structure worth measuring. Masks as the official MAE
    (:func:`maelab.masking.random_masking`, ``n_masks`` per image from a generator seeded by ``seed``: a Monte-Carlo
    mean over masks); with ``mask_ratio`` 0 nothing is removed, the loss covers every patch and equals
    :func:`image_mean_loss`. ``images``: (n, H, W) or (n, C, H, W); a dry run (``caps``) reads the first few
    (:attr:`maelab.options.DryRunLimits.eval_images`).
    """
    from maelab import masking

    x = torch.as_tensor(images, dtype=torch.float64)
    if x.ndim == 3:
        x = x[:, None]
    if x.ndim != 4 or x.shape[0] == 0:
        raise ParameterError("images", "an (n, H, W) or (n, C, H, W) array with n >= 1", tuple(x.shape))
    positive_int("n_masks", n_masks)
    x = x[: cap(x.shape[0], caps, "eval_images")]  # a dry run: the first few images
    tokens = masking.patchify(x, patch_size)  # (n, L, p*p*C); checks that patch_size divides the image
    g = torch.Generator().manual_seed(int(seed))
    losses = []
    for _ in range(n_masks):
        _, mask, _ = masking.random_masking(tokens, mask_ratio, generator=g)  # 1 = removed
        vis = (1 - mask).to(tokens.dtype)
        mean = (tokens * vis[..., None]).sum(dim=(1, 2)) / (vis.sum(1) * tokens.shape[-1])
        err = ((tokens - mean[:, None, None]) ** 2).mean(-1)  # (n, L)
        removed = mask.to(tokens.dtype)
        losses.append(float((err * removed).sum() / removed.sum()) if removed.sum() > 0 else float(err.mean()))
    return float(np.mean(losses))
