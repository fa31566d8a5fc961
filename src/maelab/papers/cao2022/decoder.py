"""Trained-model analyses of Cao, Xu & Clifton (2022) on maelab MAEs (``maelab.models`` "mae"/"umae").

* **Fig. 3** (:func:`layer_readouts`, :func:`readout_metrics`): the decoder input (encoder output with the shared mask
  token inserted, after ``decoder_embed`` and the position embedding) and every decoder block's output are read out
  through the *final* ``decoder_norm`` and ``decoder_pred``, as the paper does with the official ViT-B weights; the
  last read-out is the model's prediction. Read-outs are mapped to images like
  :meth:`maelab.models.MaskedImageModel.reconstruct` (with ``norm_pix_loss`` un-standardised with the true patch
  mean / std, as the MAE demo does).
* **Theorem 5.1 on real models** (:func:`layer_changes`): relative change ||v_(t+1) - v_t|| / ||v_t|| per token,
  averaged over tokens, per image, for the encoder (input tokens, then each block) and the decoder (decoder input,
  then each block). Real blocks have W^V != I, an MLP and LayerNorms: the theorem's hypotheses are not met.
* **Lemma 6.1 / Prop. 6.2** (:func:`decoder_attention`): in the first decoder block, the attention mass a masked
  token puts on visible tokens, on mask tokens and on [CLS]; the fraction of its visible mass beyond the 8
  neighbouring patches and the mass against patch distance; and, per head, the uncentred least-squares R^2 of its
  attention output sum_j A_ij v_j (all tokens) on the span of the visible tokens' values (Lemma 6.1: the mask tokens
  can be dropped with re-weighted attention). The R^2 of a random vector on k generic vectors in R^h is k / h; it
  is returned as ``r2_chance`` for comparison.
"""

from __future__ import annotations

import torch

from maelab import masking, metrics
from maelab._validate import ParameterError, in_range
from maelab.models import MaskedAutoencoderViT, attention_map


def _check(model) -> MaskedAutoencoderViT:
    if not isinstance(model, MaskedAutoencoderViT):
        raise ParameterError("model", "a maelab MAE (models.create('mae' or 'umae', ...))", type(model).__name__)
    return model


def _decoder_input(model, latent: torch.Tensor, ids_restore: torch.Tensor) -> torch.Tensor:
    """Exactly the first lines of :meth:`MaskedAutoencoderViT.decode`: embed, insert mask tokens, add positions."""
    x = model.decoder_embed(latent)
    full = masking.restore(x[:, 1:, :], ids_restore, fill=model.mask_token)
    return torch.cat([x[:, :1, :], full], dim=1) + model.decoder_pos_embed


def _encoder_input(model, imgs: torch.Tensor, ids_keep: torch.Tensor) -> torch.Tensor:
    """The encoder's input tokens ([CLS] + kept patches with positions), as in :meth:`encode`."""
    x = model.patch_embed(model.normalize_input(imgs)) + model.pos_embed[:, 1:, :]
    x = torch.gather(x, 1, ids_keep.unsqueeze(-1).expand(-1, -1, x.shape[-1]))
    cls = (model.cls_token + model.pos_embed[:, :1, :]).expand(x.shape[0], -1, -1)
    return torch.cat([cls, x], dim=1)


def _to_images(model, pred: torch.Tensor, imgs: torch.Tensor) -> torch.Tensor:
    if model.norm_pix_loss:
        raw = model.patchify(model.normalize_input(imgs))
        pred = pred * (raw.var(dim=-1, keepdim=True) + 1.0e-6) ** 0.5 + raw.mean(dim=-1, keepdim=True)
    return model.denormalize_input(model.unpatchify(pred))


@torch.no_grad()
def layer_readouts(
    model, imgs: torch.Tensor, mask_ratio: float | None = None, generator: torch.Generator | None = None
) -> dict:
    """Fig. 3 read-outs. Returns ``readouts`` (1 + decoder_depth, N, C, H, W) in image space (index 0: decoder input,
    i.e. encoder output + mask tokens; index t: output of decoder block t), ``mask`` (N, 1, H, W; 1 = removed),
    ``enc`` and ``dec`` (the encoder / decoder dicts with tokens)."""
    model = _check(model)
    ratio = model.mask_ratio if mask_ratio is None else mask_ratio
    enc = model.encode(imgs, mask_ratio=ratio, generator=generator, return_tokens=True)
    dec = model.decode(enc["latent"], enc["ids_restore"], return_tokens=True)
    states = [_decoder_input(model, enc["latent"], enc["ids_restore"])] + list(dec["tokens"])
    outs = [_to_images(model, model.decoder_pred(model.decoder_norm(x))[:, 1:, :], imgs) for x in states]
    pix = masking.pixel_mask(enc["mask"], model.patch_size, model.grid_size).to(imgs.dtype)
    return {"readouts": torch.stack(outs), "mask": pix, "enc": enc, "dec": dec, "decoder_states": states}


