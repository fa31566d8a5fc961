"""``ising``: equilibrium configurations of the 2-D Ising model on an L x L torus (J = 1, no field, k_B = 1).

Energy ``E = -sum_<ij> s_i s_j`` over the 2 L^2 nearest-neighbour bonds; temperature ``T`` (default the critical
point ``T_C = 2 / ln(1 + sqrt 2) = 2.2692``). Samples come from the **Swendsen-Wang** cluster algorithm (Swendsen &
Wang 1987): every satisfied bond is activated with probability ``1 - exp(-2 / T)``, the connected clusters of the
active bonds (``scipy.sparse.csgraph.connected_components`` on the periodic bond graph) are each flipped with
probability 1/2. One sweep updates every spin; near ``T_C`` its autocorrelation time grows only like L^0.2-0.3
instead of the L^2 of single-spin Metropolis, so nearby samples decorrelate in a few sweeps.

``chains`` independent chains (default 16) run side by side in one vectorised graph (a block-diagonal union of
the chains' lattices). Each starts from random spins, is updated ``burn_in`` sweeps (default 100), then records a
configuration every ``thin`` sweeps (default 10). Sample i is chain ``i % chains`` at record ``i // chains``, i.e.
after ``burn_in + (i // chains + 1) * thin`` sweeps; the RNG is numpy's PCG64 seeded from
``SeedSequence(seed, spawn_key=(3, split))``, so sample i does not depend on n and train / test are independent.

Returned: ``images`` (N, channels, L, L) float32 = (s + 1) / 2 in {0, 1}; ``labels`` None; ``latents``:
``spins`` int8 (N, L, L) in {-1, +1}, ``energy`` and ``magnetisation`` per spin (float64, (N,)), ``chain`` and
``sweep`` (int64). Exact references for tests and notebooks: Onsager's energy per spin at ``T_C`` is ``-sqrt 2``
and the spontaneous magnetisation below ``T_C`` is ``(1 - sinh(2 / T)^-4)^(1/8)`` (Yang 1952).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .._validate import in_range, positive_int
from ._common import SPLIT_ID, Dataset, check_channels, check_options

T_C = 2.0 / math.log(1.0 + math.sqrt(2.0))
DATASET_ID = 3
DEFAULT_N = {"train": 1000, "test": 500}
OPTIONS = {"L": 32, "T": T_C, "burn_in": 100, "thin": 10, "chains": 16, "channels": 1}


def energy_per_spin(spins: np.ndarray) -> np.ndarray:
    """``-(1 / L^2) sum_<ij> s_i s_j`` on the torus for spins (..., L, L) in {-1, +1}."""
    s = spins.astype(np.int64)
    bonds = s * np.roll(s, -1, axis=-1) + s * np.roll(s, -1, axis=-2)
    return -bonds.sum(axis=(-2, -1)) / (s.shape[-1] * s.shape[-2])


def swendsen_wang_sweep(spins: np.ndarray, T: float, rng: np.random.Generator) -> np.ndarray:
    """One Swendsen-Wang update of a batch of independent lattices ``spins`` (B, L, L) int8 in {-1, +1}
    (periodic boundaries), in place; returns ``spins``."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    B, L, W = spins.shape
    p_bond = -math.expm1(-2.0 / T)
    node = np.arange(B * L * W).reshape(B, L, W)
    u = rng.random((2, B, L, W))
    right = (spins == np.roll(spins, -1, axis=2)) & (u[0] < p_bond)
    down = (spins == np.roll(spins, -1, axis=1)) & (u[1] < p_bond)
    rows = np.concatenate([node[right], node[down]])
    cols = np.concatenate([np.roll(node, -1, axis=2)[right], np.roll(node, -1, axis=1)[down]])
    graph = coo_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(node.size, node.size)).tocsr()
    n_clusters, cluster = connected_components(graph, directed=False)
    flip = rng.random(n_clusters) < 0.5
    spins[flip[cluster].reshape(B, L, W)] *= -1
    return spins


def generate(split: str, n: int | None, seed: int, options: dict, progress: bool | None = None) -> Dataset:
    o = check_options("ising", options, OPTIONS)
    L = positive_int("L", o["L"], minimum=2)
    T = in_range("T", o["T"], 0.0, None, low_open=True)
    burn_in = positive_int("burn_in", o["burn_in"], minimum=0)
    thin = positive_int("thin", o["thin"])
    chains = positive_int("chains", o["chains"])
    channels = check_channels(o["channels"])
    n = DEFAULT_N[split] if n is None else n

    from .._util import pbar

    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(DATASET_ID, SPLIT_ID[split]))))
    spins = np.where(rng.random((chains, L, L)) < 0.5, -1, 1).astype(np.int8)
    records = -(-n // chains)
    out = np.empty((records * chains, L, L), dtype=np.int8)
    total = burn_in + records * thin
    for sweep in pbar(range(1, total + 1), progress=progress, desc=f"ising L={L} T={T:.3f}", leave=False):
        swendsen_wang_sweep(spins, T, rng)
        if sweep > burn_in and (sweep - burn_in) % thin == 0:
            t = (sweep - burn_in) // thin - 1
            out[t * chains : (t + 1) * chains] = spins
    out = out[:n]
    idx = np.arange(n)
    latents = {
        "spins": torch.from_numpy(out.copy()),
        "energy": torch.from_numpy(energy_per_spin(out)),
        "magnetisation": torch.from_numpy(out.astype(np.float64).mean(axis=(1, 2))),
        "chain": torch.from_numpy(idx % chains),
        "sweep": torch.from_numpy(burn_in + (idx // chains + 1) * thin),
    }
    images = torch.from_numpy(out).float().add_(1.0).mul_(0.5).unsqueeze(1)
    if channels == 3:
        images = images.expand(-1, 3, -1, -1).contiguous()
    meta = {
        "split": split,
        "seed": seed,
        "n": n,
        "num_classes": None,
        "value_range": (0.0, 1.0),
        "options": {"L": L, "T": T, "burn_in": burn_in, "thin": thin, "chains": chains, "channels": channels},
        "T_c": T_C,
        "algorithm": "Swendsen-Wang",
        "spin_to_pixel": "(s + 1) / 2",
        "source": "simulated (maelab.data.ising)",
    }
    return Dataset(images=images, labels=None, latents=latents, name="ising", meta=meta)
