"""The training loop: the optimiser step shared by pre-training and fine-tuning, and one pre-training epoch.

* ``_optimizer_step`` is one step of :func:`~maelab.train.train` and :func:`~maelab.train.fine_tune`:
  scheduled lr, this rank's slice of the global batch, optional augmentation, forward under autocast, the loss
  checked for NaN/inf *before* any update, backward, optional clipping, optimiser step.
* ``_run_epoch`` is one pre-training epoch (from ``start_iter`` when resuming mid-epoch): the step, the online
  probe's step on the detached features, per-epoch accumulators, in-epoch checkpoints; ``_end_epoch`` then
  evaluates the probe, appends the history record, calls callbacks, keeps snapshots and writes the checkpoint.
* ``_Run`` holds everything one pre-training run reads and mutates across steps, so that these functions are
  small and :func:`~maelab.train.train` reads in one screen.
* ``_LossLog`` keeps the loss terms on the device: the step loop reads them back (one host sync) only every
  ``log_every`` steps and at the end of the epoch, and the NaN stop names the first non-finite step.
* In a dry run (``caps``: :class:`maelab.options.DryRunLimits`, an argument of :func:`~maelab.train.train` and
  :func:`~maelab.train.fine_tune`) a run makes at most ``train_steps`` optimiser steps in all, each
  on the first ``train_batch`` images of its batch;
  the remaining epochs still end (callbacks, snapshots) with no step, the online probe is evaluated (on a few
  images) at the first evaluation epoch and the last only, and only the last epoch writes a checkpoint.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from .._validate import ParameterError, finite_images
from ..options import DryRunLimits
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
        raise ParameterError(
            f"{name}.labels", "present when the online probe / classifier is on (or set online_probe=False)", None
        )
    # checked here because such data would otherwise surface as a non-finite loss at the first step, with advice
    # about the learning rate
    return finite_images(f"{name}.images", images.to(device, torch.float32)), labels


def _num_classes(data, labels: torch.Tensor) -> int:
    k = getattr(data, "num_classes", None)
    if isinstance(k, int) and not isinstance(k, bool) and k > 0:
        return k
    return int(labels.max().item()) + 1


def _state_cpu(module: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu", copy=True) for k, v in module.state_dict().items()}


@torch.no_grad()
def _accuracy(
    features_fn: Callable,
    head: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    batch_size: int,
    rt: _Runtime,
    limit: int | None = None,
) -> float:
    """Accuracy of ``head(features_fn(x))``, the eval set split into contiguous per-rank shards; ``limit``: at most
    that many images (a dry run's ``eval_images``)."""
    n = images.shape[0] if limit is None else min(images.shape[0], limit)
    lo, hi = n * rt.rank // rt.world, n * (rt.rank + 1) // rt.world
    correct = torch.zeros((), dtype=torch.float64, device=rt.device)
    for s in range(lo, hi, batch_size):
        x = images[s : min(s + batch_size, hi)]
        with rt.autocast():
            f = features_fn(x)
        logits = head(f.float())
        correct += (logits.argmax(1) == labels[s : s + x.shape[0]]).sum()
    tot = rt.all_reduce_sum(torch.stack([correct, torch.tensor(float(hi - lo), dtype=torch.float64, device=rt.device)]))
    return float(tot[0] / tot[1])


def _evaluates(done: int, every: int, epochs: int, dry: bool = False) -> bool:
    """Whether the epoch ending with ``done`` completed epochs evaluates: every ``every`` epochs and after the
    last; in a dry run (``dry``) only the first of those and the last."""
    if not (done % every == 0 or done == epochs):
        return False
    return not dry or done in (min(every, epochs), epochs)


def _check_loss(values: Sequence[float], *, epoch: int, epochs: int, it: int, iters: int, lr: float) -> None:
    loss = values[0]
    if not math.isfinite(loss):
        raise NonFiniteLossError(
            f"non-finite training loss {loss} at epoch {epoch + 1}/{epochs}, iteration {it + 1}/{iters} "
            f"(global step {epoch * iters + it + 1}); loss terms {list(values)}, lr={lr:.3g}; "
            "try a lower blr, clip_grad, or amp='off'"
        )


class _LossLog:
    """Sums of the rank-averaged loss terms of an epoch, kept on the device (float64), read back every ``every``
    steps (:meth:`check`, one host sync) instead of after every step.

    ``start``: the sums so far (a resumed epoch's accumulators); the same float64 additions in the same order as
    summing Python floats, so the numbers are bit-identical to a per-step read-back. The first step whose loss is
    not finite is recorded on the device; :meth:`check` raises :class:`NonFiniteLossError` naming it. With
    ``every = 1`` the check runs after every forward, *before* that step's update (nothing non-finite is ever
    applied); with ``every = k`` it runs every k steps, before the k-th step's update, so up to k - 1 updates may
    have used a non-finite loss before the run stops (the model is then discarded: no checkpoint is written after
    the bad step, since checkpoints are written only after a check).
    """

    def __init__(self, device: torch.device, start: Sequence[float], every: int, *, epochs: int, iters: int):
        self.sums = torch.tensor([float(v) for v in start], dtype=torch.float64, device=device)
        self.count = torch.zeros((), dtype=torch.long, device=device)
        self.bad = torch.full((), -1, dtype=torch.long, device=device)
        self.bad_terms = torch.zeros_like(self.sums)
        self.every, self.epochs, self.iters = every, epochs, iters
        self.pending: list[tuple[int, int, float]] = []  # (epoch, iteration, lr) of the steps since the last check
        self.last = [float(v) for v in start]  # the sums at the last check

    def add(self, terms: torch.Tensor, *, epoch: int, it: int, lr: float) -> None:
        """Record one step's rank-averaged terms (device tensor, first entry the loss); check when due."""
        t = terms.detach().double().reshape(-1)
        first = (self.bad < 0) & ~torch.isfinite(t[0])
        self.bad = torch.where(first, self.count, self.bad)
        self.bad_terms = torch.where(first, t, self.bad_terms)
        self.count += 1
        self.sums += t
        self.pending.append((epoch, it, lr))
        if len(self.pending) >= self.every:
            self.check()

    def check(self) -> list[float]:
        """One host sync: the current sums; raises NonFiniteLossError if a step since the last check was not finite."""
        if not self.pending:
            return list(self.last)
        got = torch.cat([self.bad.double().reshape(1), self.sums, self.bad_terms]).tolist()
        k, n = int(got[0]), self.sums.numel()
        if k >= 0:
            epoch, it, lr = self.pending[k]
            _check_loss(got[1 + n :], epoch=epoch, epochs=self.epochs, it=it, iters=self.iters, lr=lr)
        self.pending.clear()
        self.count.zero_()
        self.last = got[1 : 1 + n]
        return list(self.last)


def _log_every(cfg, rt: _Runtime) -> int:
    """Steps between host read-backs of the loss: ``cfg.log_every``, else 1 on the CPU (bit-identical to the
    original per-step check, and a read-back costs nothing there) and 50 on CUDA."""
    every = getattr(cfg, "log_every", None)
    return every if every is not None else (50 if rt.device.type == "cuda" else 1)


def _optimizer_step(
    *,
    rt: _Runtime,
    cfg,
    opt: torch.optim.Optimizer,
    scaler,
    params_of: nn.Module,
    peak: float,
    epoch: int,
    it: int,
    iters: int,
    images: torch.Tensor,
    perm: torch.Tensor,
    aug_gen: torch.Generator,
    forward: Callable[[torch.Tensor], Any],
    loss_terms: Callable[[Any, torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    log: _LossLog,
    batch_cap: int | None = None,
) -> tuple[float, torch.Tensor, Any, torch.Tensor]:
    """One optimiser step of :func:`train` and :func:`fine_tune` (iteration ``it`` of ``epoch``).

    In this order: set the scheduled lr (:func:`lr_at` at ``epoch + it / iters``, times each group's ``lr_scale``);
    take this rank's slice of the global batch from ``perm`` (optionally augmented with ``aug_gen``);
    ``out = forward(x)`` under autocast; ``loss, terms = loss_terms(out, idx)`` outside it; average ``terms`` over
    ranks (the first entry is the loss) and hand them to ``log`` (which raises :class:`NonFiniteLossError` when its
    check is due and a loss since the last check was not finite, see ``_LossLog``); zero the gradients,
    backward (through ``scaler`` when given), clip the gradient norm of ``params_of.parameters()`` to
    ``cfg.clip_grad`` (if set) and step. ``batch_cap``: a dry run's ``train_batch`` (the slot's first images).
    Returns ``(lr, idx, out, terms)`` with ``terms`` the rank-averaged terms
    (a device tensor: no host sync here).
    """
    lr = lr_at(epoch + it / iters, lr=peak, min_lr=cfg.min_lr, warmup_epochs=cfg.warmup_epochs, epochs=cfg.epochs)
    for g in opt.param_groups:
        g["lr"] = lr * g.get("lr_scale", 1.0)
    bsz = cfg.batch_size
    s = it * bsz * rt.world + rt.rank * bsz
    idx = perm[s : s + (bsz if batch_cap is None else min(bsz, batch_cap))]  # a dry run: the slot's first images
    x = images[idx]
    if cfg.augment:
        x = random_resized_crop_flip(x, aug_gen, scale=cfg.crop_scale, ratio=cfg.crop_ratio, hflip=cfg.hflip)
    with rt.autocast():
        out = forward(x)
    loss, terms = loss_terms(out, idx)
    terms = rt.all_reduce_sum(terms) / rt.world
    log.add(terms, epoch=epoch, it=it, lr=lr)
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
    return lr, idx, out, terms


def _dry_steps(budget: int | None, start_iter: int, iters: int) -> int:
    """The iteration to stop before: ``iters``, or in a dry run ``start_iter + budget`` (the steps left)."""
    return iters if budget is None else min(iters, start_iter + max(budget, 0))


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
        return {
            "loss": self.loss,
            "rec": self.rec,
            "unif": self.unif,
            "lr": self.lr,
            "steps": self.steps,
            "seconds": self.seconds,
        }


def _call_model(model: nn.Module, x: torch.Tensor, mask_ratio, generator) -> dict:
    out = model(x, mask_ratio=mask_ratio, generator=generator)
    if not isinstance(out, dict) or "loss" not in out:
        raise ParameterError(
            "model", "a module whose forward returns a dict with 'loss' (maelab.models interface)", type(out).__name__
        )
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
    budget: int | None = None  # dry run: optimiser steps left in this run (None: no cap)
    caps: DryRunLimits | None = None  # the dry run's caps (None: a real run)

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
    log = _LossLog(rt.device, (acc.loss, acc.rec, acc.unif), _log_every(cfg, rt), epochs=cfg.epochs, iters=iters)
    if not start_iter:
        run.probe_counts = torch.zeros(2, dtype=torch.float64, device=rt.device)
    stop = _dry_steps(run.budget, start_iter, iters)
    t0 = time.perf_counter()
    for it in range(start_iter, stop):
        lr, idx, out, _ = _optimizer_step(
            rt=rt,
            cfg=cfg,
            opt=run.opt,
            scaler=run.scaler,
            params_of=run.base,
            peak=run.peak,
            epoch=epoch,
            it=it,
            iters=iters,
            images=run.images,
            perm=perm,
            aug_gen=run.aug_gen,
            forward=run.forward,
            loss_terms=run.loss_terms,
            log=log,
            batch_cap=run.caps.train_batch if run.caps is not None else None,
        )
        if run.hnet is not None:
            _probe_step(run, lr, idx, out)
        acc.lr += lr
        acc.steps += 1
        bar.update(1)
        step = epoch * iters + it + 1
        if (
            run.ckpt is not None
            and cfg.checkpoint_every_iters
            and step % cfg.checkpoint_every_iters == 0
            and it + 1 < iters
            and run.budget is None
        ):
            acc.loss, acc.rec, acc.unif = log.check()
            acc.seconds += time.perf_counter() - t0
            _save(run, epoch, it + 1, acc)
            t0 = time.perf_counter()
    acc.loss, acc.rec, acc.unif = log.check()
    acc.seconds += time.perf_counter() - t0
    if run.budget is not None:
        run.budget -= stop - start_iter
    _end_epoch(run, epoch + 1, acc, bar)


def _end_epoch(run: _Run, done: int, acc: _Acc, bar) -> None:
    """After ``done`` completed epochs: probe accuracies, history record, callbacks, snapshot, checkpoint."""
    cfg, rt, base, head = run.cfg, run.rt, run.base, run.head
    online = None
    if head is not None:
        c = rt.all_reduce_sum(run.probe_counts.clone()).tolist()
        online = c[0] / c[1] if c[1] else None
    ev = None
    if run.eval_images is not None and _evaluates(done, cfg.eval_every, cfg.epochs, run.caps is not None):
        base.eval()
        head.eval()
        ev = _accuracy(
            lambda z: base.forward_features(z, pool=cfg.probe_pool),
            head,
            run.eval_images,
            run.eval_labels,
            cfg.eval_batch_size,
            rt,
            run.caps.eval_images if run.caps is not None else None,
        )
        base.train()
        head.train()
    steps = acc.steps or float("nan")  # 0 only in a dry run's step-less epochs: NaN means, not a division error
    done_iters = run.iters if run.budget is None else acc.steps
    rec = {
        "epoch": done,
        "loss": acc.loss / steps,
        "loss_rec": acc.rec / steps,
        "loss_unif": acc.unif / steps,
        "lr": acc.lr / steps,
        "online_acc": online,
        "eval_online_acc": ev,
        "seconds": acc.seconds,
        "images_per_s": done_iters * run.global_batch / acc.seconds if acc.seconds > 0 else float("nan"),
    }
    if not acc.steps and run.history:
        # a dry run's step-less epoch (its steps are capped over the whole run): the weights did not change, so it
        # carries the last measured losses, and code reading "the last epoch's loss" runs as in a real run
        rec.update({k: run.history[-1][k] for k in ("loss", "loss_rec", "loss_unif")})
    run.history.append(rec)
    bar.set_postfix(epoch=done, loss=f"{rec['loss']:.4f}", refresh=False)
    for cb in run.callbacks:
        cb(done, base)
    if done in cfg.snapshot_epochs:
        run.snapshots[done] = _state_cpu(base)
    if run.ckpt is not None and (done == cfg.epochs or (done % cfg.checkpoint_every == 0 and run.budget is None)):
        _save(run, done, 0, None)
