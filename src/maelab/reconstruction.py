"""How well an MAE reconstructs: structural (SSIM, FSIM) and pixel (PSNR, -MSE) similarity, and its masked-patch
loss against two references (Kong et al.'s Fig. 5 protocol; read by :mod:`maelab.zoo` and the Kong pages).

Protocol (paper Sec. 3.1): reconstruct held-out images **without masking** (the decoder sees every token) and
compare with the originals; as a second panel, reconstruct with a random mask and score the "paste" image (visible
patches from the original, masked ones from the prediction), the quantity the MAE loss trains.

* Predictions come from :meth:`maelab.models.MaskedImageModel.reconstruct`, which returns images in the dataset's
  space: with ``norm_pix_loss`` every predicted patch is de-normalised with **that patch's own** mean and
  (unbiased) variance of the true image in the network's input space, ``pred * sqrt(var + 1e-6) + mean``
  (the official MAE demo), then the input normalisation is undone.
* Scores go through :func:`maelab.metrics.reconstruction_metrics` (piq): predictions are clamped to
  ``[0, data_range]``; ``data_range`` is 1.0 for every ``maelab.data`` dataset (images in [0, 1]). SSIM uses an
  11 x 11 Gaussian window (sigma 1.5) without piq's downsampling; FSIM is FSIMc on RGB and FSIM on grey images;
  PSNR is capped at 80 dB; MSE is in image units. ``neg_mse`` = -MSE, as the paper plots it.
* :func:`masked_patch_losses`: the losses behind the precondition of every Fig.-5 claim. A model has learned to
  reconstruct when its masked-patch loss (its own objective, its own masking) is below ``(1 - margin)`` times the
  smaller of two references under the same masks: the same architecture at random initialisation and the
  predictor of every patch's own mean (0 in the norm-pix target space, a loss of (n - 1)/n for a patch of n
  values). A reconstruction score of a model that did not beat both says nothing about what it learned. The page
  applies it as a :class:`maelab.claims.ReconstructionCheck` per model
  (:func:`maelab.zoo.reconstruction_checks`).
"""

from __future__ import annotations

from typing import Any

import torch

from . import metrics
from ._validate import ParameterError, in_range, positive_int
from .options import DryRunLimits, cap

__all__ = [
    "DATA_RANGE",
    "reconstruct",
    "reconstruction_scores",
    "masked_patch_losses",
    "score_model",
]

SCORES = ("ssim", "fsim", "psnr", "neg_mse")

DATA_RANGE = 1.0


@torch.no_grad()
def reconstruct(
    model,
    images: torch.Tensor,
    mask_ratio: float = 0.0,
    *,
    generator: torch.Generator | None = None,
    batch_size: int = 256,
) -> dict[str, torch.Tensor]:
    """Reconstructions of ``images`` (N, C, H, W) in [0, 1] in eval mode, batch by batch.

    Returns ``pred`` (the prediction of every patch, de-normalised, dataset space), ``pasted`` and ``mask``
    (N, 1, H, W; 1 = removed) on the CPU. ``mask_ratio`` 0 (default) is the paper's unmasked protocol.
    """
    in_range("mask_ratio", mask_ratio, 0.0, 1.0, high_open=True)
    positive_int("batch_size", batch_size)
    if not isinstance(images, torch.Tensor) or images.ndim != 4:
        raise ParameterError("images", "a 4-D tensor (N, C, H, W)", getattr(images, "shape", images))
    was_training = model.training
    model.eval()
    dev = next(model.parameters()).device
    out: dict[str, list[torch.Tensor]] = {"pred": [], "pasted": [], "mask": []}
    try:
        for s in range(0, images.shape[0], batch_size):
            r = model.reconstruct(images[s : s + batch_size].to(dev), mask_ratio=mask_ratio, generator=generator)
            for k in out:
                out[k].append(r[k].detach().cpu())
    finally:
        model.train(was_training)
    return {k: torch.cat(v) for k, v in out.items()}


