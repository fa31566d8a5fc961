"""Building blocks shared by the ViT models: sin-cos position embeddings, official MAE initialisation,
attention-map extraction from timm blocks, the uniformity loss and its cross-process gather, and input
normalisation."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .._validate import ParameterError, one_of

if TYPE_CHECKING:
    from timm.models.vision_transformer import Block

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

#: LayerNorm of the official MAE factories (``partial(nn.LayerNorm, eps=1e-6)``).
norm_layer = partial(nn.LayerNorm, eps=1e-6)


# ----------------------------------------------------------------------------------------------------------------
# 2-D sin-cos position embedding (MAE util/pos_embed.py convention)
# ----------------------------------------------------------------------------------------------------------------
def sincos_1d(dim: int, pos: np.ndarray) -> np.ndarray:
    """(M,) positions -> (M, dim): [sin(pos * w_i) for i < dim/2] ++ [cos(pos * w_i)], w_i = 10000^(-2i/dim)."""
    if dim % 2:
        raise ParameterError("embed_dim", "divisible by 4 (2-D sin-cos position embedding)", dim * 2)
    omega = 1.0 / 10000 ** (np.arange(dim // 2, dtype=np.float64) / (dim / 2.0))
    out = np.outer(np.asarray(pos, dtype=np.float64).reshape(-1), omega)
    return np.concatenate([np.sin(out), np.cos(out)], axis=1)


def sincos_2d(dim: int, grid: tuple[int, int], cls_token: bool = True) -> np.ndarray:
    """Fixed 2-D sin-cos embedding, float32 (1 + gh*gw, dim) with a zero row for [CLS] (if ``cls_token``).

    Tokens are in raster order. As in the official MAE code, the first dim/2 channels encode the *column* index
    and the last dim/2 the *row* index, each as [sin(pos w_0..), cos(pos w_0..)], w_i = 10000^(-i/(dim/4)).
    """
    if dim % 4:
        raise ParameterError("embed_dim", "divisible by 4 (2-D sin-cos position embedding)", dim)
    gh, gw = grid
    rows, cols = np.meshgrid(np.arange(gh), np.arange(gw), indexing="ij")
    emb = np.concatenate([sincos_1d(dim // 2, cols.reshape(-1)), sincos_1d(dim // 2, rows.reshape(-1))], axis=1)
    if cls_token:
        emb = np.concatenate([np.zeros((1, dim)), emb], axis=0)
    return emb.astype(np.float32)


# ----------------------------------------------------------------------------------------------------------------
# initialisation (official MAE)
# ----------------------------------------------------------------------------------------------------------------
def init_linear_and_norm(module: nn.Module) -> None:
    """xavier_uniform for Linear weights (zero bias), LayerNorm weight 1 / bias 0 (official MAE ``_init_weights``)."""
    if isinstance(module, nn.Linear):
        nn.init.xavier_uniform_(module.weight)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.LayerNorm):
        if module.weight is not None:
            nn.init.ones_(module.weight)
        if module.bias is not None:
            nn.init.zeros_(module.bias)


def init_patch_embed(proj: nn.Conv2d, zero_bias: bool = False) -> None:
    """Patch-embedding conv initialised like a Linear layer: xavier_uniform on the (D, C*p*p) weight view.

    ``zero_bias`` False (the models' default, ``patch_embed_bias="conv_default"``) keeps PyTorch's default Conv2d
    bias, uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = C*p*p, drawn when the conv was built -- what the
    official MAE ``initialize_weights`` does (it re-initialises only ``patch_embed.proj.weight``, and its
    ``_init_weights`` touches Linear and LayerNorm modules only). True (``patch_embed_bias="zeros"``, maelab's first
    implementation) zeroes the bias: kept as an option because committed results were computed with it (issue 15).
    Either way the random stream is the same."""
    w = proj.weight.data
    nn.init.xavier_uniform_(w.view(w.shape[0], -1))
    if proj.bias is not None and zero_bias:
        nn.init.zeros_(proj.bias)


#: attention normalisations (``attn_norm``): the official softmax, or an unnormalised kernel (Cao et al. 2022, Thm. 5.1)
ATTN_NORMS = ("softmax", "exp", "linear")


def attention_weights(scores: torch.Tensor, attn_norm: str = "softmax") -> torch.Tensor:
    """Attention weights from scaled scores s = q k^T / sqrt(d_head) (..., T, T).

    ``"softmax"``: softmax over keys (rows sum to 1; the official MAE). ``"exp"``: exp(s) / T, the same kernel without
    the row normalisation (the quadrature of int exp(s(x, x')) v(x') dmu(x') with mu uniform over the T tokens).
    ``"linear"``: s / T, a linear (dot-product) kernel, likewise unnormalised.
    """
    if attn_norm == "softmax":
        return scores.softmax(dim=-1)
    t = scores.shape[-1]
    if attn_norm == "exp":
        return scores.exp() / t
    if attn_norm == "linear":
        return scores / t
    raise ParameterError("attn_norm", "one of " + ", ".join(map(repr, ATTN_NORMS)), attn_norm)


def one_of_norm(attn_norm: str) -> str:
    if attn_norm not in ATTN_NORMS:
        raise ParameterError("attn_norm", "one of " + ", ".join(map(repr, ATTN_NORMS)), attn_norm)
    return attn_norm


def make_blocks(
    dim: int,
    depth: int,
    heads: int,
    mlp_ratio: float,
    drop_path: float = 0.0,
    attn_norm: str = "softmax",
    skip_scale: float = 1.0,
) -> nn.ModuleList:
    """``depth`` timm ``Block`` layers (qkv_bias=True, LayerNorm eps 1e-6), stochastic depth rising linearly to
    ``drop_path``: exactly the official MAE blocks (same parameter names and shapes). With ``attn_norm`` other than
    "softmax" or ``skip_scale`` other than 1, ``KernelBlock`` layers (same parameters) instead."""
    # timm (and the torchvision and torch._dynamo it imports, ~3 s and ~1 s more at exit on the 2-core CPU) is
    # imported when a model is first built, not with maelab.models: a page that reads stored results never builds
    # one, and each page executes in a kernel of its own, three times in make test
    from timm.models.vision_transformer import Block

    from ._kernel_block import KernelBlock

    one_of_norm(attn_norm)
    rates = torch.linspace(0, drop_path, depth).tolist() if depth else []
    if attn_norm == "softmax" and skip_scale == 1.0:
        return nn.ModuleList(
            [Block(dim, heads, mlp_ratio, qkv_bias=True, norm_layer=norm_layer, drop_path=r) for r in rates]
        )
    return nn.ModuleList(
        [
            KernelBlock(
                dim,
                heads,
                mlp_ratio,
                qkv_bias=True,
                norm_layer=norm_layer,
                drop_path=r,
                attn_norm=attn_norm,
                skip_scale=skip_scale,
            )
            for r in rates
        ]
    )


# ----------------------------------------------------------------------------------------------------------------
# attention maps
# ----------------------------------------------------------------------------------------------------------------
def attention_map(block: Block, x: torch.Tensor) -> torch.Tensor:
    """Attention weights (N, heads, T, T) of a timm ``Block`` on its input ``x`` (N, T, D): the softmax, or the
    block's ``attn_norm`` kernel for a ``KernelBlock``.

    timm may run the fused scaled-dot-product kernel, which never materialises the map; we recompute it from the
    block's own weights: h = norm1(x), (q, k, v) = qkv(h) split per head, q, k through the block's q_norm/k_norm,
    softmax(q k^T * head_dim^-0.5). Rows index queries, columns keys (rows sum to 1). Dropout is not applied.
    """
    attn = block.attn
    n, t, _ = x.shape
    h = block.norm1(x)
    qkv = attn.qkv(h).reshape(n, t, 3, attn.num_heads, attn.head_dim).permute(2, 0, 3, 1, 4)
    q, k = attn.q_norm(qkv[0]), attn.k_norm(qkv[1])
    return attention_weights((q * attn.scale) @ k.transpose(-2, -1), getattr(block, "attn_norm", "softmax"))


def attention_output(block: Block, x: torch.Tensor, attn_map: torch.Tensor) -> torch.Tensor:
    """Attention-branch output proj(attn_map @ v) of ``block`` on input ``x`` (to check :func:`attention_map`)."""
    attn = block.attn
    n, t, _ = x.shape
    qkv = attn.qkv(block.norm1(x)).reshape(n, t, 3, attn.num_heads, attn.head_dim).permute(2, 0, 3, 1, 4)
    out = (attn_map @ qkv[2]).transpose(1, 2).reshape(n, t, attn.attn_dim)
    return attn.proj(attn.norm(out))


def run_blocks(blocks: nn.ModuleList, x: torch.Tensor, return_tokens: bool = False, return_attn: bool = False):
    """Apply ``blocks`` in turn; optionally collect every block's output tokens and attention map.

    Returns (x, tokens, attn): ``tokens[i]`` is the output of block i (N, T, D), before any final norm;
    ``attn[i]`` the attention map (N, heads, T, T) of block i on its input. Lists are empty when not asked.
    """
    tokens, attns = [], []
    for blk in blocks:
        if return_attn:
            attns.append(attention_map(blk, x))
        x = blk(x)
        if return_tokens:
            tokens.append(x)
    return x, tokens, attns


# ----------------------------------------------------------------------------------------------------------------
# losses
# ----------------------------------------------------------------------------------------------------------------
def uniformity_loss(features: torch.Tensor) -> torch.Tensor:
    """U-MAE spectral uniformity term: mean over the full B x B matrix (diagonal included) of (F F^T)^2,
    F = rows of ``features`` (B, D) L2-normalised. Equals the official ``loss_func.uniformity_loss`` on one device."""
    f = F.normalize(features, dim=1)
    return (f @ f.T).pow(2).mean()


#: how the uniformity term's features are gathered across processes (``uniformity_gather``; :func:`gather_features`)
UNIFORMITY_GATHERS = ("official", "exact")


def _distributed_world() -> int:
    """The world size of the default process group, or 1 when torch.distributed is unavailable or uninitialised."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return 1
    return torch.distributed.get_world_size()


def _all_gather_rows(features: torch.Tensor) -> torch.Tensor:
    """Every process's ``features`` (B, D) concatenated in rank order (world * B, D); no autograd."""
    parts = [torch.empty_like(features) for _ in range(torch.distributed.get_world_size())]
    torch.distributed.all_gather(parts, features.contiguous())
    return torch.cat(parts, dim=0)


def _own_rows(grad: torch.Tensor, batch: int) -> torch.Tensor:
    rank = torch.distributed.get_rank()
    return grad[rank * batch : (rank + 1) * batch]


class _GatherOfficial(torch.autograd.Function):
    """All-gather; backward returns this process's rows of the incoming gradient only (official U-MAE
    ``GatherLayer``: no sum over processes)."""

    @staticmethod
    def forward(ctx, features: torch.Tensor) -> torch.Tensor:
        ctx.batch = features.shape[0]
        return _all_gather_rows(features)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        return _own_rows(grad, ctx.batch).contiguous()


class _GatherExact(_GatherOfficial):
    """All-gather (as :class:`_GatherOfficial`); backward sums the incoming gradients of every process (all_reduce
    SUM), then returns this process's rows (the fix of lightly-ai/lightly issue 1528)."""

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        grad = grad.contiguous().clone()
        torch.distributed.all_reduce(grad, op=torch.distributed.ReduceOp.SUM)
        return _own_rows(grad, ctx.batch).contiguous()


def gather_features(features: torch.Tensor, mode: str = "official") -> torch.Tensor:
    """The uniformity term's features (B, D) of every process, concatenated in rank order (world * B, D).

    The identity when torch.distributed is unavailable or uninitialised or the world size is 1 (so a single-process
    run is unchanged by ``mode``). Otherwise every process all-gathers the features (every process must call it,
    with the same B: the trainer drops incomplete batches), so every process computes the same uniformity loss L of
    the global batch; the two modes differ only in the backward pass:

    * ``"official"`` (the default): as the official U-MAE code (``zhangq327/U-MAE``, ``loss_func.py``:
      ``uniformity_loss`` applies its ``GatherLayer``), the backward returns only this process's rows of the
      incoming gradient, with no sum over processes. Process r thus sends dL/dF_r into its own features only, and
      DistributedDataParallel *averages* the parameter gradients over the N processes: the uniformity term's
      parameter gradient is (1/N) dL/dtheta, 1/N of the gradient of the loss as written (the per-sample-mean
      reconstruction term is exact). The term acts with an effective weight lambda / N.
    * ``"exact"``: the backward first sums the incoming gradients over the processes (all_reduce SUM; as proposed in
      lightly-ai/lightly issue 1528 for the same ``GatherLayer``), then returns this process's rows; after DDP's
      averaging the parameter gradient equals the single-process gradient on the global batch of N * B images.

    Why ``"official"`` is the default: where maelab departs from an official implementation, the default follows
    the official one -- its actual behaviour, bugs included -- because the paper's numbers came from it. U-MAE's
    lambda = 0.01 with 8 processes acted with an effective weight of about 0.01 / 8 = 1.25e-3; ``"exact"`` is the
    loss as written.
    """
    one_of("uniformity_gather", mode, UNIFORMITY_GATHERS)
    if _distributed_world() == 1:
        return features
    if mode == "official":
        return _GatherOfficial.apply(features)
    return _GatherExact.apply(features)


# ----------------------------------------------------------------------------------------------------------------
# input normalisation
# ----------------------------------------------------------------------------------------------------------------
def resolve_input_norm(input_norm, in_chans: int) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """None/"none" -> no normalisation; "imagenet" -> ImageNet mean/std (3 channels); or (mean, std) sequences."""
    allowed = "'none', 'imagenet' or a (mean, std) pair of per-channel sequences"
    if input_norm is None or input_norm == "none":
        return None
    if input_norm == "imagenet":
        if in_chans != 3:
            raise ParameterError("input_norm", f"'none' or (mean, std) when in_chans={in_chans} != 3", input_norm)
        return IMAGENET_MEAN, IMAGENET_STD
    try:
        mean, std = input_norm
        mean, std = tuple(float(v) for v in mean), tuple(float(v) for v in std)
    except (TypeError, ValueError):
        raise ParameterError("input_norm", allowed, input_norm) from None
    if len(mean) != in_chans or len(std) != in_chans or min(std) <= 0:
        raise ParameterError("input_norm", f"{allowed} with {in_chans} entries and std > 0", input_norm)
    return mean, std
