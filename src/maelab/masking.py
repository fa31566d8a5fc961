"""Random patch masking exactly as the official MAE, plus block ("masking unit") masking and (un)patchify.

Conventions follow facebookresearch/mae ``models_mae.py``:

* ``patchify``: (N, C, H, W) -> (N, L, p*p*C) with the channel as the fastest axis (``'nchpwq->nhwpqc'``).
* ``random_masking``: noise ~ U(0, 1) per token, ``ids_shuffle = argsort(noise)``, keep the first
  ``int(L * (1 - mask_ratio))``; ``ids_restore = argsort(ids_shuffle)`` inverts the shuffle; ``mask`` is 1 for
  removed tokens and 0 for kept ones, in the original token order.
* ``block_masking``: the masking unit is a ``unit x unit`` block of tokens (as in the long-sequence MAE code used
  by Kong et al.); the same algorithm runs on units and each unit's tokens share its fate.
"""

from __future__ import annotations

import torch

from ._validate import ParameterError, divides, in_range, positive_int


def _check_ratio(mask_ratio: float, *, allow_zero: bool = True) -> float:
    # mask_ratio = 0 (a plain autoencoder) is allowed for the no-mask ablation; 1 would keep nothing.
    if allow_zero:
        return in_range("mask_ratio", mask_ratio, 0.0, 1.0, high_open=True)
    return in_range("mask_ratio", mask_ratio, 0.0, 1.0, low_open=True, high_open=True)


def patchify(imgs: torch.Tensor, patch_size: int) -> torch.Tensor:
    """(N, C, H, W) -> (N, L, p*p*C), L = (H/p)(W/p), row-major token order."""
    if imgs.ndim != 4:
        raise ParameterError("imgs", "a 4-D tensor (N, C, H, W)", tuple(imgs.shape))
    n, c, h, w = imgs.shape
    divides("patch_size", patch_size, h, "image height")
    divides("patch_size", patch_size, w, "image width")
    p = patch_size
    x = imgs.reshape(n, c, h // p, p, w // p, p)
    x = torch.einsum("nchpwq->nhwpqc", x)
    return x.reshape(n, (h // p) * (w // p), p * p * c)


def unpatchify(x: torch.Tensor, patch_size: int, channels: int, grid: tuple[int, int] | None = None) -> torch.Tensor:
    """Inverse of :func:`patchify`. ``grid`` = (H/p, W/p); square by default."""
    n, length, d = x.shape
    p = patch_size
    if d != p * p * channels:
        raise ParameterError("patch_size", f"consistent with token dim {d} and channels={channels}", p)
    if grid is None:
        h = int(round(length**0.5))
        if h * h != length:
            raise ParameterError("grid", "given for a non-square token grid", grid)
        grid = (h, h)
    gh, gw = grid
    x = x.reshape(n, gh, gw, p, p, channels)
    x = torch.einsum("nhwpqc->nchpwq", x)
    return x.reshape(n, channels, gh * p, gw * p)


def num_keep(num_tokens: int, mask_ratio: float) -> int:
    """Number of kept tokens, exactly as the official code: ``int(L * (1 - mask_ratio))``."""
    return int(num_tokens * (1 - mask_ratio))


def random_masking(x: torch.Tensor, mask_ratio: float, generator: torch.Generator | None = None):
    """Per-sample random masking by argsort of uniform noise (official MAE).

    Args:
        x: (N, L, D) tokens.
        mask_ratio: fraction of tokens removed, in [0, 1).
        generator: optional torch.Generator for reproducible masks.
    Returns:
        x_masked (N, L_keep, D), mask (N, L) with 1 = removed, ids_restore (N, L).
    """
    _check_ratio(mask_ratio)
    n, length, d = x.shape
    len_keep = num_keep(length, mask_ratio)
    noise = torch.rand(n, length, device=x.device, generator=generator)
    ids_shuffle = torch.argsort(noise, dim=1)
    ids_restore = torch.argsort(ids_shuffle, dim=1)
    ids_keep = ids_shuffle[:, :len_keep]
    x_masked = torch.gather(x, 1, ids_keep.unsqueeze(-1).expand(-1, -1, d))
    mask = torch.ones(n, length, device=x.device)
    mask[:, :len_keep] = 0
    mask = torch.gather(mask, 1, ids_restore)
    return x_masked, mask, ids_restore


def block_masking(
    x: torch.Tensor, mask_ratio: float, grid: tuple[int, int], unit: int = 1, generator: torch.Generator | None = None
):
    """Random masking whose unit is a ``unit x unit`` block of tokens on a ``grid`` = (gh, gw) token grid.

    ``unit=1`` is exactly :func:`random_masking`. Otherwise the official algorithm runs on the
    (gh/unit)(gw/unit) units, ``int(U * (1 - mask_ratio))`` units are kept, and each unit's tokens share its
    fate. Kept tokens come first in ``ids_shuffle`` in raster order, so ``ids_restore`` inverts the gather.
    Returns x_masked (N, L_keep, D), mask (N, L), ids_restore (N, L).
    """
    positive_int("unit", unit)
    if unit == 1:
        return random_masking(x, mask_ratio, generator)
    _check_ratio(mask_ratio)
    gh, gw = grid
    n, length, d = x.shape
    if gh * gw != length:
        raise ParameterError("grid", f"a token grid with gh*gw = L = {length}", grid)
    divides("unit", unit, gh, "token-grid height")
    divides("unit", unit, gw, "token-grid width")
    uh, uw = gh // unit, gw // unit
    units = torch.zeros(n, uh * uw, 1, device=x.device)
    _, unit_mask, _ = random_masking(units, mask_ratio, generator)  # (N, U), 1 = removed
    mask = unit_mask.reshape(n, uh, 1, uw, 1).expand(n, uh, unit, uw, unit).reshape(n, length)
    # kept tokens first (stable sort keeps raster order inside each group)
    ids_shuffle = torch.sort(mask, dim=1, stable=True).indices
    ids_restore = torch.argsort(ids_shuffle, dim=1)
    len_keep = num_keep(uh * uw, mask_ratio) * unit * unit
    x_masked = torch.gather(x, 1, ids_shuffle[:, :len_keep].unsqueeze(-1).expand(-1, -1, d))
    return x_masked, mask, ids_restore


def restore(x_kept: torch.Tensor, ids_restore: torch.Tensor, fill: torch.Tensor | float = 0.0) -> torch.Tensor:
    """Put kept tokens back in original order, ``fill`` (e.g. a mask token (D,)) at removed positions."""
    n, len_keep, d = x_kept.shape
    length = ids_restore.shape[1]
    if isinstance(fill, torch.Tensor):
        pad = fill.reshape(1, 1, d).to(x_kept.dtype).expand(n, length - len_keep, d)
    else:
        pad = x_kept.new_full((n, length - len_keep, d), float(fill))
    full = torch.cat([x_kept, pad], dim=1)
    return torch.gather(full, 1, ids_restore.unsqueeze(-1).expand(-1, -1, d))


def pixel_mask(mask: torch.Tensor, patch_size: int, grid: tuple[int, int]) -> torch.Tensor:
    """Token mask (N, L) -> pixel mask (N, 1, H, W), 1 = removed."""
    n = mask.shape[0]
    gh, gw = grid
    m = mask.reshape(n, gh, 1, gw, 1).expand(n, gh, patch_size, gw, patch_size)
    return m.reshape(n, 1, gh * patch_size, gw * patch_size)
