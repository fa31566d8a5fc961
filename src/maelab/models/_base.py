"""The part shared by MAE and SimMIM: ViT encoder parameters, masking, targets, features and the uniformity term."""

from __future__ import annotations

import torch
import torch.nn as nn

from .. import masking, result_keys
from .._validate import ParameterError, divides, in_range, is_bool, one_of, positive_int
from ._layers import (
    ATTN_NORMS,
    UNIFORMITY_GATHERS,
    gather_features,
    init_linear_and_norm,
    init_patch_embed,
    make_blocks,
    norm_layer,
    resolve_input_norm,
    sincos_2d,
    uniformity_loss,
)

POOLS = ("cls", "mean")
PATCH_BIAS_INITS = ("zeros", "conv_default")


def _heads(dim_name: str, dim: int, heads_name: str, heads: int) -> None:
    positive_int(dim_name, dim)
    positive_int(heads_name, heads)
    if dim % heads:
        raise ParameterError(heads_name, f"a positive divisor of {dim_name}={dim}", heads)
    if dim % 4:
        raise ParameterError(dim_name, "a multiple of 4 (2-D sin-cos position embedding)", dim)


class MaskedImageModel(nn.Module):
    """Base class: ViT encoder (timm ``PatchEmbed``, ``Block`` layers, final LayerNorm), [CLS] token, fixed 2-D sin-cos
    position embeddings, masking, reconstruction targets and the optional uniformity term.

    Image convention: ``imgs`` are float tensors (N, in_chans, img_size, img_size) in the Dataset convention
    ([0, 1]); the model applies ``input_norm`` itself. Token convention: the token grid is (img_size/patch_size)^2
    in raster order; ``mask`` is (N, L) with 1 = removed (masked) and 0 = kept.
    """

    name = "base"

    def __init__(
        self,
        *,
        img_size: int = 32,
        patch_size: int = 4,
        in_chans: int = 3,
        embed_dim: int = 64,
        depth: int = 2,
        num_heads: int = 2,
        mlp_ratio: float = 4.0,
        mask_ratio: float = 0.75,
        mask_unit: int = 1,
        norm_pix_loss: bool = False,
        lambda_unif: float = 0.0,
        uniformity_feature: str = "cls",
        input_norm=None,
        drop_path_rate: float = 0.0,
        attn_norm: str = "softmax",
        skip_scale: float = 1.0,
        uniformity_double_norm: bool = result_keys.OFFICIAL_CHOICES["uniformity_double_norm"],
        uniformity_fc_norm: bool = result_keys.OFFICIAL_CHOICES["uniformity_fc_norm"],
        patch_embed_bias: str = result_keys.OFFICIAL_CHOICES["patch_embed_bias"],
        uniformity_gather: str = "official",
    ):
        super().__init__()
        positive_int("img_size", img_size)
        divides("patch_size", patch_size, img_size, "img_size")
        positive_int("in_chans", in_chans)
        _heads("embed_dim", embed_dim, "num_heads", num_heads)
        positive_int("depth", depth)
        in_range("mlp_ratio", mlp_ratio, 0.0, None, low_open=True)
        self.mask_ratio = self._check_ratio(mask_ratio)
        grid = img_size // patch_size
        divides("mask_unit", mask_unit, grid, "token grid side img_size/patch_size")
        is_bool("norm_pix_loss", norm_pix_loss)
        self.lambda_unif = in_range("lambda_unif", lambda_unif, 0.0, None)
        one_of("uniformity_feature", uniformity_feature, POOLS)
        in_range("drop_path_rate", drop_path_rate, 0.0, 1.0, high_open=True)
        is_bool("uniformity_double_norm", uniformity_double_norm)
        is_bool("uniformity_fc_norm", uniformity_fc_norm)
        one_of("patch_embed_bias", patch_embed_bias, PATCH_BIAS_INITS)
        self.uniformity_gather = one_of("uniformity_gather", uniformity_gather, UNIFORMITY_GATHERS)
        norm = resolve_input_norm(input_norm, in_chans)
        self.attn_norm = one_of("attn_norm", attn_norm, ATTN_NORMS)
        self.skip_scale = in_range("skip_scale", skip_scale, 0.0, None)

        self.img_size, self.patch_size, self.in_chans, self.embed_dim = img_size, patch_size, in_chans, embed_dim
        self.depth, self.num_heads, self.mlp_ratio = depth, num_heads, float(mlp_ratio)
        self.grid_size = (grid, grid)
        self.num_patches = grid * grid
        self.mask_unit = mask_unit
        self.norm_pix_loss = norm_pix_loss
        self.uniformity_feature = uniformity_feature
        self.input_norm = input_norm if isinstance(input_norm, str) or input_norm is None else norm
        self.drop_path_rate = float(drop_path_rate)
        self.uniformity_double_norm, self.uniformity_fc_norm = uniformity_double_norm, uniformity_fc_norm
        self.patch_embed_bias = patch_embed_bias

        # --- encoder (official MAE names and shapes) ---
        from timm.layers import PatchEmbed  # timm on first use: see maelab.models._layers.make_blocks

        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, self.num_patches + 1, embed_dim), requires_grad=False)
        self.blocks = make_blocks(embed_dim, depth, num_heads, mlp_ratio, drop_path_rate, attn_norm, self.skip_scale)
        self.norm = norm_layer(embed_dim)
        # official U-MAE global-pool path: its own LayerNorm on the mean token (only when used, so that official MAE
        # checkpoints keep loading with strict=True); creating it draws no random numbers
        use_fc_norm = uniformity_fc_norm and uniformity_feature == "mean"
        self.fc_norm = norm_layer(embed_dim) if use_fc_norm else None
        # input normalisation: non-persistent buffers, so state_dict keys stay those of the official checkpoints
        if norm is None:
            self.input_mean = self.input_std = None
        else:
            self.register_buffer("input_mean", torch.tensor(norm[0]).view(1, -1, 1, 1), persistent=False)
            self.register_buffer("input_std", torch.tensor(norm[1]).view(1, -1, 1, 1), persistent=False)

    # ---------------------------------------------------------------------------------------------------------
    def _init_common(self, mask_token: nn.Parameter | None, extra_pos_embed: nn.Parameter | None = None) -> None:
        """Official MAE order: sin-cos pos embeds, patch-embed xavier, normal(.02) cls/mask tokens, then
        xavier Linear / unit LayerNorm over all modules in registration order."""
        self.pos_embed.data.copy_(torch.from_numpy(sincos_2d(self.embed_dim, self.grid_size)).unsqueeze(0))
        if extra_pos_embed is not None:
            dim = extra_pos_embed.shape[-1]
            extra_pos_embed.data.copy_(torch.from_numpy(sincos_2d(dim, self.grid_size)).unsqueeze(0))
        init_patch_embed(self.patch_embed.proj, zero_bias=self.patch_embed_bias == "zeros")
        nn.init.normal_(self.cls_token, std=0.02)
        if mask_token is not None:
            nn.init.normal_(mask_token, std=0.02)
        self.apply(init_linear_and_norm)

    @staticmethod
    def _check_ratio(mask_ratio) -> float:
        # 0 is allowed (no-mask ablation: a plain autoencoder); 1 would keep no token.
        return in_range("mask_ratio", mask_ratio, 0.0, 1.0, high_open=True)

    def _check_imgs(self, imgs) -> None:
        want = (self.in_chans, self.img_size, self.img_size)
        if not isinstance(imgs, torch.Tensor) or imgs.ndim != 4 or tuple(imgs.shape[1:]) != want:
            shape = tuple(imgs.shape) if isinstance(imgs, torch.Tensor) else type(imgs).__name__
            raise ParameterError("imgs", f"a float tensor (N, {want[0]}, {want[1]}, {want[2]})", shape)

    def normalize_input(self, imgs: torch.Tensor) -> torch.Tensor:
        """Dataset-convention images -> network input ((x - mean) / std when ``input_norm`` is set)."""
        self._check_imgs(imgs)
        if self.input_mean is None:
            return imgs
        return (imgs - self.input_mean) / self.input_std

    def denormalize_input(self, x: torch.Tensor) -> torch.Tensor:
        """Inverse of :meth:`normalize_input` (network space -> Dataset space)."""
        if self.input_mean is None:
            return x
        return x * self.input_std + self.input_mean

    def patchify(self, imgs: torch.Tensor) -> torch.Tensor:
        """(N, C, H, W) -> (N, L, p*p*C), channel fastest (official MAE order)."""
        return masking.patchify(imgs, self.patch_size)

    def unpatchify(self, x: torch.Tensor) -> torch.Tensor:
        """(N, L, p*p*C) -> (N, C, H, W)."""
        return masking.unpatchify(x, self.patch_size, self.in_chans, self.grid_size)

    # ---------------------------------------------------------------------------------------------------------
    def sample_mask(self, n: int, device, mask_ratio: float, generator: torch.Generator | None = None):
        """Random masks for n images: (mask (N, L) float, 1 = removed; ids_restore (N, L); ids_keep (N, L_keep)).

        Official MAE algorithm (``maelab.masking``): int(L (1 - mask_ratio)) tokens kept per image, or with
        ``mask_unit`` k > 1, int(U (1 - mask_ratio)) of the U k x k token blocks. ``ids_keep`` lists the kept
        token positions in the order the encoder sees them. Noise is drawn on the generator's device (CPU
        generators work with CUDA models, and the same generator gives the same masks on every device).
        ``mask_ratio == 0`` keeps every token in raster order and draws no random numbers.
        """
        length = self.num_patches
        if mask_ratio == 0:
            ids = torch.arange(length, device=device).expand(n, length)
            return torch.zeros(n, length, device=device), ids.clone(), ids.clone()
        gdev = generator.device if generator is not None else device
        dummy = torch.zeros(n, length, 1, device=gdev)
        _, mask, ids_restore = masking.block_masking(dummy, mask_ratio, self.grid_size, self.mask_unit, generator)
        mask, ids_restore = mask.to(device), ids_restore.to(device)
        if self.mask_unit == 1:
            len_keep = masking.num_keep(length, mask_ratio)
        else:
            len_keep = masking.num_keep(length // self.mask_unit**2, mask_ratio) * self.mask_unit**2
        ids_keep = torch.argsort(ids_restore, dim=1)[:, :len_keep]
        return mask, ids_restore, ids_keep

    def target(self, imgs: torch.Tensor) -> torch.Tensor:
        """Reconstruction target (N, L, p*p*C): patchified network-space pixels; with ``norm_pix_loss`` each patch
        is standardised, (t - mean) / sqrt(var + 1e-6), unbiased variance over its p*p*C values (official MAE)."""
        t = self.patchify(self.normalize_input(imgs))
        if self.norm_pix_loss:
            mean = t.mean(dim=-1, keepdim=True)
            var = t.var(dim=-1, keepdim=True)
            t = (t - mean) / (var + 1.0e-6) ** 0.5
        return t

    @staticmethod
    def pool(latent: torch.Tensor, pool: str = "cls") -> torch.Tensor:
        """(N, 1 + T, D) encoder output -> (N, D): [CLS] token (``"cls"``) or mean of the other tokens (``"mean"``)."""
        one_of("pool", pool, POOLS)
        return latent[:, 0] if pool == "cls" else latent[:, 1:].mean(dim=1)

    # ---------------------------------------------------------------------------------------------------------
    def encode(
        self, imgs, mask_ratio: float = 0.0, generator=None, return_tokens: bool = False, return_attn: bool = False
    ) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def decode(
        self, latent, ids_restore=None, return_tokens: bool = False, return_attn: bool = False
    ) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def reconstruction_loss(self, pred, target, mask) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def forward(
        self, imgs: torch.Tensor, mask_ratio: float | None = None, generator: torch.Generator | None = None
    ) -> dict:
        """One masked-modelling step. Returns a dict with

        * ``loss``: loss_rec + lambda_unif * loss_unif (scalar); ``loss_rec``; ``loss_unif`` (0-tensor if lambda=0).
          Under torch.distributed the uniformity term is computed on the features of every process, all-gathered
          (:func:`~maelab.models.gather_features` with ``uniformity_gather``): every process gets the
          global batch's ``loss_unif``; ``"official"`` (the default) back-propagates 1/world_size of its gradient
          after DDP's averaging, as the official U-MAE code, ``"exact"`` all of it. One process: the identity.
        * ``pred`` (N, L, p*p*C) predictions for every token, in the target's space (see :meth:`target`)
        * ``target`` (N, L, p*p*C), ``mask`` (N, L; 1 = removed), ``ids_restore`` (N, L)
        * ``latent`` (N, 1 + T, D) encoder output after the final norm
        * ``features`` (N, D): this process's masked-view representation used by the uniformity term (and by an
          online classifier): [CLS] of ``latent`` (``uniformity_feature="cls"``) or the mean of its other tokens; see
          :meth:`uniformity_features` for the official-code options (second norm, ``fc_norm``).
        """
        mask_ratio = self.mask_ratio if mask_ratio is None else self._check_ratio(mask_ratio)
        enc = self.encode(imgs, mask_ratio=mask_ratio, generator=generator)
        pred = self.decode(enc["latent"], enc["ids_restore"])["pred"]
        target = self.target(imgs)
        loss_rec = self.reconstruction_loss(pred, target, enc["mask"])
        features = self.uniformity_features(enc["latent"])
        if self.lambda_unif > 0:
            loss_unif = uniformity_loss(gather_features(features, self.uniformity_gather))
            loss = loss_rec + self.lambda_unif * loss_unif
        else:
            loss_unif = loss_rec.new_zeros(())
            loss = loss_rec
        return {
            "loss": loss,
            "loss_rec": loss_rec,
            "loss_unif": loss_unif,
            "pred": pred,
            "target": target,
            "mask": enc["mask"],
            "ids_restore": enc["ids_restore"],
            "latent": enc["latent"],
            "features": features,
        }

    def uniformity_features(self, latent: torch.Tensor) -> torch.Tensor:
        """(N, 1 + T, D) encoder output (after the final norm) -> (N, D) feature of the uniformity term.

        ``uniformity_feature="cls"``: the [CLS] token, with ``uniformity_double_norm`` passed through the final
        norm a second time, ``norm(norm(x))[:, 0]``, as the official U-MAE code does (``forward_encoder`` ends with
        ``self.norm``, ``forward`` applies ``self.norm(latent)`` again before taking [CLS]). ``"mean"``: the mean
        of the other tokens, with ``uniformity_fc_norm`` followed by the model's own ``fc_norm`` LayerNorm, as the
        official ``global_pool`` path (``self.fc_norm(latent[:, 1:, :].mean(dim=1))``). Both default to the official
        choice (True); False (one norm, no ``fc_norm``: maelab's first implementation,
        ``maelab.result_keys.LEGACY_CHOICES``) stays an option because committed results were computed with it
        (issue 15)."""
        if self.uniformity_feature == "cls":
            cls = latent[:, 0]
            return self.norm(cls) if self.uniformity_double_norm else cls  # LayerNorm is per token
        f = latent[:, 1:].mean(dim=1)
        return self.fc_norm(f) if self.fc_norm is not None else f

    def forward_features(self, imgs: torch.Tensor, pool: str = "cls") -> torch.Tensor:
        """(N, D) representation of the *unmasked* images (all tokens, raster order): [CLS] after the final norm
        (``"cls"``) or the mean of the patch tokens after the final norm (``"mean"``). Used by probes/fine-tuning."""
        one_of("pool", pool, POOLS)
        return self.pool(self.encode(imgs, mask_ratio=0.0)["latent"], pool)

    @torch.no_grad()
    def reconstruct(
        self, imgs: torch.Tensor, mask_ratio: float | None = None, generator: torch.Generator | None = None
    ) -> dict:
        """Reconstructions in the Dataset space, for figures (no gradients).

        Returns ``pred`` (N, C, H, W) the model's prediction of every patch (with ``norm_pix_loss`` the predicted
        patches are un-standardised with the true patch mean/std, as in the MAE demo), ``masked`` (input with
        removed patches zeroed), ``pasted`` (visible patches from the input, removed ones from ``pred``),
        ``mask`` (N, 1, H, W; 1 = removed) and the loss dict of :meth:`forward` under ``out``.
        """
        out = self.forward(imgs, mask_ratio=mask_ratio, generator=generator)
        pred = out["pred"]
        if self.norm_pix_loss:
            raw = self.patchify(self.normalize_input(imgs))
            pred = pred * (raw.var(dim=-1, keepdim=True) + 1.0e-6) ** 0.5 + raw.mean(dim=-1, keepdim=True)
        pred = self.denormalize_input(self.unpatchify(pred))
        pix = masking.pixel_mask(out["mask"], self.patch_size, self.grid_size).to(imgs.dtype)
        return {
            "pred": pred,
            "masked": imgs * (1 - pix),
            "pasted": imgs * (1 - pix) + pred * pix,
            "mask": pix,
            "out": out,
        }

    def extra_repr(self) -> str:
        return (
            f"name={self.name!r}, img_size={self.img_size}, patch_size={self.patch_size}, "
            f"in_chans={self.in_chans}, embed_dim={self.embed_dim}, depth={self.depth}, "
            f"mask_ratio={self.mask_ratio}, mask_unit={self.mask_unit}, norm_pix_loss={self.norm_pix_loss}, "
            f"lambda_unif={self.lambda_unif}, uniformity_feature={self.uniformity_feature!r}, "
            f"uniformity_double_norm={self.uniformity_double_norm}, uniformity_fc_norm={self.uniformity_fc_norm}, "
            f"patch_embed_bias={self.patch_embed_bias!r}, uniformity_gather={self.uniformity_gather!r}"
        )
