"""Derived seeds and the per-epoch data order.

Every random stream of a run (data order, masks, augmentation, global generators, probe and head initialisation)
has its own seed derived from ``(config.seed, purpose, ...)`` by ``numpy.random.SeedSequence``, so streams never
collide. The data order of an epoch is a pure function of ``(seed, epoch)``: identical on CPU and GPU, for any world
size, and trivially restored on resume.
"""

from __future__ import annotations

import numpy as np
import torch

# purposes for derived seeds (never reuse a number)
_DATA, _MASK, _AUG, _GLOBAL, _PROBE, _HEAD = range(6)


def _derive_seed(*keys: int) -> int:
    """A well-mixed 63-bit seed from non-negative integer keys (numpy SeedSequence)."""
    state = np.random.SeedSequence([int(k) for k in keys]).generate_state(2, dtype=np.uint32)
    return (int(state[0]) << 32 | int(state[1])) & (2**63 - 1)


def _epoch_permutation(seed: int, epoch: int, n: int) -> torch.Tensor:
    """The order of the ``n`` training images in ``epoch`` (``torch.randperm`` from a CPU generator)."""
    g = torch.Generator().manual_seed(_derive_seed(seed, _DATA, epoch))
    return torch.randperm(n, generator=g)
