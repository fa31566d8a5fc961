"""Peak memory of a training step: parameters, gradients, AdamW state, saved activations and resident data.

Parameters + gradients + the two AdamW moment buffers (float32) + activations saved for the backward pass + the
dataset when it is resident on the device. Activations are *measured*: on CUDA with ``torch.cuda.max_memory_allocated``
over one real step; elsewhere by summing the distinct storages that autograd saves
(``torch.autograd.graph.saved_tensors_hooks``) during the forward at the real batch size, run on fake CPU tensors
(``FakeTensorMode``: exact shapes, dtypes and storage sharing, no memory; under CPU bf16 autocast when
``amp="bf16"``, whose casting lists are close to, not identical with, CUDA's). This misses the transient gradient
buffers of the backward pass, allocator rounding and the CUDA context (~0.5 GB), so read it as a lower estimate; it
is exact in what it counts.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import itertools
from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from .._validate import one_of, positive_int
from .counting import _input, _module_copy, _trainable


@dataclasses.dataclass(frozen=True)
class MemoryEstimate:
    """Bytes: ``params`` (all), ``grads`` and ``optimizer`` (AdamW's two moments, trainable parameters, float32),
    ``activations`` (saved for backward), ``data`` (dataset resident on the device); ``method`` says how
    activations were obtained."""

    params: int
    grads: int
    optimizer: int
    activations: int
    data: int
    method: str

    @property
    def total(self) -> int:
        return self.params + self.grads + self.optimizer + self.activations + self.data


def _saved_bytes(
    model: nn.Module, batch_size: int, amp: str, step: Callable[[nn.Module, torch.Tensor], Any], fake: bool = True
) -> int:
    """Bytes of the distinct non-parameter storages autograd saves during one forward of ``step`` on the CPU (under
    CPU bf16 autocast when ``amp="bf16"``). ``fake=True`` runs it on fake tensors (``FakeTensorMode``: shapes,
    dtypes and storage sharing without memory or arithmetic, so any batch size is instant); ``fake=False`` runs it
    for real (the reference the fake measurement is tested against)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.func import functional_call

    seen: dict[int, int] = {}

    def pack(t):
        st = t.untyped_storage()
        seen[st._cdata] = max(seen.get(st._cdata, 0), st.nbytes())
        return t

    mode = FakeTensorMode() if fake else contextlib.nullcontext()
    with mode:
        conv = mode.from_tensor if fake else (lambda t: t)
        params = {k: nn.Parameter(conv(v), requires_grad=v.requires_grad) for k, v in model.named_parameters()}
        state = {**params, **{k: conv(v) for k, v in model.named_buffers()}}
        x = _input(model, batch_size, device="cpu")
        with (
            torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t),
            torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp == "bf16"),
        ):
            step(lambda *a, **kw: functional_call(model, state, a, kw), x)
    skip = {p.untyped_storage()._cdata for p in params.values()}
    return sum(v for k, v in seen.items() if k not in skip)


def _cuda_peak(model: nn.Module, batch_size: int, amp: str, step: Callable) -> int:
    dev = torch.device("cuda")
    m = copy.deepcopy(model).to(dev).train()
    opt = torch.optim.AdamW([p for p in m.parameters() if p.requires_grad], lr=1e-4)
    torch.cuda.synchronize(dev)
    torch.cuda.reset_peak_memory_stats(dev)
    base = torch.cuda.memory_allocated(dev)
    x = _input(m, batch_size, device=dev)
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp == "bf16"):
        loss = step(m, x)
    loss.backward()
    opt.step()
    torch.cuda.synchronize(dev)
    peak = torch.cuda.max_memory_allocated(dev) - base
    del m, opt, loss
    torch.cuda.empty_cache()
    return int(peak)


def _pretrain_loss(mask_ratio):
    return lambda call, x: call(x, mask_ratio=mask_ratio)["loss"]


def _finetune_loss(num_classes):
    def loss(call, x):
        return F.cross_entropy(call(x), torch.zeros(x.shape[0], dtype=torch.long, device=x.device))

    return loss


def peak_memory_bytes(
    model: nn.Module,
    batch_size: int,
    *,
    mask_ratio: float | None = None,
    amp: str = "bf16",
    kind: str = "pretrain",
    num_classes: int = 10,
    data_images: int = 0,
    measure_cuda: bool = True,
) -> MemoryEstimate:
    """Peak memory of one training step of ``model`` (``kind`` "pretrain" or "finetune") at ``batch_size``.

    ``amp``: "bf16" (the CUDA default) or "off" (float32). ``data_images``: images kept on the device (float32).
    With CUDA available and ``measure_cuda``, the whole step above the model's own memory is measured with
    ``torch.cuda.max_memory_allocated`` (``method="cuda max_memory_allocated"``; ``grads`` and ``optimizer`` are then
    inside ``activations``). Otherwise activations are the bytes autograd saves during the forward at
    ``batch_size``, run on fake CPU tensors (see the module docstring).
    """
    from .. import models

    positive_int("batch_size", batch_size)
    positive_int("data_images", data_images, minimum=0)
    one_of("amp", amp, ("bf16", "off"))
    one_of("kind", kind, ("pretrain", "finetune"))
    net = models.create_encoder_classifier(model, num_classes) if kind == "finetune" else model
    step = _finetune_loss(num_classes) if kind == "finetune" else _pretrain_loss(mask_ratio)
    img = model.in_chans * model.img_size**2 * 4
    n_all = sum(p.numel() for p in net.parameters())
    n_tr = _trainable(net)
    params = n_all * 4
    if measure_cuda and torch.cuda.is_available():
        act = _cuda_peak(net, batch_size, amp, step)
        return MemoryEstimate(params, 0, 0, act, data_images * img, "cuda max_memory_allocated")
    on_cpu = all(t.device.type == "cpu" for t in itertools.chain(net.parameters(), net.buffers()))
    # _saved_bytes runs on fake copies of the weights: a CPU model's own tensors are shared, not copied
    cpu = _module_copy(net, lambda t: t) if on_cpu else copy.deepcopy(net).cpu()
    act = _saved_bytes(cpu.train(), batch_size, amp, step)
    return MemoryEstimate(
        params,
        n_tr * 4,
        2 * n_tr * 4,
        act,
        data_images * img,
        f"saved tensors on fake CPU tensors ({'bf16 autocast' if amp == 'bf16' else 'float32'})",
    )
