"""Spatial spread of what a (linear or nonlinear) masked autoencoder reads: weight maps and masked-pixel Jacobians.

Bisulco et al. (supplement, Figs 5, 6, 13) look at *which input pixels a reconstructed pixel depends on*, and how
far away they are, for linear MAEs / AEs / DAEs (the weight matrix ``W = A B``) and for a nonlinear ViT MAE (the
Jacobian of one output pixel with respect to the input). This module computes both, and one number per map: its
spatial spread.

Linear models (data rows ``x`` of d = H*W pixels, row-major; prediction ``x_hat = x_in @ W``)
------------------------------------------------------------------------------------------------
* **MAE** with mask ratio m and patch p: ``W = A* B*`` of :func:`maelab.linear_mae.closed_form` (Bernoulli masks,
  Lemma 1 / Theorem 1). ``m = 0`` is the plain linear **AE**: V = S, C = S and W = U_k U_k^T, the projector on the
  top-k principal components (checked against an SVD in the tests).
* **DAE** with additive Gaussian input noise N(0, sigma^2 I): ``E ||X - (X + N) A B||^2 = Tr S - 2 Tr(S W) +
  Tr(W^T (S + n sigma^2 I) W)``, the MAE expression with q = 1 and V = S + n sigma^2 I. Completing the square as in
  ``maelab.linear_mae`` gives C = S V^{-1} S, B* = U_k^T (top-k eigenvectors of C), A* = V^{-1} S U_k and
  min loss = Tr S - sum_{i<=k} lambda_i(C) (:func:`dae_closed_form`). With k = d, W = (S + n sigma^2 I)^{-1} S is
  ridge regression of X on itself (checked against scikit-learn).

The **weight map of output pixel i** is column i of W reshaped to (H, W): ``x_hat_i = sum_j x_in_j W[j, i]``.

Nonlinear MAE: the masked-pixel Jacobian
----------------------------------------
For an image x, a *fixed* mask M (``ids_keep``, ``ids_restore``) and an output pixel (r, c) inside a removed patch,
we differentiate the model's prediction of that pixel, ``f_M(x)[r, c]`` (the decoder output ``pred`` unpatchified,
summed over output channels; in pixel units when the model has ``norm_pix_loss=False`` and no input
normalisation), with respect to every input pixel. The encoder sees only the kept patches, so the derivative with
respect to every removed pixel is exactly 0: the map is the Jacobian with respect to the *visible* pixels. For a
model trained without masking (m = 0, a plain autoencoder) no patch is removed and output pixels are drawn among
all pixels. :func:`masked_pixel_jacobians` computes many such maps with one backward pass per output pixel for a
whole batch (images in a ViT do not interact, so the gradient of a sum over images is the per-image gradient).

Spread
------
:func:`map_spread` is the ``q``-mass radius (:func:`maelab.metrics.mass_radius`) of a map around its output
pixel: the smallest distance holding a fraction q of the absolute weight (q = 0.5: the half-mass radius). Masking
alone pushes the visible pixels away from a removed pixel, so for the nonlinear maps we also report the same
radius for a map that weighs every visible pixel equally (:func:`uniform_visible_spread`): the spread of a model
that had no spatial preference at all.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any, NamedTuple

import numpy as np
import torch

from . import linear_mae, masking, metrics
from ._validate import ParameterError, in_range, positive_int

__all__ = [
    "DAEClosedForm",
    "binned_profile",
    "central_pixels",
    "dae_closed_form",
    "dae_expected_loss",
    "draw_masks",
    "linear_weights",
    "map_spread",
    "masked_pixel_jacobians",
    "masked_prediction",
    "mean_profile",
    "single_thread_blas",
    "uniform_visible_spread",
    "weight_maps",
]


def single_thread_blas():
    """Context manager limiting BLAS/OpenMP to one thread (threadpoolctl), or a no-op if it is missing.

    Small (d <= ~1000) eigendecompositions are *much* slower with several BLAS threads on a busy machine. This is
    not the linear probe's limit (that one lives in :func:`maelab.evaluate.linear_probe`): it guards this module's
    own numpy linear algebra, the closed forms of :func:`linear_weights` (``linear_mae.closed_form``: eigh) and
    :func:`dae_closed_form` (solve, eigh), whose stored results were computed under it (the thread count can change
    the last bits)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return threadpool_limits(1)


# ----------------------------------------------------------------------------------------------------------------
# linear models
# ----------------------------------------------------------------------------------------------------------------
def linear_weights(X: Any, m: float, patch_size: int, k: int, height: int, width: int) -> np.ndarray:
    """W = A* B* (d, d) of the optimal rank-k linear MAE (Bernoulli masks, mask ratio m, p x p patches of an
    H x W image); ``m = 0`` gives the linear AE (the top-k PCA projector)."""
    patches = linear_mae.patch_index_2d(height, width, patch_size)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != height * width:
        raise ParameterError("X", f"a 2-D array with height*width={height * width} columns", X.shape)
    with single_thread_blas():
        A, B, _, _ = linear_mae.closed_form(X, m, patches, k)
        return A @ B


