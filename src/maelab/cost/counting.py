"""Counting: model FLOPs and dispatched ops of a training step, a fine-tuning step and a feature pass.

FLOPs are counted by ``torch.utils.flop_counter.FlopCounterMode`` on the real model (built by
:func:`maelab.models.create`), with the real input shape and mask ratio, on a ``meta``-device copy (no memory, no
arithmetic). Attention is routed through the *math* backend of ``scaled_dot_product_attention`` so that it is counted
as the matrix products it is, on every device (the fused CPU kernel is not counted by the flop counter). Only matrix
products and convolutions are counted (the flop counter's convention, "model FLOPs"): one multiply-add is 2 FLOPs; a
Linear layer costs 2 B in out forward and 4 B in out backward (input and weight gradients). A training step is
forward + backward; the AdamW update is excluded from the FLOPs (reported as ``optimizer_flops``) but its kernels
count in the op total. Ops: the non-view ATen operations one step dispatches (each launches at least one kernel on a
GPU in eager mode).

Counting is shape work in Python (about half a second per model and batch on this project's CPU); the plans count
each model shape once (:mod:`maelab.cost.cache`).
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from .._validate import ParameterError, in_range, positive_int

_ADAMW_FLOPS_PER_PARAM = 12  # AdamW: ~12 element-wise FLOPs per trainable parameter (below 1 % of a step here)


class _OpCounter(torch.utils._python_dispatch.TorchDispatchMode):
    """Counts dispatched non-view ATen ops (each launches at least one kernel on a GPU in eager mode)."""

    def __init__(self):
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not func.is_view and func not in (torch.ops.aten.detach.default, torch.ops.aten.lift_fresh.default):
            self.ops += 1
        return func(*args, **(kwargs or {}))


def count_flops(fn: Callable[[], Any]) -> tuple[int, int]:
    """Run ``fn()`` under ``FlopCounterMode`` with attention on the math backend; return (FLOPs, non-view ops)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    counter, ops = FlopCounterMode(display=False), _OpCounter()
    with sdpa_kernel(SDPBackend.MATH), counter, ops:
        fn()
    return int(counter.get_total_flops()), ops.ops


@dataclasses.dataclass(frozen=True)
class StepCost:
    """FLOPs and ops of one step: ``forward`` + ``backward`` = ``flops``; ``optimizer_flops`` (AdamW, estimated as
    12 per trainable parameter) is *not* part of ``flops``; ``ops`` counts forward, backward and optimizer ops."""

    forward: int
    backward: int
    ops: int
    optimizer_flops: int = 0

    @property
    def flops(self) -> int:
        return self.forward + self.backward


def _module_copy(model: nn.Module, tensor: Callable[[torch.Tensor], torch.Tensor]) -> nn.Module:
    """A deep copy of ``model``'s module tree whose parameters and buffers are ``tensor(t)`` of the originals
    (parameters stay parameters with their ``requires_grad``; shared ones stay shared).

    Why not ``copy.deepcopy(model).to(...)``: that copies every weight first, which was about half the time of a
    count; the counts need the shapes only."""
    if not isinstance(model, nn.Module):
        raise ParameterError("model", "a torch.nn.Module (e.g. from maelab.models.create)", type(model).__name__)
    memo: dict[int, Any] = {}
    for t in itertools.chain(model.parameters(), model.buffers()):
        new = tensor(t)
        memo[id(t)] = nn.Parameter(new, requires_grad=t.requires_grad) if isinstance(t, nn.Parameter) else new
    return copy.deepcopy(model, memo)


def _on_meta(model: nn.Module) -> nn.Module:
    """``model`` on the meta device (no memory, no arithmetic), in training mode, without gradients."""
    meta = _module_copy(model, lambda t: torch.empty_like(t, device="meta")).to("meta")
    meta.train()
    return meta


def _input(model: nn.Module, batch_size: int, device="meta") -> torch.Tensor:
    base = getattr(model, "backbone", model)  # EncoderClassifier -> its self-supervised model
    c, s = getattr(base, "in_chans", None), getattr(base, "img_size", None)
    if not isinstance(c, int) or not isinstance(s, int):
        raise ParameterError(
            "model", "a model with integer in_chans and img_size (maelab.models)", type(model).__name__
        )
    return torch.zeros(batch_size, c, s, s, device=device)


def _trainable(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _fwd_bwd(model: nn.Module, forward: Callable[[nn.Module], torch.Tensor]) -> StepCost:
    """Count forward and backward of ``forward(model)`` (a scalar loss), and AdamW's ops, on a meta copy."""
    meta = _on_meta(model)
    holder: dict[str, torch.Tensor] = {}
    f_flops, f_ops = count_flops(lambda: holder.update(loss=forward(meta)))
    b_flops, b_ops = count_flops(lambda: holder["loss"].backward())
    params = [p for p in meta.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, foreach=True)
    _, o_ops = count_flops(opt.step)
    return StepCost(
        forward=f_flops,
        backward=b_flops,
        ops=f_ops + b_ops + o_ops,
        optimizer_flops=_ADAMW_FLOPS_PER_PARAM * _trainable(meta),
    )


def step_flops(model: nn.Module, batch_size: int, *, mask_ratio: float | None = None) -> StepCost:
    """FLOPs of one self-supervised training step of ``model`` (forward + backward of ``model(x)["loss"]``) on a batch
    of ``batch_size`` images of the model's own shape, at ``mask_ratio`` (None: the model's own)."""
    positive_int("batch_size", batch_size)
    if mask_ratio is not None:
        in_range("mask_ratio", mask_ratio, 0.0, 1.0, high_open=True)
    return _fwd_bwd(model, lambda m: m(_input(m, batch_size), mask_ratio=mask_ratio)["loss"])


def finetune_step_flops(model: nn.Module, batch_size: int, *, num_classes: int = 10, pool: str = "cls") -> StepCost:
    """FLOPs of one end-to-end fine-tuning step (:func:`maelab.train.fine_tune`): the unmasked encoder
    (``forward_features``) + a Linear head, cross-entropy, backward through encoder and head (the decoder is unused)."""
    from .. import models

    positive_int("batch_size", batch_size)
    positive_int("num_classes", num_classes, minimum=2)
    clf = models.create_encoder_classifier(model, num_classes, pool=pool)

    def forward(m):
        x = _input(m, batch_size)
        return F.cross_entropy(m(x), torch.zeros(batch_size, dtype=torch.long, device=x.device))

    return _fwd_bwd(clf, forward)


def eval_flops(model: nn.Module, n_images: int, *, batch_size: int = 256, pool: str = "cls") -> tuple[int, int]:
    """(FLOPs, ops) of a no-grad ``forward_features`` pass (no masking: probes, k-NN, feature extraction) over
    ``n_images`` images in batches of ``batch_size`` (the last batch smaller)."""
    positive_int("n_images", n_images, minimum=0)
    positive_int("batch_size", batch_size)
    if n_images == 0:
        return 0, 0
    meta = _on_meta(model).eval()
    full, rest = divmod(n_images, batch_size)
    flops = ops = 0
    for b, times in ((batch_size, full), (rest, 1)):
        if b and times:
            with torch.no_grad():
                f, o = count_flops(lambda b=b: meta.forward_features(_input(meta, b), pool))
            flops, ops = flops + f * times, ops + o * times
    return flops, ops
