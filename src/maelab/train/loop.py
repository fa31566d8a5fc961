"""The training loop: the optimiser step shared by pre-training and fine-tuning, and one pre-training epoch.

* ``_optimizer_step`` is one step of :func:`~maelab.train.train` and :func:`~maelab.train.fine_tune`:
  scheduled lr, this rank's slice of the global batch, optional augmentation, forward under autocast, the loss
  checked for NaN/inf *before* any update, backward, optional clipping, optimiser step.
* ``_run_epoch`` is one pre-training epoch (from ``start_iter`` when resuming mid-epoch): the step, the online
  probe's step on the detached features, per-epoch accumulators, in-epoch checkpoints; ``_end_epoch`` then
  evaluates the probe, appends the history record, calls callbacks, keeps snapshots and writes the checkpoint.
* ``_Run`` holds everything one pre-training run reads and mutates across steps, so that these functions are
  small and :func:`~maelab.train.train` reads in one screen.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from .._validate import ParameterError
from .augment import random_resized_crop_flip
from .checkpoint import _save
from .config import TrainConfig
from .distributed import _Runtime
from .schedule import lr_at
from .seeds import _epoch_permutation


class NonFiniteLossError(FloatingPointError):
    """The training loss became NaN or infinite; the message names epoch, iteration and the loss terms."""


# ----------------------------------------------------------------------------------------------------------------
# shared by pre-training and fine-tuning
# ----------------------------------------------------------------------------------------------------------------

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


def _state_cpu(module: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu", copy=True) for k, v in module.state_dict().items()}


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


# ----------------------------------------------------------------------------------------------------------------
# one pre-training epoch
# ----------------------------------------------------------------------------------------------------------------

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


@dataclass(eq=False)
class _Run:
    """State of one pre-training run: what :func:`_run_epoch` reads and mutates, and what a checkpoint stores.

    ``base`` / ``head`` are the unwrapped model and online probe (``head`` None when the probe is off), ``net`` /
    ``hnet`` their DDP wrappers (the modules themselves on a single process), ``probe_counts`` this rank's
    (correct, seen) of the probe on the current epoch, kept on the device (no extra host sync per step).
    """

    cfg: TrainConfig
    rt: _Runtime
    base: nn.Module
    head: nn.Module | None
    opt: torch.optim.Optimizer
    popt: torch.optim.Optimizer | None
    scaler: Any
    mask_gen: torch.Generator
    aug_gen: torch.Generator
    images: torch.Tensor
    labels: torch.Tensor | None
    eval_images: torch.Tensor | None
    eval_labels: torch.Tensor | None
    iters: int
    peak: float
    probe_peak: float
    ckpt: Path | None
    fingerprint: list[float]
    callbacks: Sequence[Callable[[int, nn.Module], Any]] = ()
    history: list[dict] = field(default_factory=list)
    snapshots: dict[int, dict] = field(default_factory=dict)
    probe_counts: torch.Tensor | None = None
    net: nn.Module | None = None
    hnet: nn.Module | None = None

    @property
    def global_batch(self) -> int:
        return self.cfg.batch_size * self.rt.world

    def forward(self, x: torch.Tensor) -> dict:
        return _call_model(self.net, x, self.cfg.mask_ratio, self.mask_gen)

    @staticmethod
    def loss_terms(out: dict, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return out["loss"], _loss_terms(out)


def _probe_step(run: _Run, lr: float, idx: torch.Tensor, out: dict) -> None:
    """One step of the online probe on the step's detached features, at the model's scheduled lr (rescaled)."""
    for g in run.popt.param_groups:
        g["lr"] = run.probe_peak * (lr / run.peak)
    y = run.labels[idx]
    logits = run.hnet(out["features"].detach().float())
    ce = F.cross_entropy(logits, y)
    run.popt.zero_grad(set_to_none=True)
    ce.backward()
    run.popt.step()
    run.probe_counts[0] += (logits.detach().argmax(1) == y).sum()
    run.probe_counts[1] += y.shape[0]


def _run_epoch(run: _Run, epoch: int, start_iter: int, partial: dict | None, bar) -> None:
    """Pre-train one epoch from iteration ``start_iter`` (accumulators ``partial`` of a resumed epoch), then end it."""
    cfg, rt, iters = run.cfg, run.rt, run.iters
    perm = _epoch_permutation(cfg.seed, epoch, run.images.shape[0]).to(rt.device)
    acc = _Acc(partial)
    if not start_iter:
        run.probe_counts = torch.zeros(2, dtype=torch.float64, device=rt.device)
    t0 = time.perf_counter()
    for it in range(start_iter, iters):
        lr, idx, out, values = _optimizer_step(
            rt=rt, cfg=cfg, opt=run.opt, scaler=run.scaler, params_of=run.base, peak=run.peak, epoch=epoch, it=it,
            iters=iters, images=run.images, perm=perm, aug_gen=run.aug_gen, forward=run.forward,
            loss_terms=run.loss_terms)
        if run.hnet is not None:
            _probe_step(run, lr, idx, out)
        acc.loss += values[0]
        acc.rec += values[1]
        acc.unif += values[2]
        acc.lr += lr
        acc.steps += 1
        bar.update(1)
        step = epoch * iters + it + 1
        if (run.ckpt is not None and cfg.checkpoint_every_iters and step % cfg.checkpoint_every_iters == 0
                and it + 1 < iters):
            acc.seconds += time.perf_counter() - t0
            _save(run, epoch, it + 1, acc)
            t0 = time.perf_counter()
    acc.seconds += time.perf_counter() - t0
    _end_epoch(run, epoch + 1, acc, bar)


def _end_epoch(run: _Run, done: int, acc: _Acc, bar) -> None:
    """After ``done`` completed epochs: probe accuracies, history record, callbacks, snapshot, checkpoint."""
    cfg, rt, base, head = run.cfg, run.rt, run.base, run.head
    online = None
    if head is not None:
        c = rt.all_reduce_sum(run.probe_counts.clone()).tolist()
        online = c[0] / c[1] if c[1] else None
    ev = None
    if run.eval_images is not None and (done % cfg.eval_every == 0 or done == cfg.epochs):
        base.eval()
        head.eval()
        ev = _accuracy(lambda z: base.forward_features(z, pool=cfg.probe_pool), head, run.eval_images,
                       run.eval_labels, cfg.eval_batch_size, rt)
        base.train()
        head.train()
    rec = {"epoch": done, "loss": acc.loss / acc.steps, "loss_rec": acc.rec / acc.steps,
           "loss_unif": acc.unif / acc.steps, "lr": acc.lr / acc.steps, "online_acc": online,
           "eval_online_acc": ev, "seconds": acc.seconds,
           "images_per_s": run.iters * run.global_batch / acc.seconds if acc.seconds > 0 else float("nan")}
    run.history.append(rec)
    bar.set_postfix(epoch=done, loss=f"{rec['loss']:.4f}", refresh=False)
    for cb in run.callbacks:
        cb(done, base)
    if done in cfg.snapshot_epochs:
        run.snapshots[done] = _state_cpu(base)
    if run.ckpt is not None and (done % cfg.checkpoint_every == 0 or done == cfg.epochs):
        _save(run, done, 0, None)
