"""Learning-rate schedule and AdamW parameter groups (official MAE ``util/lr_sched.py``, ``util/lr_decay.py``).

* :func:`~maelab.train.lr_at`: linear warm-up then a half-cycle cosine to ``min_lr``, evaluated at a fractional epoch
  ``epoch + it / iters`` (set every iteration).
* :func:`~maelab.train.param_groups`: no weight decay on biases, 1-d parameters (norms) and ``NO_DECAY_PATTERNS``
  (timm's ``param_groups_weight_decay``), optionally with layer-wise lr decay (``lr_scale`` per group).
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Iterable

import torch.nn as nn

NO_DECAY_PATTERNS = ("*pos_embed", "*cls_token", "*mask_token", "*dist_token", "*reg_token")


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


def param_groups(
    model: nn.Module, weight_decay: float, *, layer_decay: float | None = None, no_weight_decay: Iterable[str] = ()
) -> list[dict]:
    """AdamW parameter groups: no decay on biases, 1-d parameters and ``NO_DECAY_PATTERNS`` (fnmatch on names).

    Without ``layer_decay`` this is timm's ``param_groups_weight_decay``. With it, every group also carries
    ``lr_scale = layer_decay ** (num_layers - layer_id)`` (official ``param_groups_lrd``; ``num_layers`` = number of
    ``blocks.i`` + 1), which :func:`~maelab.train.train` / :func:`~maelab.train.fine_tune` multiply into the
    scheduled lr. Frozen parameters (``requires_grad=False``) are left out.
    """
    from timm.optim import param_groups_weight_decay

    pats = _no_decay_patterns(model, no_weight_decay)
    if layer_decay is None or layer_decay == 1.0:
        return param_groups_weight_decay(model, weight_decay, no_weight_decay_list=pats)
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
            groups[key] = {
                "params": [],
                "weight_decay": 0.0 if no_wd else weight_decay,
                "lr_scale": layer_decay ** (num_layers - lid),
                "layer_id": lid,
            }
        groups[key]["params"].append(p)
    return [groups[k] for k in sorted(groups)]
