"""Supervised end-to-end fine-tuning: :func:`~maelab.train.fine_tune` (encoder + a new Linear head on
``forward_features``).

Same optimiser step as pre-training (``maelab.train.loop._optimizer_step``): AdamW with optional layer-wise lr
decay, warm-up + cosine schedule per iteration, optional augmentation, bf16 autocast on CUDA, DDP when
``torch.distributed`` is initialised.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .._util import pbar, seed_everything
from .._validate import ParameterError
from ..options import DryRunLimits
from .config import FineTuneConfig
from .distributed import _Runtime
from .loop import (
    _accuracy,
    _data_tensors,
    _dry_steps,
    _evaluates,
    _log_every,
    _LossLog,
    _num_classes,
    _optimizer_step,
)
from .schedule import param_groups
from .seeds import _AUG, _GLOBAL, _HEAD, _derive_seed, _epoch_permutation


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


def _new_head(encoder: nn.Module, images: torch.Tensor, k: int, cfg: FineTuneConfig, rt: _Runtime) -> nn.Linear:
    """A Linear head on the encoder's features: truncated-normal weights (std ``head_init_std``), zero bias."""
    with torch.no_grad():
        dim = encoder.forward_features(images[:2], pool=cfg.pool).shape[-1]
    head = nn.Linear(dim, k)
    g = torch.Generator().manual_seed(_derive_seed(cfg.seed, _HEAD))
    nn.init.trunc_normal_(head.weight, std=cfg.head_init_std, generator=g)
    nn.init.zeros_(head.bias)
    return head.to(rt.device)


