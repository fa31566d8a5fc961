"""MAE (He et al. 2022) and U-MAE (Zhang et al. 2022) on timm blocks, parameter-compatible with the official code."""

from __future__ import annotations

import torch
import torch.nn as nn

from .. import masking
from .._validate import is_bool, positive_int
from ._base import MaskedImageModel, _heads
from ._layers import make_blocks, norm_layer, run_blocks


class MaskedAutoencoderViT(MaskedImageModel):
    """Masked autoencoder with a ViT encoder that sees the visible tokens only and a light ViT decoder.

    Architecture, parameter names and shapes follow ``facebookresearch/mae`` ``models_mae.py``: ``patch_embed``,
    ``cls_token`` (1, 1, D), fixed sin-cos ``pos_embed`` (1, 1 + L, D) with a zero [CLS] row, ``blocks``, ``norm``,
    ``decoder_embed``, shared ``mask_token`` (1, 1, D_dec), fixed ``decoder_pos_embed``, ``decoder_blocks``,
    ``decoder_norm``, ``decoder_pred`` (D_dec -> p*p*C). Official checkpoints therefore load with ``strict=True``
    (:func:`maelab.models.load_official_checkpoint`). Initialisation is the official one (see ``_init_common``).

    Loss (official): per-patch MSE averaged over the p*p*C values, then sum(loss * mask) / sum(mask), i.e. the
    mean over *removed* patches only. With ``mask_ratio = 0`` nothing is removed and the loss is the mean over all
    patches (plain autoencoder). ``norm_pix_loss`` standardises each target patch (see
    :meth:`~maelab.models.MaskedImageModel.target`).

    U-MAE (``lambda_unif > 0``): loss = MAE loss + lambda_unif * mean((F F^T)^2) over the batch, F the
    L2-normalised ``features`` of the masked view. Choices, after the official ``zhangq327/U-MAE`` code: the
    feature is the [CLS] token of the masked view after the final norm (``uniformity_feature="mean"`` uses the
    mean of the visible tokens instead), it is *not* detached (the uniformity gradient reaches the encoder), the
    full B x B matrix is averaged with its diagonal (a constant 1 per row) included, and lambda = 0.01 (paper
    Sec. 5; README default ``lamb=1e-2``). One released version divides the similarity by tau = 0.1 and uses
    lambda = 1e-4, which is the same objective (1e-4 / 0.1^2 = 0.01). The official forward applies ``self.norm``
    a second time to the already normalised latent before taking [CLS] (``uniformity_double_norm=True``), and its
    global-pool path applies its own ``fc_norm`` to the mean token (``uniformity_fc_norm=True``); the official MAE
    code keeps PyTorch's default Conv2d bias in ``patch_embed.proj`` (``patch_embed_bias="conv_default"``). These
    official choices are the defaults; maelab's first choices (one norm, no fc_norm, zero bias:
    ``maelab.result_keys.LEGACY_CHOICES``) stay options because committed results were computed with them
    (issue 15).
    """

    name = "mae"

    def __init__(self, *, decoder_embed_dim: int = 64, decoder_depth: int = 1, decoder_num_heads: int = 2, **kwargs):
        super().__init__(**kwargs)
        _heads("decoder_embed_dim", decoder_embed_dim, "decoder_num_heads", decoder_num_heads)
        positive_int("decoder_depth", decoder_depth, minimum=0)
        self.decoder_embed_dim, self.decoder_depth = decoder_embed_dim, decoder_depth
        self.decoder_num_heads = decoder_num_heads
        d, p, c = self.embed_dim, self.patch_size, self.in_chans

        self.decoder_embed = nn.Linear(d, decoder_embed_dim, bias=True)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, decoder_embed_dim))
        self.decoder_pos_embed = nn.Parameter(
            torch.zeros(1, self.num_patches + 1, decoder_embed_dim), requires_grad=False
        )
        self.decoder_blocks = make_blocks(
            decoder_embed_dim,
            decoder_depth,
            decoder_num_heads,
            self.mlp_ratio,
            attn_norm=self.attn_norm,
            skip_scale=self.skip_scale,
        )
        self.decoder_norm = norm_layer(decoder_embed_dim)
        self.decoder_pred = nn.Linear(decoder_embed_dim, p * p * c, bias=True)
        self._init_common(self.mask_token, self.decoder_pos_embed)

    def encode(
        self,
        imgs: torch.Tensor,
        mask_ratio: float = 0.0,
        generator: torch.Generator | None = None,
        return_tokens: bool = False,
        return_attn: bool = False,
    ) -> dict:
        """Encode the visible tokens of ``imgs``.

        Returns ``latent`` (N, T, D) after the final norm, T = 1 + L_keep ([CLS] first, then the kept tokens in
        the order of ``ids_keep``), ``mask`` (N, L; 1 = removed), ``ids_restore`` (N, L), ``ids_keep``
        (N, L_keep: grid position of each kept token); with ``return_tokens`` a list ``tokens`` (per block,
        the block output (N, T, D) before the final norm) and with ``return_attn`` a list ``attn`` (per block,
        (N, heads, T, T), recomputed from the block's weights). ``mask_ratio=0`` keeps all tokens in raster order.
        """
        mask_ratio = self._check_ratio(mask_ratio)
        is_bool("return_tokens", return_tokens)
        is_bool("return_attn", return_attn)
        x = self.patch_embed(self.normalize_input(imgs)) + self.pos_embed[:, 1:, :]
        mask, ids_restore, ids_keep = self.sample_mask(x.shape[0], x.device, mask_ratio, generator)
        x = torch.gather(x, 1, ids_keep.unsqueeze(-1).expand(-1, -1, x.shape[-1]))
        cls = (self.cls_token + self.pos_embed[:, :1, :]).expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1)
        x, tokens, attn = run_blocks(self.blocks, x, return_tokens, return_attn)
        out = {"latent": self.norm(x), "mask": mask, "ids_restore": ids_restore, "ids_keep": ids_keep}
        if return_tokens:
            out["tokens"] = tokens
        if return_attn:
            out["attn"] = attn
        return out

    def decode(
        self, latent: torch.Tensor, ids_restore: torch.Tensor, return_tokens: bool = False, return_attn: bool = False
    ) -> dict:
        """Decoder: embed, insert the shared mask token at removed positions, add ``decoder_pos_embed``, blocks,
        norm, linear prediction. Returns ``pred`` (N, L, p*p*C) (the [CLS] position dropped) and, when asked,
        ``tokens`` / ``attn`` per decoder block over the full 1 + L sequence."""
        x = self.decoder_embed(latent)
        full = masking.restore(x[:, 1:, :], ids_restore, fill=self.mask_token)
        x = torch.cat([x[:, :1, :], full], dim=1) + self.decoder_pos_embed
        x, tokens, attn = run_blocks(self.decoder_blocks, x, return_tokens, return_attn)
        out = {"pred": self.decoder_pred(self.decoder_norm(x))[:, 1:, :]}
        if return_tokens:
            out["tokens"] = tokens
        if return_attn:
            out["attn"] = attn
        return out

    def reconstruction_loss(self, pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Official MAE loss: ((pred - target)^2).mean(-1), then sum(loss * mask) / sum(mask) over removed
        patches (all patches if none is removed)."""
        loss = ((pred - target) ** 2).mean(dim=-1)  # (N, L)
        removed = mask.sum()
        # no host sync: fall back to the mean over all patches when nothing is removed (mask_ratio = 0)
        return torch.where(removed > 0, (loss * mask).sum() / removed.clamp_min(1), loss.mean())
