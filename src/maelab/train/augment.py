"""Augmentation on tensors: a batched torchvision ``RandomResizedCrop`` + ``RandomHorizontalFlip``.

Crop boxes are sampled exactly as torchvision's ``RandomResizedCrop.get_params`` (vectorised over the batch, from a
dedicated CPU generator), then every image is cropped, resized and mirrored by one ``grid_sample``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F


def _sample_crop_boxes(
    n: int,
    height: int,
    width: int,
    scale: Sequence[float],
    ratio: Sequence[float],
    generator: torch.Generator | None,
    attempts: int = 10,
):
    """torchvision ``RandomResizedCrop.get_params`` vectorised over a batch (10 attempts, centre-crop fallback).

    Returns int64 tensors (top, left, h, w) of shape (n,) on the CPU."""
    area = height * width
    s = torch.empty(n, attempts, dtype=torch.float64).uniform_(scale[0], scale[1], generator=generator)
    logr = torch.empty(n, attempts, dtype=torch.float64).uniform_(
        math.log(ratio[0]), math.log(ratio[1]), generator=generator
    )
    aspect = torch.exp(logr)
    w = torch.round(torch.sqrt(area * s * aspect)).long()
    h = torch.round(torch.sqrt(area * s / aspect)).long()
    ok = (w > 0) & (w <= width) & (h > 0) & (h <= height)
    first = ok.to(torch.int8).argmax(dim=1, keepdim=True)
    hh = h.gather(1, first).squeeze(1)
    ww = w.gather(1, first).squeeze(1)
    found = ok.any(dim=1)
    if not bool(found.all()):  # centre-crop fallback, exactly as torchvision
        in_ratio = width / height
        if in_ratio < min(ratio):
            fw, fh = width, int(round(width / min(ratio)))
        elif in_ratio > max(ratio):
            fh, fw = height, int(round(height * max(ratio)))
        else:
            fw, fh = width, height
        hh = torch.where(found, hh, torch.full_like(hh, fh))
        ww = torch.where(found, ww, torch.full_like(ww, fw))
    u = torch.rand(n, 2, dtype=torch.float64, generator=generator)
    top = torch.floor(u[:, 0] * (height - hh + 1)).long()
    left = torch.floor(u[:, 1] * (width - ww + 1)).long()
    top = torch.where(found, top, (height - hh) // 2)
    left = torch.where(found, left, (width - ww) // 2)
    return top, left, hh, ww


def _crop_resize(imgs: torch.Tensor, top, left, h, w, flip, size: tuple[int, int]) -> torch.Tensor:
    """Crop box (top, left, h, w) of every image, bilinear resize to ``size`` (``F.interpolate`` semantics,
    ``align_corners=False``, no antialias), then mirror where ``flip``; one ``grid_sample`` for the batch."""
    n, _, height, width = imgs.shape
    sh, sw = size
    dev = imgs.device
    top, left, h, w, flip = (t.to(dev) for t in (top, left, h, w, flip))
    hf, wf = h.to(torch.float64)[:, None], w.to(torch.float64)[:, None]
    oy = torch.arange(sh, device=dev, dtype=torch.float64)[None] + 0.5
    ox = torch.arange(sw, device=dev, dtype=torch.float64)[None] + 0.5
    # source index inside the crop as F.interpolate computes it (clamped to the crop's pixel centres)
    sy = torch.minimum((oy * hf / sh - 0.5).clamp(min=0.0), hf - 1)
    sx = torch.minimum((ox * wf / sw - 0.5).clamp(min=0.0), wf - 1)
    sx = torch.where(flip[:, None], sx.flip(1), sx)
    y = top.to(torch.float64)[:, None] + sy
    x = left.to(torch.float64)[:, None] + sx
    gy = (y + 0.5) * 2.0 / height - 1.0
    gx = (x + 0.5) * 2.0 / width - 1.0
    grid = torch.stack([gx[:, None, :].expand(n, sh, sw), gy[:, :, None].expand(n, sh, sw)], dim=-1)
    return F.grid_sample(imgs, grid.to(imgs.dtype), mode="bilinear", padding_mode="border", align_corners=False)


def random_resized_crop_flip(
    imgs: torch.Tensor,
    generator: torch.Generator | None = None,
    *,
    scale: Sequence[float] = (0.2, 1.0),
    ratio: Sequence[float] = (3 / 4, 4 / 3),
    hflip: bool = True,
    size: tuple[int, int] | None = None,
) -> torch.Tensor:
    """Batched ``RandomResizedCrop(size, scale, ratio)`` + ``RandomHorizontalFlip`` on a (N, C, H, W) tensor.

    Crop boxes follow torchvision's sampling (parameters drawn from ``generator``, a CPU generator); the resize is
    bilinear without antialias (the official MAE recipe uses bicubic on PIL images; crops of images already at the
    model's size only ever upsample, where antialias has no effect). Output size defaults to the input size.
    """
    n, _, height, width = imgs.shape
    top, left, h, w = _sample_crop_boxes(n, height, width, scale, ratio, generator)
    flip = (torch.rand(n, generator=generator) < 0.5) if hflip else torch.zeros(n, dtype=torch.bool)
    return _crop_resize(imgs, top, left, h, w, flip, size or (height, width))
