"""What the zoo's records do not hold, measured on each entry's model: how far its prediction and its attention
reach. Bisulco et al. read an MAE through the spread of its masked-pixel Jacobians
(:mod:`maelab.papers.bisulco2025.jacobians`, :mod:`~maelab.papers.bisulco2025.locality`); Cao et al. read
attention as an integral kernel whose width is the question. Both are summarised here per model:

* ``jac_spread``: the median over maps of the 50 %-mass radius (pixels) of the absolute Jacobian (channels summed)
  of a masked output pixel around that pixel, under common masks at ``eval_ratio``
  (:func:`~maelab.papers.bisulco2025.locality.map_spread`); ``jac_spread_uniform``: the same radius of uniform
  weight on the visible pixels (:func:`~maelab.papers.bisulco2025.locality.uniform_visible_spread`), the reference
  of a model that reads every visible pixel alike.
* ``attn_distance``: the mean distance (in tokens) from a query patch token to the patch tokens it attends to,
  weighted by the last encoder layer's attention (mean over heads, queries and unmasked test images; the [CLS]
  column is left out and the rest renormalised); ``attn_distance_uniform``: the same for uniform attention.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..._validate import positive_int
from ...options import DryRunLimits, cap
from ..bisulco2025.jacobians import masked_pixel_jacobians
from ..bisulco2025.locality import map_spread, uniform_visible_spread

__all__ = ["attention_distance", "jacobian_spread", "geometry_row"]


@torch.no_grad()
def attention_distance(model, images: torch.Tensor, batch_size: int = 256) -> dict[str, float]:
    """Mean attention distance of the last encoder layer on unmasked ``images`` (see the module docstring)."""
    positive_int("batch_size", batch_size)
    was = model.training
    model.eval()
    gh, gw = model.grid_size
    rr, cc = np.meshgrid(np.arange(gh), np.arange(gw), indexing="ij")
    pos = torch.tensor(np.stack([rr.ravel(), cc.ravel()], 1), dtype=torch.float64)
    dist = torch.cdist(pos, pos)  # (L, L) token distances
    dev = next(model.parameters()).device
    total, count = 0.0, 0
    try:
        for s in range(0, images.shape[0], batch_size):
            enc = model.encode(images[s : s + batch_size].to(dev), mask_ratio=0.0, return_attn=True)
            a = enc["attn"][-1][:, :, 1:, 1:].double().mean(dim=1).cpu()  # (N, L, L), unmasked: raster order
            a = a / a.sum(dim=-1, keepdim=True)
            total += float((a * dist).sum(dim=-1).sum())
            count += a.shape[0] * a.shape[1]
    finally:
        model.train(was)
    return {"attn_distance": total / count, "attn_distance_uniform": float(dist.mean())}


def jacobian_spread(model, images: torch.Tensor, eval_ratio: float, n_pixels: int, seed: int = 0) -> dict[str, float]:
    """Median 50 %-mass radius of masked-pixel Jacobians under masks drawn at ``eval_ratio`` from a CPU generator
    seeded with ``seed`` (the same masks for every model of the same token grid and masking unit 1, on any device).
    The backward passes run where ``model`` is (the page's device), and the model stays there."""
    dev = next(model.parameters()).device
    out = masked_pixel_jacobians(model, images.to(dev), eval_ratio, n_pixels, torch.Generator().manual_seed(seed))
    n, p = out["jac"].shape[:2]
    maps = out["jac"].abs().sum(dim=2).reshape(n * p, *out["jac"].shape[-2:])
    centres = out["pixels"].reshape(n * p, 2).numpy()
    vis = out["visible"].repeat_interleave(p, dim=0)
    return {
        "jac_spread": float(np.median(map_spread(maps, centres))),
        "jac_spread_uniform": float(np.median(uniform_visible_spread(vis, centres))),
    }


def geometry_row(
    model, images: torch.Tensor, settings: Any, seed: int = 0, *, caps: DryRunLimits | None = None
) -> dict[str, float]:
    """Both measurements of one model on the test ``images`` (``settings``: a ``SynthesisSettings``); a dry run
    (``caps``) caps the images (:attr:`maelab.options.DryRunLimits.eval_images`)."""
    S = settings
    jac = jacobian_spread(model, images[: cap(S.n_jac_images, caps, "eval_images")], S.eval_ratio, S.n_jac_pixels, seed)
    return {**jac, **attention_distance(model, images[: cap(S.n_attn_images, caps, "eval_images")])}
