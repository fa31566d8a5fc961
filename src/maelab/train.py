"""One trainer for every self-supervised variant (MAE, U-MAE, SimMIM, U-SimMIM), supervised fine-tuning, DDP.

What it does, following the official MAE recipe (facebookresearch/mae ``main_pretrain.py``, ``engine_pretrain.py``,
``util/lr_sched.py``) and U-MAE's online classifier (zhangq327/U-MAE ``engine_pretrain.py``):

* **Optimiser.** AdamW, betas (0.9, 0.95), weight decay 0.05 applied to weight matrices only: no decay on biases,
  1-d parameters (norms) and on ``*pos_embed``, ``*cls_token``, ``*mask_token`` (plus whatever the model lists in
  ``no_weight_decay()``). Grouping is timm's ``param_groups_weight_decay``. (The official pre-training script passes
  no skip list, so its 3-d cls/mask tokens *are* decayed; we follow timm's convention for ViTs instead.)
* **Learning rate.** ``lr = blr * effective_batch / 256`` with ``effective_batch = batch_size * world_size`` (as the
  official code: ``batch_size`` is *per process*), set every iteration from the fractional epoch
  ``epoch + it / iters`` by linear warm-up then a half-cycle cosine to ``min_lr`` (:func:`lr_at`).
* **Mixed precision.** ``amp="auto"`` is bf16 autocast on CUDA and off on CPU; ``"bf16"`` forces it, ``"fp16"``
  (CUDA only) adds a ``GradScaler``; ``"off"`` is float32. Fused attention is the model's business (timm blocks use
  ``scaled_dot_product_attention``).
* **Data.** The whole dataset lives on the training device as one tensor (the book's datasets are small). Each
  epoch's order is ``torch.randperm`` from a CPU generator seeded by ``(seed, epoch)`` only (a ``SeedSequence``
  hash), so the data order is a pure function of the seed and the epoch: identical on CPU and GPU, for any world
  size, and trivially restored on resume. Incomplete last batches are dropped (as ``drop_last=True``). Optional
  augmentation (random resized crop + horizontal flip on tensors, :func:`random_resized_crop_flip`) is off by
  default, as in U-MAE's CIFAR runs.
* **Randomness.** Masks come from a dedicated generator on the device, passed to ``model(imgs, generator=...)``;
  augmentation parameters from a dedicated CPU generator; python/numpy/torch global generators are seeded per rank
  (for dropout and the like). Seeds are derived from ``(config.seed, purpose, rank)`` by ``numpy.random.SeedSequence``
  so streams never collide. Same seed -> same numbers on CPU.
* **Online linear probe** (U-MAE's monitor). A ``Linear`` head (optionally after ``BatchNorm1d(affine=False)``) is
  trained on ``out["features"].detach()`` with cross-entropy, with its *own* AdamW whose hyper-parameters and
  schedule equal the model's (U-MAE trains the same head inside the model's optimizer; AdamW is per-parameter, so
  this is the same update), ``probe_blr`` overrides the peak rate. The head never touches the model's gradients,
  and it is initialised inside ``torch.random.fork_rng``, so switching the probe on or off leaves the model's
  trajectory bit-for-bit unchanged. Test accuracy is the head applied to ``model.forward_features`` (unmasked
  image) in eval mode.
* **Checkpoints** (``checkpoint_dir/last.pt``): model, optimiser, grad scaler, probe head and its optimiser, the
  RNG states of every rank (torch CPU and CUDA, python, numpy, mask and augmentation generators), epoch, iteration,
  history, partial-epoch accumulators and snapshots. Written by rank 0 through :func:`maelab._util.atomic_path`
  (never half-written), loaded with ``torch.load(weights_only=True)`` (everything is stored as tensors or plain
  python types). Resume is **exact**: on CPU a run killed (between or inside epochs, with
  ``checkpoint_every_iters``) and resumed in a fresh process ends with bit-identical weights and history (apart from
  timings) to an uninterrupted run. Resuming checks that the stored configuration and a fingerprint of the data
  agree with the current ones; a finished run resumes instantly (the book's cache).
* **Distributed.** When ``torch.distributed`` is initialised (e.g. by ``torchrun``; ``python -m maelab.train``
  initialises it from the environment) the model and the probe head are wrapped in ``DistributedDataParallel``, each
  global batch of ``batch_size * world_size`` indices of the shared permutation is split into contiguous per-rank
  slices, logged metrics are all-reduced (the loss every step, so a non-finite loss stops every rank together), and
  only rank 0 writes checkpoints and shows progress. With a deterministic model whose loss is a per-sample mean, a
  2-rank run equals a single-process run with the doubled batch up to float rounding (tested). Loss terms that
  couple samples are computed by the model on its rank's batch: U-MAE's uniformity term therefore sees
  ``batch_size`` features per rank, whereas the official U-MAE code all-gathers features across GPUs first.
* **Failures.** A non-finite loss raises :class:`NonFiniteLossError` naming epoch, iteration and the loss terms
  before the optimiser step, so no NaN weights are written. Bad arguments raise
  :class:`maelab.ParameterError`.

Conventions: images are float32 (N, C, H, W) in [0, 1] as delivered by :func:`maelab.data.load`; models follow the
shared interface (``model(imgs, mask_ratio=None, generator=None) -> dict`` with ``loss``, ``loss_rec``,
``loss_unif``, ``features``; ``forward_features(imgs, pool)``). History epochs count *completed* epochs (1..E);
epoch 0 denotes the initial model (for ``snapshot_epochs`` and callbacks).
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import dataclasses
import json
import math
import os
import random
import re
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ._util import atomic_path, pbar, resolve_device, seed_everything
from ._validate import ParameterError, in_range, is_bool, one_of, positive_int

__all__ = [
    "TrainConfig", "TrainResult", "train", "FineTuneConfig", "FineTuneResult", "fine_tune",
    "NonFiniteLossError", "lr_at", "param_groups", "random_resized_crop_flip", "default_checkpoint_dir",
    "load_checkpoint", "is_main_process", "main",
]

CHECKPOINT_FORMAT = "maelab.train/1"
NO_DECAY_PATTERNS = ("*pos_embed", "*cls_token", "*mask_token", "*dist_token", "*reg_token")
AMP_CHOICES = ("auto", "bf16", "fp16", "off")

# purposes for derived seeds (never reuse a number)
_DATA, _MASK, _AUG, _GLOBAL, _PROBE, _HEAD = range(6)


class NonFiniteLossError(FloatingPointError):
    """The training loss became NaN or infinite; the message names epoch, iteration and the loss terms."""


# ----------------------------------------------------------------------------------------------------------------
# configuration
# ----------------------------------------------------------------------------------------------------------------

def _pair(name: str, value: Any, low: float | None = None, high: float | None = None) -> tuple[float, float]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ParameterError(name, "a pair (a, b) with a <= b", value)
    a = in_range(name, value[0], low, high)
    b = in_range(name, value[1], low, high)
    if a > b:
        raise ParameterError(name, "a pair (a, b) with a <= b", value)
    return (a, b)


def _opt_positive(name: str, value: Any) -> float | None:
    if value is None:
        return None
    return in_range(name, value, 0.0, None, low_open=True)


def _check_common(cfg) -> None:
    positive_int("epochs", cfg.epochs)
    positive_int("batch_size", cfg.batch_size)
    in_range("blr", cfg.blr, 0.0, None, low_open=True)
    _opt_positive("lr", cfg.lr)
    in_range("min_lr", cfg.min_lr, 0.0, None)
    in_range("warmup_epochs", cfg.warmup_epochs, 0.0, float(cfg.epochs))
    in_range("weight_decay", cfg.weight_decay, 0.0, None)
    b = _pair("betas", cfg.betas, 0.0, 1.0)
    if b[1] >= 1.0:
        raise ParameterError("betas", "a pair (beta1, beta2) in [0, 1)", cfg.betas)
    cfg.betas = b
    _opt_positive("clip_grad", cfg.clip_grad)
    one_of("amp", cfg.amp, AMP_CHOICES)
    if isinstance(cfg.seed, bool) or not isinstance(cfg.seed, int) or cfg.seed < 0:
        raise ParameterError("seed", "an integer >= 0", cfg.seed)
    is_bool("augment", cfg.augment)
    cfg.crop_scale = _pair("crop_scale", cfg.crop_scale, 0.0, 1.0)
    if cfg.crop_scale[0] <= 0:
        raise ParameterError("crop_scale", "a pair (a, b) with 0 < a <= b <= 1", cfg.crop_scale)
    cfg.crop_ratio = _pair("crop_ratio", cfg.crop_ratio, 0.0, None)
    if cfg.crop_ratio[0] <= 0:
        raise ParameterError("crop_ratio", "a pair (a, b) with 0 < a <= b", cfg.crop_ratio)
    is_bool("hflip", cfg.hflip)
    positive_int("eval_every", cfg.eval_every)
    positive_int("eval_batch_size", cfg.eval_batch_size)


@dataclass
class TrainConfig:
    """Self-supervised pre-training configuration (defaults: official MAE recipe, scaled to small runs).

    Attributes:
        epochs: number of epochs.
        batch_size: images per process and step; the effective batch is ``batch_size * world_size``.
        blr: base learning rate; the peak rate is ``blr * effective_batch / 256`` unless ``lr`` is given.
        lr: absolute peak learning rate (overrides ``blr``).
        min_lr: floor of the half-cycle cosine.
        warmup_epochs: linear warm-up length in epochs (fractional allowed), ``0 <= warmup_epochs <= epochs``.
        weight_decay, betas: AdamW; see the module docstring for the no-decay groups.
        clip_grad: max gradient norm, or None (no clipping, the official default).
        amp: "auto" (bf16 autocast on CUDA, off on CPU), "bf16", "fp16" (CUDA only, with a GradScaler), "off".
        mask_ratio: passed to the model on every step; None = the model's own ``mask_ratio``.
        seed: integer >= 0; fixes data order, masks, augmentation, probe init and global generators.
        augment, crop_scale, crop_ratio, hflip: random resized crop (+ flip) on tensors, off by default.
        online_probe: True / False / None (= on exactly when the data has labels).
        probe_bn: put ``BatchNorm1d(affine=False)`` before the probe's Linear.
        probe_blr: base lr of the probe (None = ``blr``); same schedule and AdamW settings as the model.
        probe_pool: pooling passed to ``forward_features`` when evaluating the probe on ``eval_data``.
        eval_every: evaluate the probe on ``eval_data`` every k epochs (and after the last).
        eval_batch_size: batch size (per process) for evaluation.
        checkpoint_every: write ``last.pt`` every k epochs (and after the last) when a folder is given.
        checkpoint_every_iters: also write it every k optimiser steps inside epochs (None = off).
        snapshot_epochs: completed-epoch counts (0 = initial weights) whose model state dicts (CPU copies) are
            returned in ``TrainResult.snapshots`` and kept in the checkpoint.
        find_unused_parameters: forwarded to DistributedDataParallel.
    """

    epochs: int = 100
    batch_size: int = 256
    blr: float = 1.5e-4
    lr: float | None = None
    min_lr: float = 0.0
    warmup_epochs: float = 10
    weight_decay: float = 0.05
    betas: tuple[float, float] = (0.9, 0.95)
    clip_grad: float | None = None
    amp: str = "auto"
    mask_ratio: float | None = None
    seed: int = 0
    augment: bool = False
    crop_scale: tuple[float, float] = (0.2, 1.0)
    crop_ratio: tuple[float, float] = (3 / 4, 4 / 3)
    hflip: bool = True
    online_probe: bool | None = None
    probe_bn: bool = False
    probe_blr: float | None = None
    probe_pool: str = "cls"
    eval_every: int = 1
    eval_batch_size: int = 512
    checkpoint_every: int = 1
    checkpoint_every_iters: int | None = None
    snapshot_epochs: tuple[int, ...] = ()
    find_unused_parameters: bool = False

    # fields that do not change the training trajectory (may differ between a checkpoint and a resumed run)
    _BOOKKEEPING = ("eval_every", "eval_batch_size", "checkpoint_every", "checkpoint_every_iters", "snapshot_epochs")

    def __post_init__(self):
        _check_common(self)
        if self.mask_ratio is not None:
            in_range("mask_ratio", self.mask_ratio, 0.0, 1.0, high_open=True)
        if self.online_probe is not None:
            is_bool("online_probe", self.online_probe)
        is_bool("probe_bn", self.probe_bn)
        _opt_positive("probe_blr", self.probe_blr)
        one_of("probe_pool", self.probe_pool, ("cls", "mean"))
        positive_int("checkpoint_every", self.checkpoint_every)
        if self.checkpoint_every_iters is not None:
            positive_int("checkpoint_every_iters", self.checkpoint_every_iters)
        snaps = self.snapshot_epochs
        if not isinstance(snaps, (tuple, list, set, frozenset)):
            raise ParameterError("snapshot_epochs", "a collection of integers in [0, epochs]", snaps)
        for e in snaps:
            if isinstance(e, bool) or not isinstance(e, int) or not 0 <= e <= self.epochs:
                raise ParameterError("snapshot_epochs", f"a collection of integers in [0, epochs={self.epochs}]", snaps)
        self.snapshot_epochs = tuple(sorted(set(snaps)))
        is_bool("find_unused_parameters", self.find_unused_parameters)

    def to_dict(self) -> dict:
        """Plain-python view (tuples, numbers, strings, None) suitable for JSON and ``weights_only`` checkpoints."""
        return dataclasses.asdict(self)

    def peak_lr(self, world_size: int = 1) -> float:
        """``lr`` if given, else ``blr * batch_size * world_size / 256``."""
        return self.lr if self.lr is not None else self.blr * self.batch_size * world_size / 256


@dataclass
class FineTuneConfig:
    """End-to-end supervised fine-tuning (encoder + linear head on ``forward_features``).

    Defaults follow the official ``main_finetune.py`` where they are meaningful for small runs: AdamW betas
    (0.9, 0.999), weight decay 0.05, ``blr`` 1e-3, ``min_lr`` 1e-6, layer-wise lr decay 0.75, head initialised with
    std 2e-5. Mixup/CutMix, RandAugment, drop-path and EMA are deliberately not part of this simple baseline; label
    smoothing is available (official: 0.1) but off by default.

    Attributes mirror :class:`TrainConfig`; in addition ``layer_decay`` (None or 1.0 = off) scales block ``i``'s lr
    by ``layer_decay ** (num_layers - layer_id)`` with the official layer ids (embeddings 0, ``blocks.i`` i+1,
    everything else on top), ``label_smoothing`` in [0, 1), ``pool`` ("cls"/"mean") for ``forward_features``.
    """

    epochs: int = 50
    batch_size: int = 128
    blr: float = 1e-3
    lr: float | None = None
    min_lr: float = 1e-6
    warmup_epochs: float = 5
    weight_decay: float = 0.05
    betas: tuple[float, float] = (0.9, 0.999)
    layer_decay: float | None = 0.75
    label_smoothing: float = 0.0
    clip_grad: float | None = None
    amp: str = "auto"
    pool: str = "cls"
    seed: int = 0
    augment: bool = False
    crop_scale: tuple[float, float] = (0.2, 1.0)
    crop_ratio: tuple[float, float] = (3 / 4, 4 / 3)
    hflip: bool = True
    eval_every: int = 1
    eval_batch_size: int = 512
    head_init_std: float = 2e-5

    def __post_init__(self):
        _check_common(self)
        if self.layer_decay is not None:
            in_range("layer_decay", self.layer_decay, 0.0, 1.0, low_open=True)
        in_range("label_smoothing", self.label_smoothing, 0.0, 1.0, high_open=True)
        one_of("pool", self.pool, ("cls", "mean"))
        in_range("head_init_std", self.head_init_std, 0.0, None, low_open=True)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def peak_lr(self, world_size: int = 1) -> float:
        return self.lr if self.lr is not None else self.blr * self.batch_size * world_size / 256


# ----------------------------------------------------------------------------------------------------------------
# schedule, parameter groups, seeds
# ----------------------------------------------------------------------------------------------------------------

def lr_at(epoch: float, *, lr: float, min_lr: float, warmup_epochs: float, epochs: float) -> float:
    """Official MAE schedule at a fractional epoch: ``lr * epoch / warmup`` during warm-up, then
    ``min_lr + (lr - min_lr) * (1 + cos(pi * (epoch - warmup) / (epochs - warmup))) / 2``."""
    if epoch < warmup_epochs:
        return lr * epoch / warmup_epochs
    if epochs <= warmup_epochs:
        return lr
    t = (epoch - warmup_epochs) / (epochs - warmup_epochs)
    return min_lr + (lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * t))


def _no_decay_patterns(model: nn.Module, extra: Iterable[str] = ()) -> list[str]:
    pats = list(NO_DECAY_PATTERNS) + list(extra)
    nwd = getattr(model, "no_weight_decay", None)
    if callable(nwd):
        for name in nwd():
            pats += [name, f"*.{name}"]
    return pats


def _layer_id(name: str, num_layers: int) -> int:
    """Official MAE fine-tuning layer ids (``util/lr_decay.py``): embeddings 0, ``blocks.i`` -> i + 1, rest top."""
    m = re.search(r"(?:^|\.)blocks\.(\d+)\.", name)
    if m:
        return int(m.group(1)) + 1
    leaf = name.split(".")[-1]
    if leaf in ("cls_token", "pos_embed", "mask_token", "dist_token", "reg_token") or "patch_embed" in name:
        return 0
    return num_layers


def param_groups(model: nn.Module, weight_decay: float, *, layer_decay: float | None = None,
                 no_weight_decay: Iterable[str] = ()) -> list[dict]:
    """AdamW parameter groups: no decay on biases, 1-d parameters and ``NO_DECAY_PATTERNS`` (fnmatch on names).

    Without ``layer_decay`` this is timm's ``param_groups_weight_decay``. With it, every group also carries
    ``lr_scale = layer_decay ** (num_layers - layer_id)`` (official ``param_groups_lrd``; ``num_layers`` = number of
    ``blocks.i`` + 1), which :func:`train`/:func:`fine_tune` multiply into the scheduled lr. Frozen parameters
    (``requires_grad=False``) are left out.
    """
    from timm.optim import param_groups_weight_decay

    pats = _no_decay_patterns(model, no_weight_decay)
    if layer_decay is None or layer_decay == 1.0:
        return param_groups_weight_decay(model, weight_decay, no_weight_decay_list=pats)
    import fnmatch

    idx = [int(m.group(1)) for n, _ in model.named_parameters() if (m := re.search(r"(?:^|\.)blocks\.(\d+)\.", n))]
    num_layers = (max(idx) + 1 if idx else 0) + 1
    groups: dict[tuple[int, bool], dict] = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        no_wd = p.ndim <= 1 or name.endswith(".bias") or any(fnmatch.fnmatch(name, q) for q in pats)
        lid = _layer_id(name, num_layers)
        key = (lid, no_wd)
        if key not in groups:
            groups[key] = {"params": [], "weight_decay": 0.0 if no_wd else weight_decay,
                           "lr_scale": layer_decay ** (num_layers - lid), "layer_id": lid}
        groups[key]["params"].append(p)
    return [groups[k] for k in sorted(groups)]


def _derive_seed(*keys: int) -> int:
    """A well-mixed 63-bit seed from non-negative integer keys (numpy SeedSequence)."""
    state = np.random.SeedSequence([int(k) for k in keys]).generate_state(2, dtype=np.uint32)
    return (int(state[0]) << 32 | int(state[1])) & (2**63 - 1)


def _epoch_permutation(seed: int, epoch: int, n: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(_derive_seed(seed, _DATA, epoch))
    return torch.randperm(n, generator=g)


# ----------------------------------------------------------------------------------------------------------------
# augmentation
# ----------------------------------------------------------------------------------------------------------------

def _sample_crop_boxes(n: int, height: int, width: int, scale: Sequence[float], ratio: Sequence[float],
                       generator: torch.Generator | None, attempts: int = 10):
    """torchvision ``RandomResizedCrop.get_params`` vectorised over a batch (10 attempts, centre-crop fallback).

    Returns int64 tensors (top, left, h, w) of shape (n,) on the CPU."""
    area = height * width
    s = torch.empty(n, attempts, dtype=torch.float64).uniform_(scale[0], scale[1], generator=generator)
    logr = torch.empty(n, attempts, dtype=torch.float64).uniform_(math.log(ratio[0]), math.log(ratio[1]),
                                                                  generator=generator)
    aspect = torch.exp(logr)
    w = torch.round(torch.sqrt(area * s * aspect)).long()
    h = torch.round(torch.sqrt(area * s / aspect)).long()
    ok = (w > 0) & (w <= width) & (h > 0) & (h <= height)
    first = ok.to(torch.int8).argmax(dim=1, keepdim=True)
    hh = h.gather(1, first).squeeze(1)
    ww = w.gather(1, first).squeeze(1)
    found = ok.any(dim=1)
    if not bool(found.all()):  # centre-crop fallback, exactly as torchvision
        in_ratio = width / height
        if in_ratio < min(ratio):
            fw, fh = width, int(round(width / min(ratio)))
        elif in_ratio > max(ratio):
            fh, fw = height, int(round(height * max(ratio)))
        else:
            fw, fh = width, height
        hh = torch.where(found, hh, torch.full_like(hh, fh))
        ww = torch.where(found, ww, torch.full_like(ww, fw))
    u = torch.rand(n, 2, dtype=torch.float64, generator=generator)
    top = torch.floor(u[:, 0] * (height - hh + 1)).long()
    left = torch.floor(u[:, 1] * (width - ww + 1)).long()
    top = torch.where(found, top, (height - hh) // 2)
    left = torch.where(found, left, (width - ww) // 2)
    return top, left, hh, ww


def _crop_resize(imgs: torch.Tensor, top, left, h, w, flip, size: tuple[int, int]) -> torch.Tensor:
    """Crop box (top, left, h, w) of every image, bilinear resize to ``size`` (``F.interpolate`` semantics,
    ``align_corners=False``, no antialias), then mirror where ``flip``; one ``grid_sample`` for the batch."""
    n, _, height, width = imgs.shape
    sh, sw = size
    dev = imgs.device
    top, left, h, w, flip = (t.to(dev) for t in (top, left, h, w, flip))
    hf, wf = h.to(torch.float64)[:, None], w.to(torch.float64)[:, None]
    oy = torch.arange(sh, device=dev, dtype=torch.float64)[None] + 0.5
    ox = torch.arange(sw, device=dev, dtype=torch.float64)[None] + 0.5
    # source index inside the crop as F.interpolate computes it (clamped to the crop's pixel centres)
    sy = torch.minimum((oy * hf / sh - 0.5).clamp(min=0.0), hf - 1)
    sx = torch.minimum((ox * wf / sw - 0.5).clamp(min=0.0), wf - 1)
    sx = torch.where(flip[:, None], sx.flip(1), sx)
    y = top.to(torch.float64)[:, None] + sy
    x = left.to(torch.float64)[:, None] + sx
    gy = (y + 0.5) * 2.0 / height - 1.0
    gx = (x + 0.5) * 2.0 / width - 1.0
    grid = torch.stack([gx[:, None, :].expand(n, sh, sw), gy[:, :, None].expand(n, sh, sw)], dim=-1)
    return F.grid_sample(imgs, grid.to(imgs.dtype), mode="bilinear", padding_mode="border", align_corners=False)


def random_resized_crop_flip(imgs: torch.Tensor, generator: torch.Generator | None = None, *,
                             scale: Sequence[float] = (0.2, 1.0), ratio: Sequence[float] = (3 / 4, 4 / 3),
                             hflip: bool = True, size: tuple[int, int] | None = None) -> torch.Tensor:
    """Batched ``RandomResizedCrop(size, scale, ratio)`` + ``RandomHorizontalFlip`` on a (N, C, H, W) tensor.

    Crop boxes follow torchvision's sampling (parameters drawn from ``generator``, a CPU generator); the resize is
    bilinear without antialias (the official MAE recipe uses bicubic on PIL images; crops of images already at the
    model's size only ever upsample, where antialias has no effect). Output size defaults to the input size.
    """
    n, _, height, width = imgs.shape
    top, left, h, w = _sample_crop_boxes(n, height, width, scale, ratio, generator)
    flip = (torch.rand(n, generator=generator) < 0.5) if hflip else torch.zeros(n, dtype=torch.bool)
    return _crop_resize(imgs, top, left, h, w, flip, size or (height, width))


# ----------------------------------------------------------------------------------------------------------------
# runtime: device, distributed, amp
# ----------------------------------------------------------------------------------------------------------------

def _dist_active() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def is_main_process() -> bool:
    """True unless ``torch.distributed`` is initialised and this is not rank 0."""
    return not _dist_active() or torch.distributed.get_rank() == 0


@dataclass
class _Runtime:
    device: torch.device
    rank: int
    world: int
    amp_dtype: torch.dtype | None

    @classmethod
    def create(cls, device: str | torch.device, amp: str) -> "_Runtime":
        rank, world = (torch.distributed.get_rank(), torch.distributed.get_world_size()) if _dist_active() else (0, 1)
        dev = device if isinstance(device, torch.device) else resolve_device(device)
        if dev.type == "cuda" and dev.index is None:
            local = int(os.environ.get("LOCAL_RANK", torch.cuda.current_device() if world == 1 else rank))
            dev = torch.device("cuda", local % max(torch.cuda.device_count(), 1))
        if amp == "auto":
            dtype = torch.bfloat16 if dev.type == "cuda" and torch.cuda.is_bf16_supported() else None
        elif amp == "bf16":
            dtype = torch.bfloat16
        elif amp == "fp16":
            if dev.type != "cuda":
                raise ParameterError("amp", "'auto', 'bf16' or 'off' on a CPU ('fp16' needs CUDA)", amp)
            dtype = torch.float16
        else:
            dtype = None
        return cls(dev, rank, world, dtype)

    def autocast(self):
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.amp_dtype)

    def all_reduce_sum(self, t: torch.Tensor) -> torch.Tensor:
        if self.world > 1:
            torch.distributed.all_reduce(t)
        return t

    def wrap(self, module: nn.Module, find_unused: bool = False) -> nn.Module:
        if self.world == 1:
            return module
        from torch.nn.parallel import DistributedDataParallel as DDP

        ids = [self.device.index] if self.device.type == "cuda" else None
        return DDP(module, device_ids=ids, find_unused_parameters=find_unused)


def _data_tensors(data, name: str, device: torch.device, need_labels: bool):
    images = getattr(data, "images", None)
    if not isinstance(images, torch.Tensor) or images.ndim != 4 or not images.is_floating_point():
        raise ParameterError(name, "a dataset whose .images is a float tensor (N, C, H, W)", type(data).__name__)
    labels = getattr(data, "labels", None)
    if labels is not None:
        if not isinstance(labels, torch.Tensor) or labels.shape != (images.shape[0],):
            raise ParameterError(f"{name}.labels", "None or an int64 tensor (N,)", getattr(labels, "shape", labels))
        labels = labels.to(device=device, dtype=torch.long)
    if need_labels and labels is None:
        raise ParameterError(f"{name}.labels", "present when the online probe / classifier is on "
                             "(or set online_probe=False)", None)
    return images.to(device, torch.float32), labels


def _num_classes(data, labels: torch.Tensor) -> int:
    k = getattr(data, "num_classes", None)
    if isinstance(k, int) and not isinstance(k, bool) and k > 0:
        return k
    return int(labels.max().item()) + 1


def _fingerprint(images: torch.Tensor) -> list[float]:
    """Cheap identity check of a dataset stored in checkpoints: shape plus sums of a strided subset."""
    step = max(1, images.shape[0] // 64)
    sub = images[::step].double()
    return [float(images.shape[0]), float(sub.sum()), float((sub * sub).sum())]


# ----------------------------------------------------------------------------------------------------------------
# RNG state <-> plain python/tensors (so torch.load(weights_only=True) can read it)
# ----------------------------------------------------------------------------------------------------------------

def _rng_state(mask_gen: torch.Generator, aug_gen: torch.Generator) -> dict:
    py = random.getstate()
    npst = np.random.get_state()
    return {
        "torch_cpu": torch.get_rng_state(),
        "torch_cuda": list(torch.cuda.get_rng_state_all()) if torch.cuda.is_available() else [],
        "python": [int(py[0]), [int(v) for v in py[1]], None if py[2] is None else float(py[2])],
        "numpy": [str(npst[0]), torch.from_numpy(npst[1].astype(np.int64)), int(npst[2]), int(npst[3]),
                  float(npst[4])],
        "mask": mask_gen.get_state(), "mask_device": str(mask_gen.device),
        "aug": aug_gen.get_state(),
    }


def _set_rng_state(st: dict, mask_gen: torch.Generator, aug_gen: torch.Generator) -> bool:
    """Restore; returns False (and leaves the generators seeded) if the mask generator's device differs."""
    torch.set_rng_state(st["torch_cpu"])
    if torch.cuda.is_available() and st["torch_cuda"] and len(st["torch_cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(st["torch_cuda"])
    v, ints, gauss = st["python"]
    random.setstate((v, tuple(ints), gauss))
    name, keys, pos, has_gauss, cached = st["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    aug_gen.set_state(st["aug"])
    if st["mask_device"] != str(mask_gen.device):
        return False
    mask_gen.set_state(st["mask"])
    return True


def load_checkpoint(path: str | os.PathLike) -> dict:
    """Read a maelab training checkpoint safely (``weights_only=True``; no code in the file can run)."""
    ck = torch.load(Path(path), map_location="cpu", weights_only=True)
    if not isinstance(ck, dict) or ck.get("format") != CHECKPOINT_FORMAT:
        raise ParameterError("checkpoint", f"a {CHECKPOINT_FORMAT} checkpoint", str(path))
    return ck


def default_checkpoint_dir(name: str) -> Path:
    """``$MAELAB_CACHE/checkpoints/<name>`` if ``MAELAB_CACHE`` is set, else ``<repo>/.cache/checkpoints/<name>``.

    ``<repo>`` is the source checkout holding ``pyproject.toml`` (editable install), else the current directory.
    The folder is not created here.
    """
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._\-]*", name) or ".." in name:
        raise ParameterError("name", "a non-empty name of letters, digits, '.', '_', '-' (no path separators)", name)
    env = os.environ.get("MAELAB_CACHE")
    if env:
        root = Path(env)
    else:
        repo = Path(__file__).resolve().parents[2]
        root = (repo if (repo / "pyproject.toml").exists() else Path.cwd()) / ".cache"
    return root / "checkpoints" / name


# ----------------------------------------------------------------------------------------------------------------
# pre-training
# ----------------------------------------------------------------------------------------------------------------

@dataclass
class TrainResult:
    """What :func:`train` returns.

    Attributes:
        model: the trained (unwrapped) model, in eval mode.
        history: one dict per completed epoch: ``epoch`` (1-based), ``loss``, ``loss_rec``, ``loss_unif``
            (means over the epoch's steps, averaged over ranks), ``lr`` (mean scheduled lr over the epoch),
            ``online_acc`` (probe accuracy on the training batches, or None), ``eval_online_acc`` (probe on
            ``eval_data``, or None when not evaluated this epoch), ``seconds`` (training-loop wall time),
            ``images_per_s`` (global images / seconds).
        probe: the online head (``nn.Sequential``) or None.
        snapshots: ``{epoch: state_dict}`` (CPU tensors) for ``config.snapshot_epochs``.
        checkpoint: path of ``last.pt`` or None; ``resumed_from``: (epoch, iteration) when resumed.
    """

    model: nn.Module
    history: list[dict]
    config: TrainConfig
    probe: nn.Module | None = None
    snapshots: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict)
    checkpoint: Path | None = None
    resumed_from: tuple[int, int] | None = None

    @property
    def final(self) -> dict:
        return self.history[-1] if self.history else {}

    def frame(self):
        """History as a pandas DataFrame indexed by epoch."""
        import pandas as pd

        return pd.DataFrame(self.history).set_index("epoch")


def _make_probe(dim: int, num_classes: int, bn: bool, seed: int) -> nn.Sequential:
    with torch.random.fork_rng(devices=[]):  # leave the global generator (and so the model's trajectory) alone
        torch.manual_seed(seed)
        layers: list[nn.Module] = [nn.BatchNorm1d(dim, affine=False)] if bn else []
        layers.append(nn.Linear(dim, num_classes))
        return nn.Sequential(*layers)


def _state_cpu(module: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu", copy=True) for k, v in module.state_dict().items()}


class _Acc:
    """Per-epoch accumulators (plain floats so partial epochs can be checkpointed)."""

    def __init__(self, d: dict | None = None):
        d = d or {}
        self.loss, self.rec, self.unif, self.lr = (float(d.get(k, 0.0)) for k in ("loss", "rec", "unif", "lr"))
        self.steps = int(d.get("steps", 0))
        self.seconds = float(d.get("seconds", 0.0))

    def to_dict(self) -> dict:
        return {"loss": self.loss, "rec": self.rec, "unif": self.unif, "lr": self.lr, "steps": self.steps,
                "seconds": self.seconds}


@torch.no_grad()
def _accuracy(features_fn: Callable, head: nn.Module, images: torch.Tensor, labels: torch.Tensor,
              batch_size: int, rt: _Runtime) -> float:
    """Accuracy of ``head(features_fn(x))``, the eval set split into contiguous per-rank shards."""
    n = images.shape[0]
    lo, hi = n * rt.rank // rt.world, n * (rt.rank + 1) // rt.world
    correct = torch.zeros((), dtype=torch.float64, device=rt.device)
    for s in range(lo, hi, batch_size):
        x = images[s:min(s + batch_size, hi)]
        with rt.autocast():
            f = features_fn(x)
        logits = head(f.float())
        correct += (logits.argmax(1) == labels[s:s + x.shape[0]]).sum()
    tot = rt.all_reduce_sum(torch.stack([correct, torch.tensor(float(hi - lo), dtype=torch.float64,
                                                                    device=rt.device)]))
    return float(tot[0] / tot[1])


def _check_loss(values: Sequence[float], *, epoch: int, epochs: int, it: int, iters: int, lr: float) -> None:
    loss = values[0]
    if not math.isfinite(loss):
        raise NonFiniteLossError(
            f"non-finite training loss {loss} at epoch {epoch + 1}/{epochs}, iteration {it + 1}/{iters} "
            f"(global step {epoch * iters + it + 1}); loss terms {list(values)}, lr={lr:.3g}; "
            "try a lower blr, clip_grad, or amp='off'")


def _call_model(model: nn.Module, x: torch.Tensor, mask_ratio, generator) -> dict:
    out = model(x, mask_ratio=mask_ratio, generator=generator)
    if not isinstance(out, dict) or "loss" not in out:
        raise ParameterError("model", "a module whose forward returns a dict with 'loss' (maelab.models "
                             "interface)", type(out).__name__)
    return out


def _loss_terms(out: dict) -> torch.Tensor:
    loss = out["loss"].detach().float()
    rec = out.get("loss_rec", out["loss"]).detach().float()
    unif = out.get("loss_unif")
    unif = torch.zeros_like(loss) if unif is None else unif.detach().float()
    return torch.stack([loss.reshape(()), rec.reshape(()), unif.reshape(())])


def _optimizer_step(*, rt: _Runtime, cfg, opt: torch.optim.Optimizer, scaler, params_of: nn.Module,
                    peak: float, epoch: int, it: int, iters: int, images: torch.Tensor, perm: torch.Tensor,
                    aug_gen: torch.Generator, forward: Callable[[torch.Tensor], Any],
                    loss_terms: Callable[[Any, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
                    ) -> tuple[float, torch.Tensor, Any, list[float]]:
    """One optimiser step of :func:`train` and :func:`fine_tune` (iteration ``it`` of ``epoch``).

    In this order: set the scheduled lr (:func:`lr_at` at ``epoch + it / iters``, times each group's ``lr_scale``);
    take this rank's slice of the global batch from ``perm`` (optionally augmented with ``aug_gen``);
    ``out = forward(x)`` under autocast; ``loss, terms = loss_terms(out, idx)`` outside it; average ``terms`` over
    ranks (the first entry is the loss) and raise :class:`NonFiniteLossError` before any update if it is not
    finite; zero the gradients, backward (through ``scaler`` when given), clip the gradient norm of
    ``params_of.parameters()`` to ``cfg.clip_grad`` (if set) and step. Returns ``(lr, idx, out, values)`` with
    ``values`` the rank-averaged ``terms`` as floats.
    """
    lr = lr_at(epoch + it / iters, lr=peak, min_lr=cfg.min_lr, warmup_epochs=cfg.warmup_epochs, epochs=cfg.epochs)
    for g in opt.param_groups:
        g["lr"] = lr * g.get("lr_scale", 1.0)
    bsz = cfg.batch_size
    s = it * bsz * rt.world + rt.rank * bsz
    idx = perm[s:s + bsz]
    x = images[idx]
    if cfg.augment:
        x = random_resized_crop_flip(x, aug_gen, scale=cfg.crop_scale, ratio=cfg.crop_ratio, hflip=cfg.hflip)
    with rt.autocast():
        out = forward(x)
    loss, terms = loss_terms(out, idx)
    values = (rt.all_reduce_sum(terms) / rt.world).tolist()
    _check_loss(values, epoch=epoch, epochs=cfg.epochs, it=it, iters=iters, lr=lr)
    opt.zero_grad(set_to_none=True)
    if scaler is not None:
        scaler.scale(loss).backward()
        if cfg.clip_grad is not None:
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(params_of.parameters(), cfg.clip_grad)
        scaler.step(opt)
        scaler.update()
    else:
        loss.backward()
        if cfg.clip_grad is not None:
            torch.nn.utils.clip_grad_norm_(params_of.parameters(), cfg.clip_grad)
        opt.step()
    return lr, idx, out, values


def train(model: nn.Module, data, config: TrainConfig | None = None, *, eval_data=None,
          checkpoint_dir: str | os.PathLike | None = None, resume: bool = True, device: str = "auto",
          progress: bool | None = None, callbacks: Sequence[Callable[[int, nn.Module], Any]] = ()) -> TrainResult:
    """Self-supervised pre-training of a maelab model (any variant) with the official MAE recipe.

    Args:
        model: a maelab self-supervised model (see the shared interface); trained in place and returned.
        data: a :class:`maelab.data.Dataset` (``images`` float (N, C, H, W) in [0, 1]; ``labels`` (N,) needed only
            for the online probe).
        config: :class:`TrainConfig` (defaults if None).
        eval_data: labelled dataset on which the online probe is evaluated every ``config.eval_every`` epochs.
        checkpoint_dir: folder for ``last.pt`` (e.g. :func:`default_checkpoint_dir`); None = no checkpoints.
        resume: continue from ``checkpoint_dir/last.pt`` when it exists (exactly; a finished run returns at once).
        device: "auto", "cpu", "cuda", "cuda:N"; under torchrun "auto"/"cuda" pick ``cuda:LOCAL_RANK``.
        progress: tqdm bar on rank 0 (None = on unless in CI, see :func:`maelab._util.progress_enabled`).
        callbacks: functions ``f(epoch, model)`` called on every rank with the unwrapped model, with 0 before the
            first epoch of a fresh run and with e after epoch e (after evaluation, before checkpointing).

    Returns:
        :class:`TrainResult`.

    Raises:
        ParameterError: bad config/data (e.g. ``batch_size * world_size`` > dataset size, labels missing while the
            probe is on, a checkpoint written with a different configuration or dataset).
        NonFiniteLossError: the loss became NaN/inf (raised before that step's update).
    """
    cfg = TrainConfig() if config is None else config
    if not isinstance(cfg, TrainConfig):
        raise ParameterError("config", "a maelab.train.TrainConfig", type(cfg).__name__)
    if not isinstance(model, nn.Module):
        raise ParameterError("model", "a torch.nn.Module", type(model).__name__)
    is_bool("resume", resume)
    if callable(callbacks):
        callbacks = (callbacks,)
    rt = _Runtime.create(device, cfg.amp)
    labelled = getattr(data, "labels", None) is not None
    use_probe = labelled if cfg.online_probe is None else cfg.online_probe
    images, labels = _data_tensors(data, "data", rt.device, need_labels=use_probe)
    eval_images = eval_labels = None
    if eval_data is not None and use_probe:
        eval_images, eval_labels = _data_tensors(eval_data, "eval_data", rt.device, need_labels=True)
    elif eval_data is not None:
        warnings.warn("eval_data is ignored: the online probe is off (no labels or online_probe=False)",
                      stacklevel=2)

    n = images.shape[0]
    bsz, gb = cfg.batch_size, cfg.batch_size * rt.world
    iters = n // gb
    if iters == 0:
        allowed = f"at most {n // rt.world} (dataset size {n}" + (f", world size {rt.world})" if rt.world > 1 else ")")
        raise ParameterError("batch_size", allowed, bsz)
    peak = cfg.peak_lr(rt.world)
    probe_peak = peak if cfg.probe_blr is None else cfg.probe_blr * gb / 256

    base = model.to(rt.device)
    base.train()
    seed_everything(_derive_seed(cfg.seed, _GLOBAL, rt.rank))
    head = None
    if use_probe:
        dim = getattr(base, "embed_dim", None)
        if not isinstance(dim, int):
            base.eval()
            with torch.no_grad():
                dim = int(base.forward_features(images[:2], pool=cfg.probe_pool).shape[-1])
            base.train()
        head = _make_probe(dim, _num_classes(data, labels), cfg.probe_bn, _derive_seed(cfg.seed, _PROBE)).to(rt.device)

    opt = torch.optim.AdamW(param_groups(base, cfg.weight_decay), lr=peak, betas=cfg.betas)
    popt = torch.optim.AdamW(param_groups(head, cfg.weight_decay), lr=probe_peak, betas=cfg.betas) if head else None
    scaler = torch.amp.GradScaler("cuda") if rt.amp_dtype == torch.float16 else None
    mask_gen = torch.Generator(device=rt.device).manual_seed(_derive_seed(cfg.seed, _MASK, rt.rank))
    aug_gen = torch.Generator().manual_seed(_derive_seed(cfg.seed, _AUG, rt.rank))

    ckpt = Path(checkpoint_dir) / "last.pt" if checkpoint_dir is not None else None
    start_epoch, start_iter = 0, 0
    history: list[dict] = []
    snapshots: dict[int, dict] = {}
    partial: dict | None = None
    # this rank's (correct, seen) on the current epoch, kept on the device (no extra host sync per step)
    probe_counts = torch.zeros(2, dtype=torch.float64, device=rt.device)
    resumed_from = None
    fingerprint = _fingerprint(images)

    if ckpt is not None and resume and ckpt.exists():
        ck = load_checkpoint(ckpt)
        stored = {k: v for k, v in ck["config"].items() if k not in TrainConfig._BOOKKEEPING}
        current = {k: v for k, v in cfg.to_dict().items() if k not in TrainConfig._BOOKKEEPING}
        diff = sorted(k for k in set(stored) | set(current) if stored.get(k) != current.get(k))
        if diff:
            raise ParameterError("config", f"equal to the configuration stored in {ckpt} (differs in "
                                 f"{', '.join(diff)}); use resume=False or another checkpoint_dir", cfg)
        if any(abs(a - b) > 1e-6 * max(1.0, abs(a)) for a, b in zip(ck["data_fingerprint"], fingerprint)):
            raise ParameterError("data", f"the dataset the checkpoint {ckpt} was trained on "
                                 "(fingerprint differs); use resume=False or another checkpoint_dir", len(images))
        if ck["world_size"] != rt.world and ck["iteration"] != 0:
            raise ParameterError("world_size", f"{ck['world_size']} to resume the mid-epoch checkpoint {ckpt}",
                                 rt.world)
        base.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        if head is not None:
            head.load_state_dict(ck["probe"])
            popt.load_state_dict(ck["probe_optimizer"])
        if scaler is not None and ck.get("scaler"):
            scaler.load_state_dict(ck["scaler"])
        exact = ck["world_size"] == rt.world and _set_rng_state(ck["ranks"][rt.rank]["rng"], mask_gen, aug_gen)
        if not exact:
            warnings.warn(f"resuming {ckpt} on a different device type or world size: training continues, but the "
                          "random streams are re-seeded, so the run is not bit-identical to an uninterrupted one",
                          stacklevel=2)
        start_epoch, start_iter = int(ck["epoch"]), int(ck["iteration"])
        history = list(ck["history"])
        snapshots = dict(ck["snapshots"])
        partial = ck["partial"]
        if start_iter:
            probe_counts = torch.tensor(ck["ranks"][rt.rank]["probe_counts"], dtype=torch.float64,
                                        device=rt.device)
        resumed_from = (start_epoch, start_iter)

    def save(epoch: int, iteration: int, acc: _Acc | None) -> None:
        mine = {"rng": _rng_state(mask_gen, aug_gen), "probe_counts": probe_counts.tolist()}
        ranks = [mine]
        if rt.world > 1:
            ranks = [None] * rt.world
            torch.distributed.all_gather_object(ranks, mine)
        if rt.rank == 0:
            state = {
                "format": CHECKPOINT_FORMAT, "epoch": epoch, "iteration": iteration, "iters_per_epoch": iters,
                "world_size": rt.world, "config": cfg.to_dict(), "model_class": type(base).__name__,
                "data_fingerprint": fingerprint, "model": base.state_dict(), "optimizer": opt.state_dict(),
                "probe": head.state_dict() if head is not None else None,
                "probe_optimizer": popt.state_dict() if popt is not None else None,
                "scaler": scaler.state_dict() if scaler is not None else None,
                "ranks": ranks, "history": history, "snapshots": snapshots,
                "partial": acc.to_dict() if acc is not None else None,
            }
            with atomic_path(ckpt) as tmp:
                torch.save(state, tmp)
        if rt.world > 1:
            torch.distributed.barrier()

    if resumed_from is None:
        for cb in callbacks:
            cb(0, base)
        if 0 in cfg.snapshot_epochs:
            snapshots[0] = _state_cpu(base)

    net = rt.wrap(base, cfg.find_unused_parameters)
    hnet = rt.wrap(head) if head is not None else None

    def forward_pretrain(x: torch.Tensor) -> dict:
        return _call_model(net, x, cfg.mask_ratio, mask_gen)

    def pretrain_terms(out: dict, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return out["loss"], _loss_terms(out)

    total = cfg.epochs * iters
    bar = pbar(total=total, initial=min(start_epoch * iters + start_iter, total), desc="train", unit="step",
               progress=progress if rt.rank == 0 else False)
    try:
        for epoch in range(start_epoch, cfg.epochs):
            perm = _epoch_permutation(cfg.seed, epoch, n).to(rt.device)
            acc = _Acc(partial)
            if not start_iter:
                probe_counts = torch.zeros(2, dtype=torch.float64, device=rt.device)
            t0 = time.perf_counter()
            for it in range(start_iter, iters):
                lr, idx, out, values = _optimizer_step(
                    rt=rt, cfg=cfg, opt=opt, scaler=scaler, params_of=base, peak=peak, epoch=epoch, it=it,
                    iters=iters, images=images, perm=perm, aug_gen=aug_gen, forward=forward_pretrain,
                    loss_terms=pretrain_terms)
                if hnet is not None:
                    for g in popt.param_groups:
                        g["lr"] = probe_peak * (lr / peak)
                    y = labels[idx]
                    logits = hnet(out["features"].detach().float())
                    ce = F.cross_entropy(logits, y)
                    popt.zero_grad(set_to_none=True)
                    ce.backward()
                    popt.step()
                    probe_counts[0] += (logits.detach().argmax(1) == y).sum()
                    probe_counts[1] += y.shape[0]
                acc.loss += values[0]
                acc.rec += values[1]
                acc.unif += values[2]
                acc.lr += lr
                acc.steps += 1
                bar.update(1)
                step = epoch * iters + it + 1
                if (ckpt is not None and cfg.checkpoint_every_iters and step % cfg.checkpoint_every_iters == 0
                        and it + 1 < iters):
                    acc.seconds += time.perf_counter() - t0
                    save(epoch, it + 1, acc)
                    t0 = time.perf_counter()
            acc.seconds += time.perf_counter() - t0
            start_iter, partial = 0, None

            online = None
            if head is not None:
                c = rt.all_reduce_sum(probe_counts.clone()).tolist()
                online = c[0] / c[1] if c[1] else None
            ev = None
            done = epoch + 1
            if eval_images is not None and (done % cfg.eval_every == 0 or done == cfg.epochs):
                base.eval()
                head.eval()
                ev = _accuracy(lambda z: base.forward_features(z, pool=cfg.probe_pool), head, eval_images,
                               eval_labels, cfg.eval_batch_size, rt)
                base.train()
                head.train()
            rec = {"epoch": done, "loss": acc.loss / acc.steps, "loss_rec": acc.rec / acc.steps,
                   "loss_unif": acc.unif / acc.steps, "lr": acc.lr / acc.steps, "online_acc": online,
                   "eval_online_acc": ev, "seconds": acc.seconds,
                   "images_per_s": iters * gb / acc.seconds if acc.seconds > 0 else float("nan")}
            history.append(rec)
            bar.set_postfix(epoch=done, loss=f"{rec['loss']:.4f}", refresh=False)
            for cb in callbacks:
                cb(done, base)
            if done in cfg.snapshot_epochs:
                snapshots[done] = _state_cpu(base)
            if ckpt is not None and (done % cfg.checkpoint_every == 0 or done == cfg.epochs):
                save(done, 0, None)
    finally:
        bar.close()
    base.eval()
    if head is not None:
        head.eval()
    return TrainResult(model=base, history=history, config=cfg, probe=head, snapshots=snapshots, checkpoint=ckpt,
                       resumed_from=resumed_from)


# ----------------------------------------------------------------------------------------------------------------
# fine-tuning
# ----------------------------------------------------------------------------------------------------------------

class _Classifier(nn.Module):
    def __init__(self, encoder: nn.Module, head: nn.Linear, pool: str):
        super().__init__()
        self.encoder, self.head, self.pool = encoder, head, pool

    def forward(self, x):
        return self.head(self.encoder.forward_features(x, pool=self.pool))


@dataclass
class FineTuneResult:
    """``test_acc`` (after the last epoch), per-epoch ``history`` (epoch, loss, train_acc, test_acc or None, lr,
    seconds, images_per_s), the fine-tuned ``model`` (encoder) and ``head`` (Linear), both in eval mode."""

    test_acc: float
    history: list[dict]
    model: nn.Module
    head: nn.Linear
    config: FineTuneConfig


def fine_tune(model: nn.Module, train_data, test_data, config: FineTuneConfig | None = None, *,
              device: str = "auto", progress: bool | None = None, copy_model: bool = True) -> FineTuneResult:
    """Supervised end-to-end fine-tuning of ``model.forward_features`` + a new Linear head (cross-entropy).

    AdamW with optional layer-wise lr decay (:func:`param_groups`), the same warm-up + cosine schedule per iteration,
    optional augmentation, bf16 autocast on CUDA, DDP when ``torch.distributed`` is initialised (with
    ``find_unused_parameters=True``: the decoder gets no gradient and AdamW leaves parameters without gradients
    untouched). ``copy_model=True`` fine-tunes a deep copy so the pre-trained model is not modified.
    """
    cfg = FineTuneConfig() if config is None else config
    if not isinstance(cfg, FineTuneConfig):
        raise ParameterError("config", "a maelab.train.FineTuneConfig", type(cfg).__name__)
    if not isinstance(model, nn.Module):
        raise ParameterError("model", "a torch.nn.Module", type(model).__name__)
    rt = _Runtime.create(device, cfg.amp)
    images, labels = _data_tensors(train_data, "train_data", rt.device, need_labels=True)
    test_images, test_labels = _data_tensors(test_data, "test_data", rt.device, need_labels=True)
    n, bsz, gb = images.shape[0], cfg.batch_size, cfg.batch_size * rt.world
    iters = n // gb
    if iters == 0:
        raise ParameterError("batch_size", f"at most {n // rt.world} (dataset size {n})", bsz)
    encoder = copy.deepcopy(model) if copy_model else model
    encoder.to(rt.device).train()
    seed_everything(_derive_seed(cfg.seed, _GLOBAL, rt.rank))
    with torch.no_grad():
        dim = encoder.forward_features(images[:2], pool=cfg.pool).shape[-1]
    k = max(_num_classes(train_data, labels), _num_classes(test_data, test_labels))
    head = nn.Linear(dim, k)
    g = torch.Generator().manual_seed(_derive_seed(cfg.seed, _HEAD))
    nn.init.trunc_normal_(head.weight, std=cfg.head_init_std, generator=g)
    nn.init.zeros_(head.bias)
    clf = _Classifier(encoder, head.to(rt.device), cfg.pool)
    peak = cfg.peak_lr(rt.world)
    opt = torch.optim.AdamW(param_groups(clf, cfg.weight_decay, layer_decay=cfg.layer_decay), lr=peak,
                            betas=cfg.betas)
    scaler = torch.amp.GradScaler("cuda") if rt.amp_dtype == torch.float16 else None
    aug_gen = torch.Generator().manual_seed(_derive_seed(cfg.seed, _AUG, rt.rank))
    net = rt.wrap(clf, find_unused=True)

    def finetune_terms(logits: torch.Tensor, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        loss = F.cross_entropy(logits.float(), labels[idx], label_smoothing=cfg.label_smoothing)
        return loss, loss.detach().double().reshape(1)

    history: list[dict] = []
    test_acc = float("nan")
    bar = pbar(total=cfg.epochs * iters, desc="fine-tune", unit="step", progress=progress if rt.rank == 0 else False)
    try:
        for epoch in range(cfg.epochs):
            perm = _epoch_permutation(cfg.seed, epoch, n).to(rt.device)
            sums = torch.zeros(3, dtype=torch.float64, device=rt.device)  # loss*B, correct, count
            lr_sum = 0.0
            t0 = time.perf_counter()
            for it in range(iters):
                lr, idx, logits, (lv,) = _optimizer_step(
                    rt=rt, cfg=cfg, opt=opt, scaler=scaler, params_of=clf, peak=peak, epoch=epoch, it=it,
                    iters=iters, images=images, perm=perm, aug_gen=aug_gen, forward=net, loss_terms=finetune_terms)
                y = labels[idx]
                sums += torch.stack([torch.tensor(lv * y.shape[0], dtype=torch.float64, device=rt.device),
                                     (logits.detach().argmax(1) == y).sum().double(),
                                     torch.tensor(float(y.shape[0]), dtype=torch.float64, device=rt.device)])
                lr_sum += lr
                bar.update(1)
            seconds = time.perf_counter() - t0
            sums = rt.all_reduce_sum(sums).tolist()
            done = epoch + 1
            te = None
            if done % cfg.eval_every == 0 or done == cfg.epochs:
                clf.eval()
                te = _accuracy(lambda z: encoder.forward_features(z, pool=cfg.pool), head, test_images,
                               test_labels, cfg.eval_batch_size, rt)
                clf.train()
                test_acc = te
            history.append({"epoch": done, "loss": sums[0] / sums[2], "train_acc": sums[1] / sums[2],
                            "test_acc": te, "lr": lr_sum / iters, "seconds": seconds,
                            "images_per_s": iters * gb / seconds if seconds > 0 else float("nan")})
            bar.set_postfix(epoch=done, loss=f"{history[-1]['loss']:.4f}", refresh=False)
    finally:
        bar.close()
    clf.eval()
    return FineTuneResult(test_acc=test_acc, history=history, model=encoder, head=head, config=cfg)


# ----------------------------------------------------------------------------------------------------------------
# command line (torchrun-able)
# ----------------------------------------------------------------------------------------------------------------

def _parse_overrides(items: Sequence[str]) -> dict:
    out = {}
    for item in items or ():
        if "=" not in item:
            raise ParameterError("--set", "KEY=VALUE", item)
        k, v = item.split("=", 1)
        try:
            out[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            out[k] = v
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m maelab.train",
        description="Pre-train a maelab model (MAE, U-MAE, SimMIM, U-SimMIM) with the official MAE recipe. "
                    "Works on CPU, one GPU, or several through `torchrun --nproc_per_node=K -m maelab.train ...` "
                    "(batch size is per process).")
    p.add_argument("--dataset", required=True, help="name for maelab.data.load (e.g. cifar10)")
    p.add_argument("--num-train", type=int, default=None, help="training images (data.load n=; default all)")
    p.add_argument("--num-eval", type=int, default=None, help="test images for the online probe (default all)")
    p.add_argument("--no-eval", action="store_true", help="skip the online probe's test evaluation")
    p.add_argument("--model", default="mae", help="mae | umae | simmim | usimmim")
    p.add_argument("--size", default="micro", help="micro | small | vit_tiny | vit_base")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                   help="model overrides for maelab.models.create, e.g. --set patch_size=4 lambda_unif=0.01")
    p.add_argument("--epochs", type=int, default=TrainConfig.epochs)
    p.add_argument("--batch-size", type=int, default=TrainConfig.batch_size, help="per process")
    p.add_argument("--blr", type=float, default=TrainConfig.blr)
    p.add_argument("--lr", type=float, default=None, help="absolute peak lr (overrides --blr)")
    p.add_argument("--min-lr", type=float, default=TrainConfig.min_lr)
    p.add_argument("--warmup-epochs", type=float, default=TrainConfig.warmup_epochs)
    p.add_argument("--weight-decay", type=float, default=TrainConfig.weight_decay)
    p.add_argument("--clip-grad", type=float, default=None)
    p.add_argument("--mask-ratio", type=float, default=None, help="default: the model's")
    p.add_argument("--amp", default="auto", choices=AMP_CHOICES)
    p.add_argument("--augment", action="store_true", help="random resized crop + flip")
    p.add_argument("--no-probe", action="store_true", help="disable the online linear probe")
    p.add_argument("--probe-bn", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto")
    p.add_argument("--checkpoint-dir", default=None, help="folder for last.pt")
    p.add_argument("--name", default=None, help="checkpoint folder default_checkpoint_dir(NAME)")
    p.add_argument("--checkpoint-every", type=int, default=1)
    p.add_argument("--checkpoint-every-iters", type=int, default=None)
    p.add_argument("--no-resume", action="store_true")
    p.add_argument("--history-out", default=None, help="write the history as JSON here (rank 0, atomically)")
    p.add_argument("--no-progress", action="store_true")
    return p


def _init_distributed_from_env(device: str) -> bool:
    """Initialise torch.distributed when launched by torchrun (WORLD_SIZE > 1); returns True if this call did."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or _dist_active():
        return False
    use_cuda = torch.cuda.is_available() and device != "cpu"
    if use_cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    torch.distributed.init_process_group(backend="nccl" if use_cuda else "gloo")
    return True


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    started = _init_distributed_from_env(args.device)
    try:
        from . import data as mdata
        from . import models as mmodels

        cfg = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, blr=args.blr, lr=args.lr,
                          min_lr=args.min_lr, warmup_epochs=args.warmup_epochs, weight_decay=args.weight_decay,
                          clip_grad=args.clip_grad, amp=args.amp, mask_ratio=args.mask_ratio, seed=args.seed,
                          augment=args.augment, online_probe=False if args.no_probe else None,
                          probe_bn=args.probe_bn, checkpoint_every=args.checkpoint_every,
                          checkpoint_every_iters=args.checkpoint_every_iters)
        train_set = mdata.load(args.dataset, "train", n=args.num_train, seed=args.seed)
        eval_set = None
        if not args.no_eval and not args.no_probe and train_set.labels is not None:
            eval_set = mdata.load(args.dataset, "test", n=args.num_eval, seed=args.seed)
        overrides = _parse_overrides(args.set)
        overrides.setdefault("img_size", int(train_set.images.shape[-1]))
        overrides.setdefault("in_chans", int(train_set.images.shape[1]))
        overrides.setdefault("seed", args.seed)  # reproducible initialisation, identical on every rank
        model = mmodels.create(args.model, args.size, **overrides)
        ckdir = args.checkpoint_dir or (default_checkpoint_dir(args.name) if args.name else None)
        res = train(model, train_set, cfg, eval_data=eval_set, checkpoint_dir=ckdir, resume=not args.no_resume,
                    device=args.device, progress=False if args.no_progress else None)
        if is_main_process():
            for h in res.history[-3:]:
                print(json.dumps(h))
            if args.history_out:
                with atomic_path(args.history_out) as tmp:
                    Path(tmp).write_text(json.dumps({"config": cfg.to_dict(), "history": res.history,
                                                     "world_size": torch.distributed.get_world_size()
                                                     if _dist_active() else 1}, indent=1))
    finally:
        if started:
            torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
