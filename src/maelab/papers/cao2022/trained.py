"""Trained micro MAEs for Cao, Xu & Clifton (2022): softmax vs unnormalised attention vs a scaled skip, and Fig. 3.

One run (:func:`run_variant`) pre-trains one MAE (:func:`maelab.experiments.pretrain`, the official recipe scaled
down; the checkpoint is cached by ``spec.key``) and measures, on the same test images and the same masks for every
variant and seed:

* **learning and stability**: the masked-patch reconstruction loss of the untrained model and of the weights after
  every epoch on ``n_loss`` test images (fixed mask seed), the training loss per epoch, whether training diverged
  (:class:`maelab.train.loop.NonFiniteLossError`: the trainer stops at the first non-finite loss) and the
  logistic-regression probe on the [CLS] features of the trained and of the untrained encoder;
* **Fig. 3 / Thm. 5.1 on real models** (:mod:`.decoder`): per-layer decoder read-outs with PSNR / SSIM, the
  relative change per encoder and decoder block, a few read-out images;
* **Lemma 6.1 / Prop. 6.2**: first-decoder-block attention of masked tokens (:func:`.decoder.decoder_attention`).

Small pure summaries used by the claims (:func:`intermediate_gain`, :func:`max_change`, :func:`diverged_at`) are
separate so they can be tested on hand-made arrays.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import torch

from maelab import data, evaluate, experiments, models, result_keys
from maelab._util import resolve_device
from maelab._validate import ParameterError, positive_int
from maelab.options import DryRunLimits
from maelab.train.loop import NonFiniteLossError

from . import decoder

#: The variants, whose model options come on top of the shared recipe, are the official softmax attention, the
#: same kernel without the row normalisation, and the attention residual scaled, x <- beta x + attn(norm1(x)).
VARIANT_NAMES = ("softmax", "exp", "skip")


def variant_overrides(variant: str, kernel: str = "exp", skip_scale: float = 0.5) -> dict[str, Any]:
    """Model overrides of ``variant``: ``{}`` (softmax, the official block), ``{"attn_norm": kernel}`` or
    ``{"skip_scale": skip_scale}``."""
    if variant == "softmax":
        return {}
    if variant == "exp":
        return {"attn_norm": kernel}
    if variant == "skip":
        return {"skip_scale": float(skip_scale)}
    raise ParameterError("variant", "one of " + ", ".join(map(repr, VARIANT_NAMES)), variant)


def spec_for(S, variant: str, seed: int) -> experiments.PretrainSpec:
    """The pre-training run of ``variant`` and ``seed`` under the ``cao_decoder`` settings ``S``: a micro MAE on
    28 px grey images with ``S.patch_size``, ``S.depth`` / ``S.decoder_depth`` blocks, the official-code model
    choices (``maelab.result_keys.OFFICIAL_CHOICES``) and :func:`variant_overrides`; weights kept after every epoch."""
    over = {
        "patch_size": S.patch_size,
        "depth": S.depth,
        "decoder_depth": S.decoder_depth,
        **result_keys.OFFICIAL_CHOICES,
        **variant_overrides(variant, S.kernel, S.skip_scale),
    }
    return experiments.PretrainSpec(
        dataset=S.dataset,
        n_train=S.n_train,
        n_test=S.n_test,
        img_size=28,
        channels=1,
        model="mae",
        size="micro",
        model_overrides=tuple(sorted(over.items())),
        epochs=S.epochs,
        batch_size=S.batch_size,
        blr=S.blr,
        warmup_epochs=S.warmup_epochs,
        mask_ratio=S.mask_ratio,
        seed=int(seed),
        snapshot_epochs=tuple(range(S.epochs + 1)),
    )


def diverged_at(message: str) -> int | None:
    """The 1-based epoch named in a ``NonFiniteLossError`` message ("... at epoch E/N, ..."); None if absent."""
    m = re.search(r"at epoch (\d+)/", message or "")
    return int(m.group(1)) if m else None


def intermediate_gain(psnr: np.ndarray) -> np.ndarray:
    """Per image (columns of ``psnr`` (T, N), rows: decoder input, block 1, ..., block T - 1 = the prediction):
    the PSNR of the *worst* intermediate read-out (blocks 1 .. T - 2) minus that of the decoder input (row 0).
    Needs T >= 3 (at least one intermediate block)."""
    psnr = np.asarray(psnr, dtype=float)
    if psnr.ndim != 2 or psnr.shape[0] < 3:
        raise ParameterError("psnr", "an array (T >= 3 read-outs, N images): a decoder of depth >= 2", psnr.shape)
    return psnr[1:-1].min(axis=0) - psnr[0]


def max_change(*parts: np.ndarray) -> np.ndarray:
    """Per image: the largest relative change over the layers of all ``parts`` (each (layers, N))."""
    if not parts:
        raise ParameterError("parts", "at least one (layers, N) array", 0)
    return np.concatenate([np.asarray(p, dtype=float) for p in parts], axis=0).max(axis=0)


@torch.no_grad()
def mean_predictor_loss(model, images: torch.Tensor) -> float:
    """The model's reconstruction loss for the prediction 0 of every patch, averaged over all patches of ``images``
    (the expectation over random masks): with ``norm_pix_loss`` 0 is each patch's own mean, so this is the loss of a
    decoder that knows every patch's mean and nothing of its structure -- a reference a model that learned must
    beat (random init can be far above it, so a drop from init alone proves little)."""
    t = model.target(images)
    return float(model.reconstruction_loss(torch.zeros_like(t), t, torch.ones(t.shape[:2], device=t.device)))


def _loss_curve(spec, snapshots: Mapping[int, dict], model, images, n_loss: int, caps=None) -> list[float]:
    x = images[:n_loss]
    return experiments.evaluate_snapshots(
        spec,
        model,
        snapshots,
        sorted(snapshots),
        lambda m: experiments.reconstruction_loss(m, x, spec.mask_ratio, seed=0, caps=caps),
        reseed=False,
    )


def _probe(model, tr, te, n_probe: int, seed: int, caps: DryRunLimits | None = None) -> float:
    ftr = evaluate.extract_features(model, tr.images[:n_probe], pool="cls", progress=False, caps=caps)
    fte = evaluate.extract_features(model, te.images, pool="cls", progress=False, caps=caps)
    lp = evaluate.linear_probe(ftr, tr.labels[:n_probe], fte, te.labels, method="logreg_torch", seed=seed, caps=caps)
    return float(lp.test_acc)


def _analyses(model, images: torch.Tensor, mask_seed: int, n_examples: int) -> dict[str, Any]:
    """Fig. 3 read-outs, layer changes and first-block attention on ``images``, each with the same masks."""
    gen = lambda: torch.Generator(device="cpu").manual_seed(mask_seed)  # noqa: E731
    model = model.cpu().eval()
    ro = decoder.layer_readouts(model, images, generator=gen())
    met = decoder.readout_metrics(ro["readouts"], images, ro["mask"])
    ch = decoder.layer_changes(model, images, readouts=ro)  # the same masks: no second forward pass
    at = decoder.decoder_attention(model, images, generator=gen())
    n = images.shape[0]
    rows = [
        {"layer": t, "image": i, **{k: float(met[k][t, i]) for k in met}}
        for t in range(met["psnr"].shape[0])
        for i in range(n)
    ]
    changes = [
        {"part": part, "block": b + 1, "image": i, "change": float(ch[part][b, i])}
        for part in ("encoder", "decoder")
        for b in range(ch[part].shape[0])
        for i in range(n)
    ]
    attn = pd.DataFrame({k: at[k].numpy() for k in ("visible", "masked", "cls", "far_fraction", "r2")})
    attn.insert(0, "image", np.arange(n))
    k = min(n_examples, n)
    return {
        "readout": pd.DataFrame(rows),
        "changes": pd.DataFrame(changes),
        "attention": attn,
        "by_distance": at["by_distance"].numpy(),
        "r2_chance": float(at["r2_chance"]),
        "examples": ro["readouts"][:, :k].float().numpy(),
        "example_mask": ro["mask"][:k].float().numpy(),
        "example_images": images[:k].float().numpy(),
    }


def run_variant(
    spec: experiments.PretrainSpec,
    *,
    n_loss: int,
    n_eval: int,
    n_probe: int,
    n_examples: int = 4,
    mask_seed: int = 0,
    device: str = "cpu",
    progress: bool | None = None,
    caps: DryRunLimits | None = None,
) -> dict[str, Any]:
    """Pre-train ``spec`` (weights kept after every epoch) and measure it; a store-ready dict (``caps``: a dry
    run's, to the training, the losses and the probes).

    ``summary`` (JSON): ``init_loss`` / ``final_loss`` (test reconstruction loss of the untrained / trained model on
    ``n_loss`` test images, mask seed 0), ``probe_acc`` / ``init_probe_acc`` (logistic-regression probe on the
    [CLS] features, ``n_probe`` training images, all test images), ``diverged`` ("" or the trainer's message),
    ``diverged_epoch``, ``train_seconds``, ``r2_chance``. Frames: ``curve`` (epoch, test loss; epoch 0 = init),
    ``history`` (the trainer's per-epoch records), ``readout``, ``changes``, ``attention`` (per image of the
    ``n_eval`` analysis images, see ``_analyses``); arrays: ``by_distance`` and example read-outs. A diverged
    run has only ``summary`` and the init point of ``curve`` (nothing trained to analyse).
    """
    for name, v in (("n_loss", n_loss), ("n_eval", n_eval), ("n_probe", n_probe)):
        positive_int(name, v)
    dev = resolve_device(device)
    if set(spec.snapshot_epochs) != set(range(spec.epochs + 1)):
        raise ParameterError(
            "spec.snapshot_epochs", f"every epoch 0..{spec.epochs} (the loss curve)", spec.snapshot_epochs
        )
    tr, te = experiments.load_data(spec, dev, progress)
    init = experiments.build_model(spec).to(dev)
    init_loss = experiments.reconstruction_loss(init, te.images[:n_loss], spec.mask_ratio, seed=0, caps=caps)
    init_probe = _probe(init, tr, te, n_probe, spec.seed, caps)
    t0 = time.perf_counter()
    try:
        model, res, _, _ = experiments.pretrain(
            spec, device=str(dev), progress=progress, train_data=tr, test_data=te, caps=caps
        )
    except NonFiniteLossError as exc:
        msg = str(exc).splitlines()[0]
        summary = {
            "init_loss": init_loss,
            "final_loss": float("nan"),
            "probe_acc": float("nan"),
            "init_probe_acc": init_probe,
            "diverged": msg,
            "diverged_epoch": diverged_at(msg),
            "train_seconds": time.perf_counter() - t0,
            "r2_chance": float("nan"),
        }
        return {"summary": summary, "curve": pd.DataFrame({"epoch": [0], "test_loss": [init_loss]})}
    train_s = time.perf_counter() - t0
    losses = _loss_curve(spec, res.snapshots, model, te.images, n_loss, caps)
    out = _analyses(model, te.images[:n_eval].cpu(), mask_seed, n_examples)
    summary = {
        "init_loss": init_loss,
        "final_loss": float(losses[-1]),
        "probe_acc": _probe(model.to(dev), tr, te, n_probe, spec.seed, caps),
        "init_probe_acc": init_probe,
        "diverged": "",
        "diverged_epoch": None,
        "train_seconds": train_s,
        "r2_chance": out.pop("r2_chance"),
    }
    hist = pd.DataFrame([{k: v for k, v in h.items() if isinstance(v, (int, float)) or v is None} for h in res.history])
    curve = pd.DataFrame({"epoch": sorted(res.snapshots), "test_loss": [float(x) for x in losses]})
    return {"summary": summary, "curve": curve, "history": hist, **out}


def checkpoint_readouts(
    path, images: torch.Tensor, *, size: str = "vit_base", mask_seed: int = 0, **overrides: Any
) -> dict[str, Any]:
    """Fig. 3 on an official MAE checkpoint (e.g. ``mae_visualize_vit_base.pth``): build
    ``models.create("mae", size, norm_pix_loss=False, **overrides)`` (the visualisation weights predict pixels),
    load the file with :func:`maelab.models.load_official_checkpoint` (weights only, strict) and return its per-layer
    read-outs of ``images`` (N, 3, H, W in [0, 1]; masks drawn with ``mask_seed``): the ``readout``, ``changes`` and
    ``attention`` frames of :func:`run_variant` and every image's read-outs in ``examples`` (with ``example_mask``,
    ``example_images``). Nothing is stored: the weights are the user's file."""
    model = models.create("mae", size, norm_pix_loss=False, **overrides)
    models.load_official_checkpoint(model, path)
    images = images.float().cpu()
    if images.shape[1:] != (model.in_chans, model.img_size, model.img_size):
        raise ParameterError(
            "images", f"(N, {model.in_chans}, {model.img_size}, {model.img_size}) for this model", tuple(images.shape)
        )
    return _analyses(model, images, mask_seed, images.shape[0])


#: The checkpoint section crops the bundled test photos at full size (scale 1.0). The ``natural`` dataset's default half
#: scale leaves at most 152 px (its smallest test photo, coins, is 303 x 384), less than the ViT-B's 224.
CHECKPOINT_PHOTO_SCALE = 1.0


def checkpoint_photos(n: int, size: int, seed: int) -> torch.Tensor:
    """``n`` colour crops of ``size`` x ``size`` (at most 303) from the bundled test photos at full size (see
    :data:`CHECKPOINT_PHOTO_SCALE`): what :func:`checkpoint_section` reads out, (n, 3, size, size) in [0, 1]."""
    return data.load(
        "natural", "test", n=n, size=size, channels=3, scale=CHECKPOINT_PHOTO_SCALE, seed=seed, progress=False
    ).images


def checkpoint_section(S, seed: int) -> dict[str, Any]:
    """The ``cao_decoder`` page's official-checkpoint section under its settings ``S``: :func:`checkpoint_readouts`
    of the ViT-B file ``S.checkpoint`` on ``S.n_photos`` crops of ``S.photo_size`` (:func:`checkpoint_photos`,
    drawn and masked with ``seed``). Nothing is stored."""
    if S.checkpoint is None:
        raise ParameterError("checkpoint", "the path of an official ViT-B checkpoint", None)
    photos = checkpoint_photos(S.n_photos, S.photo_size, seed)
    return checkpoint_readouts(S.checkpoint, photos, size="vit_base", mask_seed=seed)


__all__ = [
    "VARIANT_NAMES",
    "CHECKPOINT_PHOTO_SCALE",
    "checkpoint_photos",
    "checkpoint_readouts",
    "checkpoint_section",
    "diverged_at",
    "intermediate_gain",
    "max_change",
    "mean_predictor_loss",
    "run_variant",
    "spec_for",
    "variant_overrides",
]
