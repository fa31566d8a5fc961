"""Run configurations: :class:`~maelab.train.TrainConfig` (self-supervised pre-training) and
:class:`~maelab.train.FineTuneConfig`.

Both are dataclasses validated in ``__post_init__``: a bad value raises :class:`maelab.ParameterError` at once with
one line naming the field and what is allowed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .._validate import ParameterError, in_range, is_bool, one_of, positive_int

AMP_CHOICES = ("auto", "bf16", "fp16", "off")


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
    """Checks shared by both configurations (optimiser, schedule, precision, seed, augmentation, evaluation)."""
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
    if cfg.log_every is not None:
        positive_int("log_every", cfg.log_every)
    is_bool("compile", cfg.compile)


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
        weight_decay, betas: AdamW; see :mod:`maelab.train` for the no-decay groups.
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
        log_every: read the loss back to the host (one sync) every k steps and at the end of each epoch; None = 1
            on the CPU (the NaN stop then runs before every update, as always), 50 on CUDA (see
            :class:`maelab.train.loop._LossLog`: a non-finite loss stops the run at the next read-back, naming the
            first bad step).
        compile: wrap the model in ``torch.compile`` for the training steps (off by default; worth it for long
            CUDA runs; the checkpoint and snapshots hold the uncompiled module's state).
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
    log_every: int | None = None
    compile: bool = False

    # fields that do not change the training recipe (may differ between a checkpoint and a resumed run)
    _BOOKKEEPING = (
        "eval_every",
        "eval_batch_size",
        "checkpoint_every",
        "checkpoint_every_iters",
        "snapshot_epochs",
        "log_every",
        "compile",
    )

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
    everything else on top), ``label_smoothing`` in [0, 1), ``pool`` ("cls"/"mean") for ``forward_features``,
    ``log_every`` and ``compile`` as in :class:`TrainConfig`.
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
    log_every: int | None = None
    compile: bool = False

    def __post_init__(self):
        _check_common(self)
        if self.layer_decay is not None:
            in_range("layer_decay", self.layer_decay, 0.0, 1.0, low_open=True)
        in_range("label_smoothing", self.label_smoothing, 0.0, 1.0, high_open=True)
        one_of("pool", self.pool, ("cls", "mean"))
        in_range("head_init_std", self.head_init_std, 0.0, None, low_open=True)

    def to_dict(self) -> dict:
        """Plain-python view (tuples, numbers, strings, None)."""
        return dataclasses.asdict(self)

    def peak_lr(self, world_size: int = 1) -> float:
        """``lr`` if given, else ``blr * batch_size * world_size / 256``."""
        return self.lr if self.lr is not None else self.blr * self.batch_size * world_size / 256
