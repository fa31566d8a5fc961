"""SimMIM (Xie et al. 2022) and U-SimMIM (Zhang et al. 2022) with a ViT encoder and a linear decoder."""

from __future__ import annotations

import torch
import torch.nn as nn

from .._validate import is_bool
from ._base import MaskedImageModel
from ._layers import run_blocks


class SimMIM(MaskedImageModel):
    """SimMIM: the encoder sees *every* token; embeddings of removed patches are replaced by a learned
    ``mask_token`` (1, 1, D) before position embeddings are added; a linear decoder maps each encoder output token
    to its p*p*C pixels (``decoder_pred``; the official 1x1 conv + PixelShuffle is the same linear map per token,
    up to the order of outputs, which here is the ``patchify`` order).

    Loss (official ``models/simmim.py``): L1 on the removed pixels, sum ``|pred - target|`` over removed pixels and
    channels divided by (number of removed pixels + 1e-5) and by in_chans. With ``mask_ratio = 0`` it is the mean
    L1 over all pixels. Masking: random patches, ``mask_unit`` k groups k x k tokens (the paper's ViT-B setting
    masks 32 x 32 pixel blocks = 2 x 2 tokens of 16 px, mask ratio 0.6). The number of removed units,
    U - int(U (1 - m)), equals the official ceil(U m) (up to floating-point ties).

    Deviations from the official ViT-B recipe (kept for a like-for-like comparison with MAE): fixed 2-D sin-cos
    absolute position embeddings (official: shared relative position bias), MAE initialisation, no layer scale.

    U-SimMIM (``lambda_unif > 0``): the uniformity term of U-MAE on the [CLS] token after the final norm (or the
    mean over all L patch tokens with ``uniformity_feature="mean"``), lambda = 0.01 as in Zhang et al. Table 2.
    """

    name = "simmim"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        p, c = self.patch_size, self.in_chans
        self.mask_token = nn.Parameter(torch.zeros(1, 1, self.embed_dim))
        self.decoder_pred = nn.Linear(self.embed_dim, p * p * c, bias=True)
        self._init_common(self.mask_token)

    def encode(
        self,
        imgs: torch.Tensor,
        mask_ratio: float = 0.0,
        generator: torch.Generator | None = None,
        return_tokens: bool = False,
        return_attn: bool = False,
    ) -> dict:
        """Encode all tokens (removed ones replaced by ``mask_token``). ``latent`` (N, 1 + L, D) after the final
        norm in raster order ([CLS] first); ``mask`` (N, L; 1 = removed); ``ids_restore`` and ``ids_keep`` are the
        identity (N, L) (tokens are never reordered); ``tokens`` / ``attn`` per block when asked."""
        mask_ratio = self._check_ratio(mask_ratio)
        is_bool("return_tokens", return_tokens)
        is_bool("return_attn", return_attn)
        x = self.patch_embed(self.normalize_input(imgs))
        n, length, _ = x.shape
        mask, _, _ = self.sample_mask(n, x.device, mask_ratio, generator)
        w = mask.unsqueeze(-1).to(x.dtype)
        x = x * (1 - w) + self.mask_token.to(x.dtype) * w
        x = x + self.pos_embed[:, 1:, :]
        cls = (self.cls_token + self.pos_embed[:, :1, :]).expand(n, -1, -1)
        x = torch.cat([cls, x], dim=1)
        x, tokens, attn = run_blocks(self.blocks, x, return_tokens, return_attn)
        ids = torch.arange(length, device=x.device).expand(n, length).clone()
        out = {"latent": self.norm(x), "mask": mask, "ids_restore": ids, "ids_keep": ids}
        if return_tokens:
            out["tokens"] = tokens
        if return_attn:
            out["attn"] = attn
        return out

    def decode(
        self,
        latent: torch.Tensor,
        ids_restore: torch.Tensor | None = None,
        return_tokens: bool = False,
        return_attn: bool = False,
    ) -> dict:
        """Linear decoder: ``pred`` (N, L, p*p*C) from the patch tokens of ``latent``. It has no blocks, so
        ``tokens`` / ``attn`` are empty lists when asked."""
        out = {"pred": self.decoder_pred(latent[:, 1:, :])}
        if return_tokens:
            out["tokens"] = []
        if return_attn:
            out["attn"] = []
        return out

    def reconstruction_loss(self, pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Official SimMIM L1: sum over removed pixels and channels / (removed pixels + 1e-5) / in_chans."""
        err = (pred - target).abs().sum(dim=-1)  # (N, L): sum over the p*p*C values of each patch
        pixels = mask.sum() * self.patch_size**2
        masked = (err * mask).sum() / (pixels + 1e-5) / self.in_chans
        # no host sync: mean L1 over everything when nothing is removed (mask_ratio = 0)
        return torch.where(pixels > 0, masked, (pred - target).abs().mean())
