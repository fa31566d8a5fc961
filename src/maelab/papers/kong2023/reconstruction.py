"""Fig. 5 of Kong et al.: structural (SSIM, FSIM) and pixel (PSNR, -MSE) similarity of MAE reconstructions.

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
"""

from __future__ import annotations

from typing import Any

import torch

from ... import metrics
from ..._validate import ParameterError, in_range, positive_int

__all__ = ["DATA_RANGE", "reconstruct", "reconstruction_scores"]

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