def reconstruction_scores(
    model,
    images: torch.Tensor,
    mask_ratio: float = 0.0,
    *,
    fsim: bool = True,
    generator: torch.Generator | None = None,
    batch_size: int = 256,
) -> dict[str, Any]:
    """SSIM, FSIM, PSNR, MSE and -MSE of the reconstructions of ``images``, averaged over the images.

    ``mask_ratio`` 0: the unmasked protocol (scores of ``pred``). ``mask_ratio`` > 0: the masked panel, scores of
    the paste image plus ``mse_masked`` (MSE over the removed pixels only). ``data_range`` is stated in the result.
    """
    r = reconstruct(model, images, mask_ratio, generator=generator, batch_size=batch_size)
    target = images.detach().cpu().to(r["pred"].dtype)
    if mask_ratio == 0:
        s = metrics.reconstruction_metrics(r["pred"], target, data_range=DATA_RANGE, fsim_metric=fsim)
    else:
        s = metrics.reconstruction_metrics(
            r["pred"], target, r["mask"], data_range=DATA_RANGE, paste=True, fsim_metric=fsim
        )
    s["neg_mse"] = -s["mse"]
    s["data_range"] = DATA_RANGE
    s["mask_ratio"] = float(mask_ratio)
    return s


@torch.no_grad()
def masked_patch_losses(
    model, reference, images: torch.Tensor, mask_ratio: float, *, seed: int = 0, batch_size: int = 256
) -> dict[str, float]:
    """Mean masked-patch loss of ``model``, of ``reference`` and of the patch-mean predictor on ``images``.

    All three under the same masks: each model draws them from its own CPU generator seeded with ``seed`` (same
    ``mask_unit`` and token grid required). The patch-mean predictor predicts 0 for every target patch of
    ``model`` (its norm-pix target space). Returns ``loss``, ``reference_loss``, ``patch_mean_loss``.
    """
    in_range("mask_ratio", mask_ratio, 0.0, 1.0, low_open=True, high_open=True)
    positive_int("batch_size", batch_size)
    if (model.num_patches, model.mask_unit) != (reference.num_patches, reference.mask_unit):
        raise ParameterError("reference", "a model with the same token grid and mask_unit as model", reference)
    out = {"loss": 0.0, "reference_loss": 0.0, "patch_mean_loss": 0.0}
    modes = (model.training, reference.training)
    model.eval()
    reference.eval()
    gm, gr = (torch.Generator().manual_seed(int(seed)) for _ in range(2))
    dev = next(model.parameters()).device
    try:
        for s in range(0, images.shape[0], batch_size):
            x = images[s : s + batch_size].to(dev)
            a = model(x, mask_ratio=mask_ratio, generator=gm)
            b = reference.to(dev)(x, mask_ratio=mask_ratio, generator=gr)
            zero = model.reconstruction_loss(torch.zeros_like(a["pred"]), a["target"], a["mask"])
            for k, v in (("loss", a["loss_rec"]), ("reference_loss", b["loss_rec"]), ("patch_mean_loss", zero)):
                out[k] += float(v) * x.shape[0]
    finally:
        model.train(modes[0])
        reference.train(modes[1])
    return {k: v / images.shape[0] for k, v in out.items()}


def score_model(
    model,
    reference,
    images: torch.Tensor,
    mask_ratio: float,
    *,
    seed: int = 0,
    fsim: bool = True,
    caps: DryRunLimits | None = None,
) -> dict[str, float]:
    """One row of ``kong_reconstruction``: ``SCORES`` of the unmasked protocol (plain keys), of the masked
    panel at ``mask_ratio`` (keys ``masked_<score>`` and ``masked_mse_masked``) and :func:`masked_patch_losses`
    against ``reference`` (random init). Masks are drawn from CPU generators seeded with ``seed``. A dry run
    (``caps``: its :class:`maelab.options.DryRunLimits`) scores the first ``eval_images`` images."""
    images = images[: cap(images.shape[0], caps, "eval_images")]
    row: dict[str, float] = {}
    s = reconstruction_scores(model, images, 0.0, fsim=fsim)
    row.update({k: float(s[k]) for k in (*SCORES, "mse") if k in s})
    m = reconstruction_scores(model, images, mask_ratio, fsim=fsim, generator=torch.Generator().manual_seed(seed))
    row.update({f"masked_{k}": float(m[k]) for k in (*SCORES, "mse", "mse_masked") if k in m})
    row.update(masked_patch_losses(model, reference, images, mask_ratio, seed=seed))
    return row