def _finetune_epoch(
    epoch: int,
    *,
    cfg: FineTuneConfig,
    rt: _Runtime,
    clf: _Classifier,
    net: nn.Module,
    opt: torch.optim.Optimizer,
    scaler,
    peak: float,
    data: tuple[torch.Tensor, ...],
    aug_gen: torch.Generator,
    iters: int,
    bar,
    budget: list,
    caps: DryRunLimits | None = None,
) -> dict:
    """One fine-tuning epoch, then the test accuracy when due; returns the epoch's history record. ``budget``:
    ``[steps left]`` in a dry run (decremented here), ``[None]`` otherwise; ``caps``: the dry run's."""
    images, labels, test_images, test_labels = data

    def finetune_terms(logits: torch.Tensor, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        loss = F.cross_entropy(logits.float(), labels[idx], label_smoothing=cfg.label_smoothing)
        return loss, loss.detach().double().reshape(1)

    perm = _epoch_permutation(cfg.seed, epoch, images.shape[0]).to(rt.device)
    sums = torch.zeros(3, dtype=torch.float64, device=rt.device)  # loss*B, correct, count
    log = _LossLog(rt.device, (0.0,), _log_every(cfg, rt), epochs=cfg.epochs, iters=iters)
    lr_sum, stop = 0.0, _dry_steps(budget[0], 0, iters)
    t0 = time.perf_counter()
    for it in range(stop):
        lr, idx, logits, terms = _optimizer_step(
            rt=rt,
            cfg=cfg,
            opt=opt,
            scaler=scaler,
            params_of=clf,
            peak=peak,
            epoch=epoch,
            it=it,
            iters=iters,
            images=images,
            perm=perm,
            aug_gen=aug_gen,
            forward=net,
            loss_terms=finetune_terms,
            log=log,
            batch_cap=caps.train_batch if caps is not None else None,
        )
        y = labels[idx]
        b = y.shape[0]
        sums += torch.stack(
            [
                terms[0] * b,
                (logits.detach().argmax(1) == y).sum().double(),
                torch.full((), float(b), dtype=torch.float64, device=rt.device),
            ]
        )
        lr_sum += lr
        bar.update(1)
    log.check()
    seconds = time.perf_counter() - t0
    if budget[0] is not None:
        budget[0] -= stop
    sums = rt.all_reduce_sum(sums).tolist()
    done = epoch + 1
    te = None
    if _evaluates(done, cfg.eval_every, cfg.epochs, caps is not None):
        clf.eval()
        te = _accuracy(
            lambda z: clf.encoder.forward_features(z, pool=cfg.pool),
            clf.head,
            test_images,
            test_labels,
            cfg.eval_batch_size,
            rt,
            caps.eval_images if caps is not None else None,
        )
        clf.train()
    gb = cfg.batch_size * rt.world
    seen = sums[2] or float("nan")  # 0 only in a dry run's step-less epochs
    return {
        "epoch": done,
        "loss": sums[0] / seen,
        "train_acc": sums[1] / seen,
        "test_acc": te,
        "lr": lr_sum / stop if stop else float("nan"),
        "seconds": seconds,
        "images_per_s": stop * gb / seconds if seconds > 0 else float("nan"),
    }


def fine_tune(
    model: nn.Module,
    train_data,
    test_data,
    config: FineTuneConfig | None = None,
    *,
    device: str = "auto",
    progress: bool | None = None,
    copy_model: bool = True,
    caps: DryRunLimits | None = None,
) -> FineTuneResult:
    """Supervised end-to-end fine-tuning of ``model.forward_features`` + a new Linear head (cross-entropy).

    AdamW with optional layer-wise lr decay (:func:`param_groups`), the same warm-up + cosine schedule per iteration,
    optional augmentation, bf16 autocast on CUDA, DDP when ``torch.distributed`` is initialised (with
    ``find_unused_parameters=True``: the decoder gets no gradient and AdamW leaves parameters without gradients
    untouched). ``copy_model=True`` fine-tunes a deep copy so the pre-trained model is not modified. ``caps``: a
    dry run's (:class:`maelab.options.DryRunLimits`: at most ``train_steps`` steps in all, each on the first
    ``train_batch`` images of its batch, evaluations on ``eval_images`` images); None: a real run.
    """
    cfg = FineTuneConfig() if config is None else config
    if not isinstance(cfg, FineTuneConfig):
        raise ParameterError("config", "a maelab.train.FineTuneConfig", type(cfg).__name__)
    if not isinstance(model, nn.Module):
        raise ParameterError("model", "a torch.nn.Module", type(model).__name__)
    rt = _Runtime.create(device, cfg.amp)
    images, labels = _data_tensors(train_data, "train_data", rt.device, need_labels=True)
    test_images, test_labels = _data_tensors(test_data, "test_data", rt.device, need_labels=True)
    n = images.shape[0]
    iters = n // (cfg.batch_size * rt.world)
    if iters == 0:
        raise ParameterError("batch_size", f"at most {n // rt.world} (dataset size {n})", cfg.batch_size)
    encoder = copy.deepcopy(model) if copy_model else model
    encoder.to(rt.device).train()
    seed_everything(_derive_seed(cfg.seed, _GLOBAL, rt.rank))
    k = max(_num_classes(train_data, labels), _num_classes(test_data, test_labels))
    clf = _Classifier(encoder, _new_head(encoder, images, k, cfg, rt), cfg.pool)
    peak = cfg.peak_lr(rt.world)
    opt = rt.adamw(param_groups(clf, cfg.weight_decay, layer_decay=cfg.layer_decay), lr=peak, betas=cfg.betas)
    scaler = torch.amp.GradScaler("cuda") if rt.amp_dtype == torch.float16 else None
    aug_gen = torch.Generator().manual_seed(_derive_seed(cfg.seed, _AUG, rt.rank))
    net = rt.wrap(torch.compile(clf) if cfg.compile else clf, find_unused=True)
    budget = [caps.train_steps if caps is not None else None]
    history: list[dict] = []
    bar = pbar(total=cfg.epochs * iters, desc="fine-tune", unit="step", progress=progress if rt.rank == 0 else False)
    try:
        for epoch in range(cfg.epochs):
            history.append(
                _finetune_epoch(
                    epoch,
                    cfg=cfg,
                    rt=rt,
                    clf=clf,
                    net=net,
                    opt=opt,
                    scaler=scaler,
                    peak=peak,
                    data=(images, labels, test_images, test_labels),
                    aug_gen=aug_gen,
                    iters=iters,
                    bar=bar,
                    budget=budget,
                    caps=caps,
                )
            )
            if history[-1]["loss"] != history[-1]["loss"] and len(history) > 1 and budget[0] == 0:
                # a dry run's step-less epoch: the weights did not change, it carries the last measured loss
                history[-1].update({k: history[-2][k] for k in ("loss", "train_acc")})
            bar.set_postfix(epoch=epoch + 1, loss=f"{history[-1]['loss']:.4f}", refresh=False)
    finally:
        bar.close()
    clf.eval()
    test_acc = next((h["test_acc"] for h in reversed(history) if h["test_acc"] is not None), float("nan"))
    return FineTuneResult(test_acc=test_acc, history=history, model=encoder, head=clf.head, config=cfg)
