"""Shared pieces of :mod:`maelab.data`: the :class:`Dataset` container, option checking, resizing, channel
conversion, seeded subsets and the fixed-chunk random streams used by the generated datasets."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .._validate import ParameterError, positive_int

SPLITS = ("train", "test")
SPLIT_ID = {"train": 0, "test": 1}


@dataclass
class Dataset:
    """An in-memory dataset.

    Attributes:
        images: float32 tensor (N, C, H, W), values in [0, 1].
        labels: int64 tensor (N,) of class ids in ``0..num_classes-1``, or None (unlabelled data).
        latents: dict of tensors whose first dimension is N (ground-truth generative factors), or None.
        name: the dataset name passed to :func:`maelab.data.load`.
        meta: plain-python description (split, seed, options, source, class names, licence, ...).
    """

    images: torch.Tensor
    labels: torch.Tensor | None
    latents: dict[str, torch.Tensor] | None
    name: str
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.images.shape[0])

    @property
    def num_classes(self) -> int | None:
        """Number of classes (``meta["num_classes"]``), or None for unlabelled data."""
        if self.labels is None:
            return None
        if "num_classes" in self.meta:
            return int(self.meta["num_classes"])
        return int(self.labels.max()) + 1 if len(self.labels) else 0

    @property
    def shape(self) -> tuple[int, ...]:
        """``images.shape`` as a tuple (N, C, H, W)."""
        return tuple(self.images.shape)

    def to(self, device) -> Dataset:
        """A copy with images, labels and latents on ``device`` (a string or ``torch.device``)."""
        from .._util import resolve_device

        dev = resolve_device(device) if isinstance(device, str) else torch.device(device)
        return dataclasses.replace(
            self,
            images=self.images.to(dev),
            labels=None if self.labels is None else self.labels.to(dev),
            latents=None if self.latents is None else {k: v.to(dev) for k, v in self.latents.items()},
            meta=dict(self.meta),
        )

    def subset(self, idx) -> Dataset:
        """Rows ``idx`` (a slice, a sequence / array / tensor of indices, or a boolean mask of length N) of
        images, labels and every latent. ``meta["subset_of"]`` records the parent length."""
        if isinstance(idx, slice):
            sel = idx
        else:
            t = torch.as_tensor(np.asarray(idx) if not torch.is_tensor(idx) else idx)
            if t.dtype == torch.bool:
                if t.shape != (len(self),):
                    raise ParameterError("idx", f"a boolean mask of length {len(self)}", tuple(t.shape))
                t = t.nonzero().flatten()
            elif t.dtype.is_floating_point or t.dtype.is_complex:
                raise ParameterError("idx", "a slice, integer indices or a boolean mask", str(t.dtype))
            t = t.long().flatten()
            if t.numel() and (int(t.min()) < -len(self) or int(t.max()) >= len(self)):
                raise ParameterError("idx", f"indices in [-{len(self)}, {len(self)})", (int(t.min()), int(t.max())))
            sel = t
        dev_sel = lambda x: sel if isinstance(sel, slice) else sel.to(x.device)
        meta = dict(self.meta)
        meta["subset_of"] = len(self)
        return dataclasses.replace(
            self,
            images=self.images[dev_sel(self.images)],
            labels=None if self.labels is None else self.labels[dev_sel(self.labels)],
            latents=None if self.latents is None else {k: v[dev_sel(v)] for k, v in self.latents.items()},
            meta=meta,
        )

    def __repr__(self) -> str:
        lat = "None" if self.latents is None else "{" + ", ".join(self.latents) + "}"
        return (
            f"Dataset(name={self.name!r}, split={self.meta.get('split')!r}, images={tuple(self.images.shape)}, "
            f"labels={'None' if self.labels is None else tuple(self.labels.shape)}, "
            f"num_classes={self.num_classes}, latents={lat})"
        )


# ---------------------------------------------------------------------------------------------- option checking
def check_options(dataset: str, options: dict[str, Any], allowed: dict[str, Any]) -> dict[str, Any]:
    """Merge ``options`` over the defaults in ``allowed``; unknown keywords raise ParameterError."""
    for key in options:
        if key not in allowed:
            raise ParameterError(f"options of {dataset!r}", "keywords among " + ", ".join(sorted(allowed)), key)
    out = dict(allowed)
    out.update(options)
    return out


def check_size(size: Any, name: str = "size") -> int:
    return positive_int(name, size)


def check_channels(channels: Any) -> int:
    if isinstance(channels, bool) or channels not in (1, 3):
        raise ParameterError("channels", "1 or 3", channels)
    return int(channels)


def check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ParameterError("seed", "a non-negative integer", seed)
    return int(seed)


def check_n(n: Any, available: int | None = None) -> int | None:
    if n is None:
        return None
    too_many = available is not None and isinstance(n, (int, np.integer)) and n > available
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1 or too_many:
        allowed = "None or a positive integer" + ("" if available is None else f" <= {available} (the split's size)")
        raise ParameterError("n", allowed, n)
    return int(n)


# ---------------------------------------------------------------------------------------------- image helpers
def to_channels(images: torch.Tensor, channels: int) -> torch.Tensor:
    """(N, C, H, W) with C in {1, 3} -> ``channels``. RGB -> grey uses ITU-R BT.601 luma
    (0.299 R + 0.587 G + 0.114 B, torchvision's ``rgb_to_grayscale``, same as PIL mode "L"); grey -> RGB repeats."""
    c = images.shape[1]
    if c == channels:
        return images
    if c == 1 and channels == 3:
        return images.expand(-1, 3, -1, -1).contiguous()
    if c == 3 and channels == 1:
        from torchvision.transforms.v2.functional import rgb_to_grayscale

        return rgb_to_grayscale(images, num_output_channels=1)
    raise ParameterError("channels", "1 or 3", channels)


def resize(images: torch.Tensor, size: int) -> torch.Tensor:
    """Bilinear resize of (N, C, H, W) to (size, size), antialiased when shrinking (``F.interpolate``);
    unchanged when already that size. Output clamped to [0, 1]."""
    if images.shape[-2:] == (size, size):
        return images
    shrinking = size < max(images.shape[-2:])
    out = torch.nn.functional.interpolate(
        images, size=(size, size), mode="bilinear", align_corners=False, antialias=shrinking
    )
    return out.clamp_(0.0, 1.0)


def seeded_subset(total: int, n: int | None, seed: int) -> np.ndarray:
    """Indices of the rows kept from a fixed dataset of ``total`` rows: all of them (n None) or the first ``n`` of
    a seeded permutation, sorted so the stored order is kept. Nested: a smaller n is a subset of a larger one."""
    if n is None:
        return np.arange(total)
    perm = np.random.default_rng(np.random.SeedSequence(seed)).permutation(total)
    return np.sort(perm[:n])


# ---------------------------------------------------------------------------------------------- random streams
def chunk_generator(seed: int, dataset_id: int, split: str, stream: int, chunk: int) -> torch.Generator:
    """A CPU ``torch.Generator`` for one fixed chunk of a generated dataset.

    The seed comes from numpy's ``SeedSequence(seed, spawn_key=(dataset_id, split, stream, chunk))``, whose
    output is specified to be stable across numpy versions and platforms, so image i of a given seed depends
    only on (seed, dataset, split, i) and never on how many images were asked for."""
    ss = np.random.SeedSequence(seed, spawn_key=(dataset_id, SPLIT_ID[split], stream, chunk))
    state = int(ss.generate_state(1, np.uint64)[0]) & ((1 << 63) - 1)
    g = torch.Generator(device="cpu")
    g.manual_seed(state)
    return g


def quantize_(images: torch.Tensor) -> torch.Tensor:
    """Round in place to the 256 levels k/255 of an 8-bit image (after clamping to [0, 1])."""
    return images.clamp_(0.0, 1.0).mul_(255.0).round_().div_(255.0)