def readout_metrics(readouts: torch.Tensor, imgs: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per read-out and image (float64 (T, N)): ``psnr`` / ``ssim`` of the read-out against the image (clamped to
    [0, 1]) and ``psnr_masked`` of the pasted image (visible pixels from the input), which differs from the image
    on removed patches only."""
    out = {"psnr": [], "ssim": [], "psnr_masked": []}
    for r in readouts:
        r = r.clamp(0, 1)
        out["psnr"].append(metrics.psnr(r, imgs, reduction="none"))
        out["ssim"].append(metrics.ssim(r, imgs, reduction="none"))
        out["psnr_masked"].append(metrics.psnr(imgs * (1 - mask) + r * mask, imgs, reduction="none"))
    return {k: torch.stack(v).double().cpu() for k, v in out.items()}


def relative_change_per_image(states) -> torch.Tensor:
    """(len(states) - 1, N) float64: mean over tokens of ||b - a|| / ||a|| between consecutive (N, T, D) states."""
    if len(states) < 2:
        raise ParameterError("states", "at least 2 per-layer tensors", len(states))
    out = []
    for a, b in zip(states[:-1], states[1:]):
        a, b = a.detach().double(), b.detach().double()
        out.append(((b - a).norm(dim=-1) / a.norm(dim=-1).clamp_min(1e-12)).mean(dim=-1))
    return torch.stack(out).cpu()


@torch.no_grad()
def layer_changes(
    model,
    imgs: torch.Tensor,
    mask_ratio: float | None = None,
    generator: torch.Generator | None = None,
    readouts: dict | None = None,
) -> dict[str, torch.Tensor]:
    """``encoder`` (depth, N) and ``decoder`` (decoder_depth, N) relative changes per block and image
    (:func:`relative_change_per_image`): block t's output against its input. ``readouts``: what
    :func:`layer_readouts` returned for the same model, images and masks (then ``mask_ratio`` and ``generator`` are
    not used): the tokens are taken from it instead of running the model again."""
    ro = readouts if readouts is not None else layer_readouts(model, imgs, mask_ratio, generator)
    enc = [_encoder_input(model, imgs, ro["enc"]["ids_keep"])] + list(ro["enc"]["tokens"])
    return {"encoder": relative_change_per_image(enc), "decoder": relative_change_per_image(ro["decoder_states"])}


def span_r2(z: torch.Tensor, basis: torch.Tensor) -> torch.Tensor:
    """Uncentred least-squares R^2 of each row of ``z`` (..., m, h) on the span of the rows of ``basis`` (..., k, h):
    ||P z||^2 / ||z||^2 with P the orthogonal projection onto the row space (float64)."""
    z, basis = z.double(), basis.double()
    q, _ = torch.linalg.qr(basis.transpose(-2, -1))  # (..., h, k) orthonormal columns spanning the rows of basis
    proj = (z @ q) @ q.transpose(-2, -1)
    return (proj**2).sum(-1) / (z**2).sum(-1).clamp_min(1e-300)


def grid_distances(grid: tuple[int, int]) -> torch.Tensor:
    """(L, L) Chebyshev distance between patch positions (raster order) of a ``grid``."""
    gh, gw = grid
    r, c = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
    r, c = r.reshape(-1), c.reshape(-1)
    return torch.maximum((r[:, None] - r[None, :]).abs(), (c[:, None] - c[None, :]).abs())


def far_fraction_uniform(grid: tuple[int, int], near: int = 1) -> float:
    """The ``far_fraction`` of :func:`attention_split` for attention spread uniformly over the visible keys, in
    expectation over uniformly random masks: mean over query positions q of #{j != q : d(q, j) > near} / (L - 1)
    (given q masked, the visible keys are a uniform random subset of the other positions). The reference a measured
    far fraction must be read against: on a small grid most patches are far whatever attention does."""
    d = grid_distances(grid).double()
    n = d.shape[0]
    if n < 2:
        raise ParameterError("grid", "at least 2 patches", grid)
    return float(((d > near).sum(dim=1) / (n - 1)).mean())


def attention_split(attn: torch.Tensor, mask: torch.Tensor, grid: tuple[int, int], near: int = 1) -> dict:
    """Mass of masked queries' attention (N, heads, 1 + L, 1 + L; index 0 = [CLS]) by key type and distance.

    Returns, averaged over heads and masked queries of each image (tensors (N,)): ``visible``, ``masked``, ``cls``
    (attention mass on visible patch tokens / mask tokens / [CLS]; they sum to 1 for softmax attention) and
    ``far_fraction`` (share of the visible mass on patches at Chebyshev distance > ``near``); and ``by_distance``
    (N, max distance + 1): mean attention weight per visible key at each distance (nan where none).
    """
    n, h, t, _ = attn.shape
    if mask.shape != (n, t - 1):
        raise ParameterError("mask", f"(N, L) = ({n}, {t - 1}) matching attn", tuple(mask.shape))
    a = attn.double()[:, :, 1:, :]  # masked + visible queries, all keys
    vis = (mask == 0).double()  # (N, L)
    qm = mask.double()  # masked queries
    w = qm[:, None, :, None]  # weight of each query
    per_q = lambda m: (a[..., 1:] * m[:, None, None, :]).sum(-1)  # (N, h, L): mass on a key set
    denom = h * w.sum(dim=(1, 2, 3)).clamp_min(1)
    avg = lambda x: (x * w[..., 0]).sum(dim=(1, 2)) / denom  # over heads and masked queries
    d = grid_distances(grid).to(a.device)
    far = (d > near).double()
    m_vis = per_q(vis)
    far_mass = (a[..., 1:] * vis[:, None, None, :] * far[None, None]).sum(-1)
    out = {
        "visible": avg(m_vis),
        "masked": avg(per_q(qm)),
        "cls": avg(a[..., 0]),
        "far_fraction": avg(far_mass / m_vis.clamp_min(1e-300)),
    }
    prof = []
    for k in range(int(d.max()) + 1):
        sel = (d == k).double()[None, None] * vis[:, None, None, :]  # (N, 1, L, L) visible keys at distance k
        cnt = h * (sel * w[..., 0][..., None]).sum(dim=(1, 2, 3))
        mean = (a[..., 1:] * sel * w).sum(dim=(1, 2, 3)) / cnt.clamp_min(1)
        prof.append(torch.where(cnt > 0, mean, torch.full_like(mean, float("nan"))))
    out["by_distance"] = torch.stack(prof, dim=1)
    return {k: v.cpu() for k, v in out.items()}


@torch.no_grad()
def decoder_attention(
    model, imgs: torch.Tensor, mask_ratio: float | None = None, generator: torch.Generator | None = None, near: int = 1
) -> dict:
    """First decoder block: :func:`attention_split` of its attention plus ``r2`` (N,) (mean over heads and masked
    tokens of :func:`span_r2` of sum_j A_ij v_j on the visible tokens' values) and ``r2_chance`` = min(k, h) / h."""
    model = _check(model)
    if model.decoder_depth < 1:
        raise ParameterError("model", "an MAE with at least one decoder block", model.decoder_depth)
    ratio = (
        model.mask_ratio
        if mask_ratio is None
        else in_range("mask_ratio", mask_ratio, 0.0, 1.0, low_open=True, high_open=True)
    )
    enc = model.encode(imgs, mask_ratio=ratio, generator=generator)
    x = _decoder_input(model, enc["latent"], enc["ids_restore"])
    blk = model.decoder_blocks[0]
    attn = attention_map(blk, x)  # (N, h, T, T)
    a = blk.attn
    qkv = a.qkv(blk.norm1(x)).reshape(x.shape[0], x.shape[1], 3, a.num_heads, a.head_dim).permute(2, 0, 3, 1, 4)
    v = qkv[2]  # (N, h, T, hd)
    z = attn @ v
    out = attention_split(attn, enc["mask"], model.grid_size, near)
    r2 = []
    for i in range(x.shape[0]):
        vis = torch.nonzero(enc["mask"][i] == 0).reshape(-1) + 1
        msk = torch.nonzero(enc["mask"][i] == 1).reshape(-1) + 1
        r2.append(span_r2(z[i][:, msk], v[i][:, vis]).mean())
    out["r2"] = torch.stack(r2).cpu()
    k = int((enc["mask"][0] == 0).sum())
    out["r2_chance"] = min(k, a.head_dim) / a.head_dim
    return out
