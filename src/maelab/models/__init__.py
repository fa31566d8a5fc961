"""Self-supervised ViT models: MAE, U-MAE, SimMIM, U-SimMIM (``create``), plus a classifier wrapper for probes and
fine-tuning and a loader for the official MAE checkpoints.

Choices (and why)
-----------------
* Encoders/decoders are built from timm's ``PatchEmbed`` and ``Block`` (the same modules the official MAE code
  uses), so parameter names and shapes match ``facebookresearch/mae`` and its checkpoints load with
  ``strict=True``. Position embeddings are fixed 2-D sin-cos (zero row for [CLS]); initialisation is the
  official one; LayerNorm eps is 1e-6 as in the official factories.
* Masking comes from :mod:`maelab.masking` (the official argsort-of-noise algorithm); ``mask_unit`` k masks
  k x k blocks of tokens, decoupling the masking unit from the ViT patch size. Masks are reproducible from a
  ``torch.Generator`` (noise is drawn on the generator's device) and ``create(..., seed=s)`` makes the weight
  initialisation reproducible without touching the global RNG.
* Every block's output tokens and attention maps are available (``encode``/``decode`` with
  ``return_tokens``/``return_attn``); maps are recomputed from the block's own q/k weights, because timm runs the
  fused attention kernel, which never materialises them.
* Images enter in the Dataset convention ([0, 1]); ``input_norm`` ("imagenet" for ``vit_base``, matching the
  official weights; "none" otherwise) is applied inside the model. Predictions and targets live in the
  normalised space (per-patch standardised with ``norm_pix_loss``); :meth:`MaskedImageModel.reconstruct` maps
  predictions back to [0, 1] for figures.

Sizes (``SIZES``; any entry can be overridden through ``create(name, size, **overrides)``)::

    size       img  patch  dim  depth  heads | MAE decoder dim / depth / heads | tokens | note
    micro       32    4     64    2      2   |   64 / 1 / 2                    |   64   | CI: tiny and fast
    small       32    4    128    4      4   |  128 / 2 / 4                    |   64   |
    vit_tiny    32    2    192   12      3   |  192 / 4 / 3                    |  256   | U-MAE's CIFAR-10 ViT-Tiny (*)
    vit_small   32    2    384   12      6   |  256 / 4 / 8                    |  256   | our choice
    vit_base   224   16    768   12     12   |  512 / 8 / 16                   |  196   | official mae_vit_base_patch16

(*) U-MAE trains ViT-Tiny on CIFAR-10 with "a flexible decoder following MAE"; its main text gives neither the
patch size nor the decoder, so patch 2 and the 4-layer 192-d decoder are our (common CIFAR) choice.
All sizes use mlp_ratio 4. Per-model defaults: ``mae`` mask_ratio 0.75, norm_pix_loss True (the official
pre-training recipe and U-MAE's default), lambda_unif 0; ``umae`` the same with lambda_unif 0.01; ``simmim``
mask_ratio 0.6, raw-pixel L1 targets (norm_pix_loss False), lambda_unif 0, mask_unit 1 (2 for ``vit_base``: the
paper's 32-pixel masking blocks); ``usimmim`` the same with lambda_unif 0.01.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torch.nn as nn

from .. import result_keys
from .._util import state_dict_mismatch
from .._validate import ParameterError, one_of, positive_int
from ._base import POOLS, MaskedImageModel
from ._layers import (
    ATTN_NORMS,
    UNIFORMITY_GATHERS,
    attention_map,
    attention_output,
    attention_weights,
    gather_features,
    sincos_2d,
    uniformity_loss,
)
from .mae import MaskedAutoencoderViT
from .simmim import SimMIM

__all__ = [
    "MODEL_OPTIONS",
    "ATTN_NORMS",
    "MODELS",
    "SIZES",
    "UNIFORMITY_GATHERS",
    "EncoderClassifier",
    "MaskedAutoencoderViT",
    "MaskedImageModel",
    "SimMIM",
    "attention_map",
    "attention_output",
    "attention_weights",
    "describe_choices",
    "create",
    "create_encoder_classifier",
    "load_official_checkpoint",
    "sincos_2d",
    "gather_features",
    "uniformity_loss",
]

_DECODER_KEYS = ("decoder_embed_dim", "decoder_depth", "decoder_num_heads")

SIZES: dict[str, dict[str, Any]] = {
    "micro": dict(
        img_size=32,
        patch_size=4,
        embed_dim=64,
        depth=2,
        num_heads=2,
        decoder_embed_dim=64,
        decoder_depth=1,
        decoder_num_heads=2,
    ),
    "small": dict(
        img_size=32,
        patch_size=4,
        embed_dim=128,
        depth=4,
        num_heads=4,
        decoder_embed_dim=128,
        decoder_depth=2,
        decoder_num_heads=4,
    ),
    "vit_tiny": dict(
        img_size=32,
        patch_size=2,
        embed_dim=192,
        depth=12,
        num_heads=3,
        decoder_embed_dim=192,
        decoder_depth=4,
        decoder_num_heads=3,
    ),
    "vit_small": dict(
        img_size=32,
        patch_size=2,
        embed_dim=384,
        depth=12,
        num_heads=6,
        decoder_embed_dim=256,
        decoder_depth=4,
        decoder_num_heads=8,
    ),
    "vit_base": dict(
        img_size=224,
        patch_size=16,
        embed_dim=768,
        depth=12,
        num_heads=12,
        decoder_embed_dim=512,
        decoder_depth=8,
        decoder_num_heads=16,
        input_norm="imagenet",
    ),
}
for _s in SIZES.values():
    _s.setdefault("in_chans", 3)
    _s.setdefault("mlp_ratio", 4.0)
    _s.setdefault("input_norm", "none")

#: name -> (class, defaults)
MODELS: dict[str, tuple[type, dict[str, Any]]] = {
    "mae": (MaskedAutoencoderViT, dict(mask_ratio=0.75, norm_pix_loss=True, lambda_unif=0.0)),
    "umae": (MaskedAutoencoderViT, dict(mask_ratio=0.75, norm_pix_loss=True, lambda_unif=0.01)),
    "simmim": (SimMIM, dict(mask_ratio=0.6, norm_pix_loss=False, lambda_unif=0.0)),
    "usimmim": (SimMIM, dict(mask_ratio=0.6, norm_pix_loss=False, lambda_unif=0.01)),
}

_COMMON_OPTIONS = (
    "img_size",
    "patch_size",
    "in_chans",
    "embed_dim",
    "depth",
    "num_heads",
    "mlp_ratio",
    "mask_ratio",
    "mask_unit",
    "norm_pix_loss",
    "lambda_unif",
    "uniformity_feature",
    "input_norm",
    "drop_path_rate",
    "attn_norm",
    "skip_scale",
    "uniformity_gather",
    "seed",
    *result_keys.LEGACY_CHOICES,
)

#: What defines a model beyond its weights, i.e. its name and every option of :func:`create` but the seed (which
#: only draws the initial weights); a resumed checkpoint must agree on them (:mod:`maelab.train.checkpoint`).
MODEL_OPTIONS = ("name", *(k for k in _COMMON_OPTIONS if k != "seed"), *_DECODER_KEYS)


def describe_choices(name: str) -> str:
    """One sentence for a page: which official-code choices (``"official"`` | ``"legacy"``,
    :func:`maelab.result_keys.choice_set`) its results use."""
    values = ", ".join(f"`{k}={v!r}`" for k, v in result_keys.choice_set(name).items())
    if name == "official":
        return (
            f"Model choices: **official** ({values}): as the official U-MAE / MAE code, the library default "
            "(`maelab.result_keys.OFFICIAL_CHOICES`)."
        )
    return (
        f"Model choices: **legacy** ({values}): maelab's first implementation "
        "(`maelab.result_keys.LEGACY_CHOICES`), not the library default (the official code's, "
        "`maelab.result_keys.OFFICIAL_CHOICES`); this profile's results were computed before the official choices "
        "became the default, and its re-run with them is pending (issue 15)."
    )


def create(name: str, size: str = "micro", **overrides) -> MaskedImageModel:
    """Build a self-supervised model: ``name`` in "mae", "umae", "simmim", "usimmim"; ``size`` in ``SIZES``.

    Overrides: img_size, patch_size, in_chans, embed_dim, depth, num_heads, mlp_ratio, mask_ratio (in [0, 1);
    0 = no-mask ablation), mask_unit (k x k token blocks; must divide the token grid), norm_pix_loss,
    lambda_unif (>= 0), uniformity_feature ("cls" | "mean"), input_norm ("none" | "imagenet" | (mean, std)),
    drop_path_rate, attn_norm ("softmax" (official) | "exp" | "linear": unnormalised attention kernels, see
    ``_layers.attention_weights``), skip_scale (weight of the attention residual, 1 = official; Cao et al.'s scaled
    skip), uniformity_gather ("official" (default) | "exact": how the uniformity term's features are all-gathered
    across processes under torch.distributed -- the official U-MAE code's gather, whose gradient is 1/N of the
    loss's after DDP's averaging, or the exact one; the identity in one process, see ``_layers.gather_features``),
    seed (reproducible weight init without touching the global RNG), the official-code choices
    uniformity_double_norm, uniformity_fc_norm (see :meth:`MaskedImageModel.uniformity_features`) and
    patch_embed_bias ("zeros" | "conv_default"; see ``_layers.init_patch_embed``) -- the official code's choices
    (:data:`maelab.result_keys.OFFICIAL_CHOICES`) are the default; maelab's first ones
    (:data:`maelab.result_keys.LEGACY_CHOICES`, e.g. ``**result_keys.choice_set("legacy")``) stay options because
    committed results were computed with them (issue 15) -- and, for MAE models,
    decoder_embed_dim, decoder_depth, decoder_num_heads. Bad values raise :class:`maelab.ParameterError`.

    The returned model has ``name``, ``size`` and ``config`` attributes; ``create(**model.config)`` rebuilds the
    same architecture (and, when a seed was given, the same initial weights).
    """
    one_of("name", name, MODELS)
    one_of("size", size, SIZES)
    cls, defaults = MODELS[name]
    allowed = _COMMON_OPTIONS + (_DECODER_KEYS if cls is MaskedAutoencoderViT else ())
    for key in overrides:
        if key not in allowed:
            raise ParameterError("override", f"one of {', '.join(allowed)} for model {name!r}", key)
    cfg = {k: v for k, v in SIZES[size].items() if cls is MaskedAutoencoderViT or k not in _DECODER_KEYS}
    cfg.update(defaults)
    cfg.update(result_keys.CHOICE_DEFAULTS)
    if cls is SimMIM and size == "vit_base":
        cfg["mask_unit"] = 2
    cfg.update(overrides)
    seed = cfg.pop("seed", None)
    if seed is None:
        model = cls(**cfg)
    else:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ParameterError("seed", "an int or None", seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = cls(**cfg)
    model.name = name
    model.size = size
    model.config = {"name": name, "size": size, **cfg, "seed": seed}
    return model


# ----------------------------------------------------------------------------------------------------------------
# classifier for linear probing / fine-tuning
# ----------------------------------------------------------------------------------------------------------------
class EncoderClassifier(nn.Module):
    """``head(head_norm(backbone.forward_features(imgs, pool)))``: a linear classifier on the encoder of a
    self-supervised model (the decoder parameters stay in ``backbone`` but are unused).

    ``head_norm``: None, "batchnorm" (BatchNorm1d without affine, the MAE linear-probe recipe) or "layernorm".
    The head is initialised with normal(std=0.01) weights and zero bias. ``freeze_backbone`` sets
    ``requires_grad=False`` on the backbone (linear probing).
    """

    def __init__(
        self,
        backbone: MaskedImageModel,
        num_classes: int,
        pool: str = "cls",
        head_norm: str | None = None,
        freeze_backbone: bool = False,
    ):
        super().__init__()
        if not isinstance(backbone, MaskedImageModel):
            raise ParameterError("model", "a maelab.models model (from maelab.models.create)", type(backbone).__name__)
        positive_int("num_classes", num_classes, minimum=2)
        one_of("pool", pool, POOLS)
        one_of("head_norm", head_norm, (None, "batchnorm", "layernorm"))
        self.backbone, self.pool, self.num_classes = backbone, pool, num_classes
        dim = backbone.embed_dim
        if head_norm == "batchnorm":
            self.head_norm = nn.BatchNorm1d(dim, affine=False, eps=1e-6)
        elif head_norm == "layernorm":
            self.head_norm = nn.LayerNorm(dim, eps=1e-6)
        else:
            self.head_norm = nn.Identity()
        self.head = nn.Linear(dim, num_classes)
        nn.init.normal_(self.head.weight, std=0.01)
        nn.init.zeros_(self.head.bias)
        if freeze_backbone:
            self.backbone.requires_grad_(False)

    def forward_features(self, imgs: torch.Tensor) -> torch.Tensor:
        return self.backbone.forward_features(imgs, self.pool)

    def forward(self, imgs: torch.Tensor) -> torch.Tensor:
        """Logits (N, num_classes)."""
        return self.head(self.head_norm(self.forward_features(imgs)))


def create_encoder_classifier(
    model: MaskedImageModel,
    num_classes: int,
    pool: str = "cls",
    head_norm: str | None = None,
    freeze_backbone: bool = False,
) -> EncoderClassifier:
    """Wrap ``model``'s encoder with a linear head (see :class:`EncoderClassifier`)."""
    return EncoderClassifier(model, num_classes, pool=pool, head_norm=head_norm, freeze_backbone=freeze_backbone)