class DAEClosedForm(NamedTuple):
    """Optimal rank-k linear denoising AE: ``A`` (d, k) = V^-1 S U_k, ``B`` (k, d) = U_k^T, ``min_loss`` =
    Tr S - sum_{i<=k} eigvals[i], ``eigvals`` of C = S V^-1 S (descending), V = S + n sigma^2 I."""

    A: np.ndarray
    B: np.ndarray
    min_loss: float
    eigvals: np.ndarray


def _data(X: Any) -> np.ndarray:
    X = np.asarray(X.detach().cpu() if hasattr(X, "detach") else X, dtype=np.float64)
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise ParameterError("X", "a finite 2-D array (n samples, d pixels)", getattr(X, "shape", X))
    return X


def dae_expected_loss(X: Any, A: Any, B: Any, sigma: float) -> float:
    """E_N ||X - (X + N) A B||_F^2 with N ~ N(0, sigma^2) i.i.d. per entry = ||X - X W||^2 + n sigma^2 ||W||^2."""
    X = _data(X)
    sigma = in_range("sigma", sigma, 0.0)
    A, B = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
    d = X.shape[1]
    if A.ndim != 2 or B.ndim != 2 or A.shape[0] != d or B.shape != (A.shape[1], d):
        raise ParameterError("A, B", f"a (d={d}, k) encoder and a (k, d) decoder", (A.shape, B.shape))
    W = A @ B
    return float(((X - X @ W) ** 2).sum() + X.shape[0] * sigma ** 2 * (W ** 2).sum())


def dae_closed_form(X: Any, sigma: float, k: int) -> DAEClosedForm:
    """Global minimiser of :func:`dae_expected_loss` over A (d, k), B (k, d); see the module docstring."""
    X = _data(X)
    n, d = X.shape
    sigma = in_range("sigma", sigma, 0.0, low_open=True)
    positive_int("k", k)
    if k > d:
        raise ParameterError("k", f"an integer in [1, d={d}]", k)
    with single_thread_blas():
        S = X.T @ X
        V = S + n * sigma ** 2 * np.eye(d)
        VinvS = np.linalg.solve(V, S)
        C = S @ VinvS
        evals, evecs = np.linalg.eigh((C + C.T) / 2)
        order = np.argsort(evals)[::-1]
        evals, U = evals[order], evecs[:, order[:k]]
        A = VinvS @ U
    return DAEClosedForm(A, U.T.copy(), float(np.trace(S) - evals[:k].sum()), evals)


def weight_maps(W: Any, height: int, width: int) -> np.ndarray:
    """(d, H, W): ``maps[i]`` = column i of W as an image, the input weights of output pixel i (row-major)."""
    W = np.asarray(W, dtype=np.float64)
    positive_int("height", height)
    positive_int("width", width)
    d = height * width
    if W.shape != (d, d):
        raise ParameterError("W", f"a (d, d) = ({d}, {d}) matrix", W.shape)
    return np.ascontiguousarray(W.T).reshape(d, height, width)


def central_pixels(height: int, width: int, margin: int) -> np.ndarray:
    """(P, 2) (row, col) of the pixels at least ``margin`` pixels from every border, row-major."""
    positive_int("height", height)
    positive_int("width", width)
    positive_int("margin", margin, minimum=0)
    if 2 * margin >= min(height, width):
        raise ParameterError("margin", f"an integer < min(height, width)/2 = {min(height, width) / 2:g}", margin)
    r, c = np.mgrid[margin:height - margin, margin:width - margin]
    return np.stack([r.ravel(), c.ravel()], axis=1)


# ----------------------------------------------------------------------------------------------------------------
# spread and profiles
# ----------------------------------------------------------------------------------------------------------------
def _maps_np(maps: Any) -> np.ndarray:
    if isinstance(maps, torch.Tensor):
        maps = maps.detach().cpu().double().numpy()
    a = np.asarray(maps, dtype=np.float64)
    if a.ndim == 4:                          # (N, C, H, W): sum |.| over channels
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


