"""Self-supervised pre-training: :func:`~maelab.train.train` and what it returns, :class:`~maelab.train.TrainResult`.

:func:`~maelab.train.train` sets a run up (``_setup``: data on the device, online probe, optimisers, generators),
resumes it from its checkpoint or starts it (callbacks and snapshot at epoch 0), then runs the epochs
(``maelab.train.loop._run_epoch``). The order in which random streams are created and used is part of the
contract (bit-identical runs for the same seed on CPU); do not reorder the set-up.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn

from .._util import pbar, seed_everything
from .._validate import ParameterError, is_bool
from ..options import DryRunLimits
from .checkpoint import _fingerprint, _resume, load_checkpoint
from .config import TrainConfig
from .distributed import _Runtime
from .loop import _data_tensors, _num_classes, _Run, _run_epoch, _state_cpu
from .schedule import param_groups
from .seeds import _AUG, _GLOBAL, _MASK, _PROBE, _derive_seed


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


def _probe_for(
    base: nn.Module, data, images: torch.Tensor, labels: torch.Tensor, cfg: TrainConfig, rt: _Runtime
) -> nn.Module:
    """The online probe head on the device: width from ``embed_dim`` (else one forward), classes from the data."""
    dim = getattr(base, "embed_dim", None)
    if not isinstance(dim, int):
        base.eval()
        with torch.no_grad():
            dim = int(base.forward_features(images[:2], pool=cfg.probe_pool).shape[-1])
        base.train()
    return _make_probe(dim, _num_classes(data, labels), cfg.probe_bn, _derive_seed(cfg.seed, _PROBE)).to(rt.device)


def _setup(
    model: nn.Module,
    data,
    cfg: TrainConfig,
    *,
    eval_data,
    checkpoint_dir,
    device: str,
    callbacks: Sequence[Callable],
    caps: DryRunLimits | None = None,
) -> _Run:
    """Validate the data, put it and the model on the device, seed, build probe, optimisers and generators."""
    rt = _Runtime.create(device, cfg.amp)
    labelled = getattr(data, "labels", None) is not None
    use_probe = labelled if cfg.online_probe is None else cfg.online_probe
    images, labels = _data_tensors(data, "data", rt.device, need_labels=use_probe)
    eval_images = eval_labels = None
    if eval_data is not None and use_probe:
        eval_images, eval_labels = _data_tensors(eval_data, "eval_data", rt.device, need_labels=True)
    elif eval_data is not None:
        warnings.warn("eval_data is ignored: the online probe is off (no labels or online_probe=False)", stacklevel=3)
    n, gb = images.shape[0], cfg.batch_size * rt.world
    iters = n // gb
    if iters == 0:
        allowed = f"at most {n // rt.world} (dataset size {n}" + (f", world size {rt.world})" if rt.world > 1 else ")")
        raise ParameterError("batch_size", allowed, cfg.batch_size)
    peak = cfg.peak_lr(rt.world)
    probe_peak = peak if cfg.probe_blr is None else cfg.probe_blr * gb / 256

    base = model.to(rt.device)
    base.train()
    seed_everything(_derive_seed(cfg.seed, _GLOBAL, rt.rank))
    head = _probe_for(base, data, images, labels, cfg, rt) if use_probe else None
    opt = rt.adamw(param_groups(base, cfg.weight_decay), lr=peak, betas=cfg.betas)
    popt = rt.adamw(param_groups(head, cfg.weight_decay), lr=probe_peak, betas=cfg.betas) if head else None
    return _Run(
        cfg=cfg,
        rt=rt,
        base=base,
        head=head,
        opt=opt,
        popt=popt,
        scaler=torch.amp.GradScaler("cuda") if rt.amp_dtype == torch.float16 else None,
        mask_gen=torch.Generator(device=rt.device).manual_seed(_derive_seed(cfg.seed, _MASK, rt.rank)),
        aug_gen=torch.Generator().manual_seed(_derive_seed(cfg.seed, _AUG, rt.rank)),
        images=images,
        labels=labels,
        eval_images=eval_images,
        eval_labels=eval_labels,
        iters=iters,
        peak=peak,
        probe_peak=probe_peak,
        ckpt=Path(checkpoint_dir) / "last.pt" if checkpoint_dir is not None else None,
        fingerprint=_fingerprint(images),
        callbacks=tuple(callbacks),
        probe_counts=torch.zeros(2, dtype=torch.float64, device=rt.device),
        budget=caps.train_steps if caps is not None else None,
        caps=caps,
    )


def train(
    model: nn.Module,
    data,
    config: TrainConfig | None = None,
    *,
    eval_data=None,
    checkpoint_dir: str | os.PathLike | None = None,
    resume: bool = True,
    device: str = "auto",
    progress: bool | None = None,
    callbacks: Sequence[Callable[[int, nn.Module], Any]] = (),
    caps: DryRunLimits | None = None,
) -> TrainResult:
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
        progress: tqdm bar on rank 0 (None = on unless in CI, see ``maelab._util.progress_enabled``).
        callbacks: functions ``f(epoch, model)`` called on every rank with the unwrapped model, with 0 before the
            first epoch of a fresh run and with e after epoch e (after evaluation, before checkpointing).
        caps: a dry run's caps (:class:`maelab.options.DryRunLimits`; None: a real run): at most ``train_steps``
            optimiser steps in all, each on the first ``train_batch`` images of its batch; the online probe
            evaluated on ``eval_images`` images at the first evaluation epoch and the last only; only the last
            epoch writes a checkpoint. Pass ``checkpoint_dir`` inside ``caps.scratch_dir``
            (:func:`default_checkpoint_dir` with ``caps`` does).

    Returns:
        :class:`TrainResult`.

    Raises:
        maelab.ParameterError: bad config/data (e.g. ``batch_size * world_size`` > dataset size, labels missing while
            the probe is on, a checkpoint written with a different configuration or dataset).
        CheckpointError: ``checkpoint_dir/last.pt`` is empty, truncated, corrupt, holds python objects, or was written
            for another model (a :class:`~maelab.ParameterError`; delete the file or pass ``resume=False``).
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
    run = _setup(
        model,
        data,
        cfg,
        eval_data=eval_data,
        checkpoint_dir=checkpoint_dir,
        device=device,
        callbacks=callbacks,
        caps=caps,
    )
    start_epoch, start_iter, partial, resumed_from = 0, 0, None, None
    if run.ckpt is not None and resume and run.ckpt.exists():
        start_epoch, start_iter, partial = _resume(run, load_checkpoint(run.ckpt))
        resumed_from = (start_epoch, start_iter)
    else:
        for cb in run.callbacks:
            cb(0, run.base)
        if 0 in cfg.snapshot_epochs:
            run.snapshots[0] = _state_cpu(run.base)
    run.net = run.rt.wrap(torch.compile(run.base) if cfg.compile else run.base, cfg.find_unused_parameters)
    run.hnet = run.rt.wrap(run.head) if run.head is not None else None

    total = cfg.epochs * run.iters
    bar = pbar(
        total=total,
        initial=min(start_epoch * run.iters + start_iter, total),
        desc="train",
        unit="step",
        progress=progress if run.rt.rank == 0 else False,
    )
    try:
        for epoch in range(start_epoch, cfg.epochs):
            _run_epoch(run, epoch, start_iter, partial, bar)
            start_iter, partial = 0, None
    finally:
        bar.close()
    run.base.eval()
    if run.head is not None:
        run.head.eval()
    return TrainResult(
        model=run.base,
        history=run.history,
        config=cfg,
        probe=run.head,
        snapshots=run.snapshots,
        checkpoint=run.ckpt,
        resumed_from=resumed_from,
    )
