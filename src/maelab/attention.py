"""Attention maps on the token grid: what the [CLS] token, or one patch token, attends to.

An MAE encoder sees only the visible tokens, so a layer's softmax attention covers ``num_prefix`` prefix tokens plus
the visible patch tokens, in the masked order. These functions place the attention paid to the visible tokens back
on the full token grid with :func:`maelab.masking.restore` (the same operation the decoder uses), so masked
positions get ``fill`` (NaN by default, so plots show them blank: not attended because not seen). Used by
Kong et al.'s [CLS]-on-the-object measurements (:mod:`maelab.papers.kong2023.representations`).
"""

from __future__ import annotations

import torch

from ._validate import ParameterError, positive_int
from .masking import restore

__all__ = ["cls_attention", "token_attention"]


def _shape(t) -> tuple:
    return tuple(t.shape) if hasattr(t, "shape") else type(t).__name__


def _check_attn(attn: torch.Tensor, num_prefix: int) -> tuple[int, int, int]:
    if not isinstance(attn, torch.Tensor) or attn.ndim != 4 or attn.shape[-1] != attn.shape[-2]:
        raise ParameterError("attn_layer", "a 4-D tensor (N, heads, T, T)", _shape(attn))
    positive_int("num_prefix", num_prefix, minimum=0)
    n, h, t, _ = attn.shape
    if t <= num_prefix:
        raise ParameterError("num_prefix", f"smaller than the number of tokens T={t}", num_prefix)
    return n, h, t - num_prefix


def _grid_restore(n: int, length: int, grid, ids_restore, mask, device) -> torch.Tensor:
    """ids_restore (N, L) for the sequence of visible tokens (see cls_attention)."""
    if not isinstance(grid, (tuple, list)) or len(grid) != 2:
        raise ParameterError("grid", "a (gh, gw) pair", grid)
    gh, gw = (positive_int("grid", int(g)) for g in grid)
    total = gh * gw
    if ids_restore is not None:
        if not isinstance(ids_restore, torch.Tensor) or tuple(ids_restore.shape) != (n, total):
            raise ParameterError("ids_restore", f"a tensor of shape (N, gh*gw) = {(n, total)}", _shape(ids_restore))
        return ids_restore.to(device, torch.long)
    if mask is not None:
        if not isinstance(mask, torch.Tensor) or tuple(mask.shape) != (n, total):
            raise ParameterError("mask", f"a tensor of shape (N, gh*gw) = {(n, total)}", _shape(mask))
        kept = (mask == 0).sum(dim=1)
        if (kept != length).any():
            raise ParameterError(
                "mask", f"{length} visible (0) tokens per row, matching the attention", sorted(set(kept.tolist()))
            )
        # visible tokens assumed in raster order (true for block_masking and for no masking)
        ids_shuffle = torch.sort(mask.to(device), dim=1, stable=True).indices
        return torch.argsort(ids_shuffle, dim=1)
    if length != total:
        raise ParameterError(
            "grid", f"gh*gw = number of visible tokens {length} when neither ids_restore nor mask is given", tuple(grid)
        )
    return torch.arange(total, device=device).expand(n, total)


def _place(rows: torch.Tensor, ids_restore: torch.Tensor, grid, fill: float) -> torch.Tensor:
    n, h, length = rows.shape
    if ids_restore.shape[1] < length:
        raise ParameterError("grid", f"at least as many positions as visible tokens ({length})", tuple(grid))
    full = restore(rows.permute(0, 2, 1), ids_restore, fill=float(fill))  # (N, L, heads)
    return full.permute(0, 2, 1).reshape(n, h, int(grid[0]), int(grid[1]))


def cls_attention(
    attn_layer: torch.Tensor,
    grid,
    *,
    ids_restore: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
    num_prefix: int = 1,
    cls_index: int = 0,
    fill: float = float("nan"),
) -> torch.Tensor:
    """Attention from the [CLS] token to the patch tokens, placed on the token grid.

    Args:
        attn_layer: (N, heads, T, T) softmax attention of one layer (rows = queries), T = num_prefix + L_vis
            with prefix tokens ([CLS]) first and the visible patch tokens in encoder order.
        grid: (gh, gw) full token grid.
        ids_restore: (N, gh*gw) from masking (``encode(...)["ids_restore"]``): places visible token k at the grid
            position p with ``ids_restore[n, p] == k``. Preferred.
        mask: (N, gh*gw), 1 = removed; used only without ``ids_restore`` and assumes the visible tokens are in
            raster order (true for block masking and unmasked input, NOT for random masking's shuffled order).
            With neither, T - num_prefix must equal gh*gw (no masking).
        fill: value at masked positions (NaN by default, so plots show them as blank).
    Returns:
        (N, heads, gh, gw).
    """
    n, h, length = _check_attn(attn_layer, num_prefix)
    if isinstance(cls_index, bool) or not isinstance(cls_index, int) or not 0 <= cls_index < num_prefix:
        raise ParameterError("cls_index", f"an integer in [0, num_prefix={num_prefix})", cls_index)
    idr = _grid_restore(n, length, grid, ids_restore, mask, attn_layer.device)
    rows = attn_layer[:, :, cls_index, num_prefix:].detach()
    return _place(rows, idr, grid, fill)


def token_attention(
    attn_layer: torch.Tensor,
    token_index,
    grid,
    *,
    ids_restore: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
    num_prefix: int = 1,
    fill: float = float("nan"),
) -> torch.Tensor:
    """Attention from the patch token at grid position ``token_index`` to all patch tokens, placed on the grid.

    ``token_index`` is a raster index into the full grid (``row * gw + col``) or a ``(row, col)`` pair. Samples in
    which that patch is masked get ``fill`` everywhere. Other arguments as :func:`cls_attention`.
    Returns (N, heads, gh, gw).
    """
    n, h, length = _check_attn(attn_layer, num_prefix)
    idr = _grid_restore(n, length, grid, ids_restore, mask, attn_layer.device)
    gh, gw = int(grid[0]), int(grid[1])
    token = token_index
    if (
        isinstance(token, (tuple, list))
        and len(token) == 2
        and all(isinstance(t, int) for t in token)
        and 0 <= token[0] < gh
        and 0 <= token[1] < gw
    ):
        p = token[0] * gw + token[1]
    elif isinstance(token, int) and not isinstance(token, bool) and 0 <= token < gh * gw:
        p = token
    else:
        raise ParameterError(
            "token_index", f"a raster index in [0, {gh * gw}) or a (row, col) pair on grid {(gh, gw)}", token
        )
    seq = idr[:, p]  # position of that patch among the visible tokens (>= length: masked)
    visible = seq < length
    q = (seq.clamp(max=length - 1) + num_prefix).to(attn_layer.device)
    rows = attn_layer.detach()[torch.arange(n, device=attn_layer.device), :, q, num_prefix:]  # (N, heads, L_vis)
    out = _place(rows, idr, grid, fill)
    out[~visible.to(out.device)] = float(fill)
    return out