def binned_profile(map_: Any, centre, max_r: int, where: Any = None) -> np.ndarray:
    """Mean absolute value of ``map_`` (H, W) in distance bins round(|pixel - centre|) = 0..max_r, counting only
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


# ----------------------------------------------------------------------------------------------------------------
# nonlinear MAE: fixed-mask reconstruction and its Jacobian
# ----------------------------------------------------------------------------------------------------------------
def _check_mae(model) -> None:
    from .models import MaskedAutoencoderViT

    if not isinstance(model, MaskedAutoencoderViT):
        raise ParameterError("model", "a maelab MAE / U-MAE model (MaskedAutoencoderViT)", type(model).__name__)


def draw_masks(model, n: int, mask_ratio: float, generator: torch.Generator | None = None):
    """n masks as the model draws them: (mask (n, L), 1 = removed; ids_restore (n, L); ids_keep (n, L_keep))."""
    _check_mae(model)
    positive_int("n", n)
    mask_ratio = model._check_ratio(mask_ratio)
    dev = next(model.parameters()).device
    return model.sample_mask(n, dev, mask_ratio, generator)


def masked_prediction(model, imgs: torch.Tensor, ids_keep: torch.Tensor, ids_restore: torch.Tensor) -> torch.Tensor:
    """The MAE's prediction (N, C, H, W) of every pixel of ``imgs`` when the tokens ``ids_keep`` are visible.

    Same computation as ``model(imgs)`` (encoder on the kept tokens, decoder with mask tokens, ``pred``
    unpatchified) but with the mask given instead of drawn, so it is a deterministic, differentiable function of
    ``imgs``. Output space: that of the model's ``pred`` (pixels, for ``norm_pix_loss=False`` and no input_norm).
    """
    _check_mae(model)
    model._check_imgs(imgs)
    n = imgs.shape[0]
    if ids_keep.ndim != 2 or ids_keep.shape[0] != n or ids_restore.shape != (n, model.num_patches):
        raise ParameterError("ids_keep, ids_restore", f"(N={n}, L_keep) and (N, L={model.num_patches}) index tensors",
                             (tuple(ids_keep.shape), tuple(ids_restore.shape)))
    x = model.patch_embed(model.normalize_input(imgs)) + model.pos_embed[:, 1:, :]
    x = torch.gather(x, 1, ids_keep.unsqueeze(-1).expand(-1, -1, x.shape[-1]))
    cls = (model.cls_token + model.pos_embed[:, :1, :]).expand(n, -1, -1)
    x = torch.cat([cls, x], dim=1)
    for blk in model.blocks:
        x = blk(x)
    pred = model.decode(model.norm(x), ids_restore)["pred"]
    return model.unpatchify(pred)


def masked_pixel_jacobians(model, imgs: torch.Tensor, mask_ratio: float, n_pixels: int,
                           generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
    """Jacobians of masked output pixels with respect to the input, one mask per image.

    For each image draw one mask (``model.sample_mask`` with ``generator``) and ``n_pixels`` distinct output pixels
    uniformly among the removed pixels (among all pixels when ``mask_ratio == 0``); return

    * ``jac`` (N, P, C, H, W): d (sum over channels of the prediction at pixel (r, c)) / d imgs[n], zero on removed
      pixels by construction;
    * ``pixels`` (N, P, 2) the (row, col) of each output pixel; ``visible`` (N, H, W) 1 = visible pixel;
    * ``mask`` (N, L) (1 = removed token).
    """
    _check_mae(model)
    model._check_imgs(imgs)
    positive_int("n_pixels", n_pixels)
    n, c, h, w = imgs.shape
    was_training = model.training
    model.eval()
    try:
        mask, ids_restore, ids_keep = draw_masks(model, n, mask_ratio, generator)
        removed = masking.pixel_mask(mask, model.patch_size, model.grid_size)[:, 0]  # (N, H, W) 1 = removed
        cand = removed if float(mask_ratio) > 0 else torch.ones_like(removed)
        flat = cand.reshape(n, -1).cpu()
        if int(flat.sum(1).min()) < n_pixels:
            raise ParameterError("n_pixels", f"at most the number of candidate pixels per image ({int(flat.sum(1).min())})",
                                 n_pixels)
        gdev = generator.device if generator is not None else "cpu"
        noise = torch.rand(flat.shape, generator=generator, device=gdev).cpu()
        noise = torch.where(flat > 0, noise, torch.full_like(noise, 2.0))  # non-candidates sort last
        idx = torch.argsort(noise, dim=1)[:, :n_pixels]                    # (N, P)
        rows, cols = idx // w, idx % w
        x = imgs.detach().clone().requires_grad_(True)
        pred = masked_prediction(model, x, ids_keep, ids_restore).sum(dim=1)  # (N, H, W), channels summed
        ar = torch.arange(n)
        jac = torch.empty(n, n_pixels, c, h, w, dtype=imgs.dtype)
        for j in range(n_pixels):
            out = pred[ar, rows[:, j].to(pred.device), cols[:, j].to(pred.device)].sum()
            (g,) = torch.autograd.grad(out, x, retain_graph=j < n_pixels - 1)
            jac[:, j] = g.detach().cpu()
    finally:
        model.train(was_training)
    return {"jac": jac, "pixels": torch.stack([rows, cols], dim=-1), "visible": (1 - removed).cpu(),
            "mask": mask.cpu()}
