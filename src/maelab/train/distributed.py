"""Runtime of a run: device, ``torch.distributed`` (DDP), mixed precision, and launching under ``torchrun``.

On CUDA: bf16 autocast by default (``amp="auto"``; fp16 with a GradScaler on request), TF32 matmuls, fused AdamW
(``_Runtime.adamw``), NCCL for DDP; the data sets live on the device (the trainer moves them there once).

When ``torch.distributed`` is initialised (e.g. by ``torchrun``; ``python -m maelab.train`` initialises it from the
environment, ``_init_distributed_from_env``) the model and the probe head are wrapped in
``DistributedDataParallel`` (``_Runtime.wrap``), logged metrics are all-reduced
(``_Runtime.all_reduce_sum``), and only rank 0 writes checkpoints and shows progress.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

import torch
import torch.nn as nn

from .._util import cuda_precision, resolve_device
from .._validate import ParameterError


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
    def create(cls, device: str | torch.device, amp: str) -> _Runtime:
        rank, world = (torch.distributed.get_rank(), torch.distributed.get_world_size()) if _dist_active() else (0, 1)
        dev = device if isinstance(device, torch.device) else resolve_device(device)
        if dev.type == "cuda" and dev.index is None:
            local = int(os.environ.get("LOCAL_RANK", torch.cuda.current_device() if world == 1 else rank))
            dev = torch.device("cuda", local % max(torch.cuda.device_count(), 1))
        if dev.type == "cuda":  # a torch.device given whole did not pass resolve_device
            cuda_precision()
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

    def adamw(self, groups, **kwargs) -> torch.optim.Optimizer:
        """AdamW over ``groups``: the fused single-kernel implementation on CUDA (no per-parameter host sync, and
        GradScaler passes it the inf check without a sync), PyTorch's default (foreach) on the CPU, whose numbers
        every stored cpu result was computed with."""
        if self.device.type == "cuda":
            kwargs["fused"] = True
        return torch.optim.AdamW(groups, **kwargs)

    def wrap(self, module: nn.Module, find_unused: bool = False) -> nn.Module:
        if self.world == 1:
            return module
        from torch.nn.parallel import DistributedDataParallel as DDP

        ids = [self.device.index] if self.device.type == "cuda" else None
        return DDP(module, device_ids=ids, find_unused_parameters=find_unused)


def _init_distributed_from_env(device: str) -> bool:
    """Initialise torch.distributed when launched by torchrun (WORLD_SIZE > 1); returns True if this call did."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or _dist_active():
        return False
    use_cuda = torch.cuda.is_available() and device != "cpu"
    if use_cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    torch.distributed.init_process_group(backend="nccl" if use_cuda else "gloo")
    return True
