"""Which input pixels an MAE's prediction depends on: masked-pixel Jacobians of a ViT MAE and weight maps of a
linear map.

**Bisulco et al.'s measurement:** only the Bisulco part reads an MAE through these maps (main Fig. 1, supplement
Figs. 5, 13), so they live in its package; another paper that needs them imports them from here. How Bisulco et al.
summarise the maps (spread radii, profiles normalised as in their Fig. 13, the Theorem-1 weights of 2-D crops) is in
:mod:`maelab.papers.bisulco2025.locality`.

Linear maps
-----------
For a linear model on data rows ``x`` of d = H*W pixels (row-major) with prediction ``x_hat = x_in @ W`` (e.g. the
linear MAE or DAE of :mod:`maelab.linear_mae`, ``W = A B``), the **weight map of output pixel i** is column i of W
reshaped to (H, W): ``x_hat_i = sum_j x_in_j W[j, i]`` (:func:`weight_maps`).

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
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ... import masking
from ..._validate import ParameterError, positive_int

__all__ = ["draw_masks", "masked_pixel_jacobians", "masked_prediction", "weight_maps"]


# ----------------------------------------------------------------------------------------------------------------
# linear maps
# ----------------------------------------------------------------------------------------------------------------
def weight_maps(W: Any, height: int, width: int) -> np.ndarray:
    """(d, H, W): ``maps[i]`` = column i of W as an image, the input weights of output pixel i (row-major)."""
    W = np.asarray(W, dtype=np.float64)
    positive_int("height", height)
    positive_int("width", width)
    d = height * width
    if W.shape != (d, d):
        raise ParameterError("W", f"a (d, d) = ({d}, {d}) matrix", W.shape)
    return np.ascontiguousarray(W.T).reshape(d, height, width)


# ----------------------------------------------------------------------------------------------------------------
# nonlinear MAE: fixed-mask reconstruction and its Jacobian
# ----------------------------------------------------------------------------------------------------------------
def _check_mae(model) -> None:
    from ...models import MaskedAutoencoderViT

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
        raise ParameterError(
            "ids_keep, ids_restore",
            f"(N={n}, L_keep) and (N, L={model.num_patches}) index tensors",
            (tuple(ids_keep.shape), tuple(ids_restore.shape)),
        )
    x = model.patch_embed(model.normalize_input(imgs)) + model.pos_embed[:, 1:, :]
    x = torch.gather(x, 1, ids_keep.unsqueeze(-1).expand(-1, -1, x.shape[-1]))
    cls = (model.cls_token + model.pos_embed[:, :1, :]).expand(n, -1, -1)
    x = torch.cat([cls, x], dim=1)
    for blk in model.blocks:
        x = blk(x)
    pred = model.decode(model.norm(x), ids_restore)["pred"]
    return model.unpatchify(pred)


def masked_pixel_jacobians(
    model, imgs: torch.Tensor, mask_ratio: float, n_pixels: int, generator: torch.Generator | None = None
) -> dict[str, torch.Tensor]:
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
            raise ParameterError(
                "n_pixels", f"at most the number of candidate pixels per image ({int(flat.sum(1).min())})", n_pixels
            )
        gdev = generator.device if generator is not None else "cpu"
        noise = torch.rand(flat.shape, generator=generator, device=gdev).cpu()
        noise = torch.where(flat > 0, noise, torch.full_like(noise, 2.0))  # non-candidates sort last
        idx = torch.argsort(noise, dim=1)[:, :n_pixels]  # (N, P)
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
    return {"jac": jac, "pixels": torch.stack([rows, cols], dim=-1), "visible": (1 - removed).cpu(), "mask": mask.cpu()}