# ----------------------------------------------------------------------------------------------------------------
# official checkpoints
# ----------------------------------------------------------------------------------------------------------------
def load_official_checkpoint(model: nn.Module, path: str | Path, strict: bool = True) -> dict[str, list[str]]:
    """Load an official MAE checkpoint (e.g. ``mae_visualize_vit_base.pth``, ``mae_pretrain_vit_base_full.pth``)
    into ``model`` (e.g. ``create("mae", "vit_base", norm_pix_loss=False)`` for the visualisation weights).

    The file is read with ``torch.load(..., weights_only=True)`` (no code executes); a ``{"model": state_dict}``
    wrapper is accepted. Missing keys, unexpected keys and shape mismatches are reported together in one
    :class:`maelab.ParameterError` before anything is copied. With ``strict=False`` missing/unexpected keys are
    allowed (e.g. an encoder-only checkpoint) and returned; shape mismatches always raise.
    The official weights expect ImageNet-normalised inputs: keep ``input_norm="imagenet"`` (the vit_base default).
    Returns {"missing": [...], "unexpected": [...]}.
    """
    path = Path(path)
    if not path.is_file():
        raise ParameterError("path", "an existing checkpoint file", str(path))
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # unpickling refused or corrupt file
        raise ParameterError("path", f"a weights-only torch checkpoint ({type(exc).__name__})", str(path)) from None
    sd = ckpt.get("model", ckpt) if isinstance(ckpt, dict) else ckpt
    if not isinstance(sd, dict) or not all(isinstance(v, torch.Tensor) for v in sd.values()):
        raise ParameterError("path", "a checkpoint holding a state dict or {'model': state_dict}", str(path))
    own = model.state_dict()
    missing = sorted(set(own) - set(sd))
    unexpected = sorted(set(sd) - set(own))
    problems = state_dict_mismatch(own, sd, strict=strict)
    if problems:
        raise ParameterError("checkpoint", f"compatible with {type(model).__name__} ({problems})", str(path))
    model.load_state_dict(sd, strict=strict)
    return {"missing": missing, "unexpected": unexpected}
