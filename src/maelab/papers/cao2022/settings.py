"""Settings of the Cao, Xu & Clifton (2022) notebooks: ``cao_theory`` (Thm. 5.1 (a), Thm. 5.2, Prop. 3.1, exact) and
``cao_decoder`` (Fig. 3, Lemma 6.1 / Prop. 6.2 and Thm. 5.1 (b) on trained micro MAEs).

Plain frozen dataclasses: defaults are the ``cpu`` values, each field's one-line meaning is in
``metadata["doc"]``, and the class attributes ``SMOKE`` / ``GPU`` override a few fields for those profiles.
Edited only by the Cao notebooks' author.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar


def _f(default, doc: str):
    """A field with its one-line meaning (tuples are immutable, so they can be plain defaults)."""
    return dataclasses.field(default=default, metadata={"doc": doc})


@dataclasses.dataclass(frozen=True)
class CaoTheory:
    """Exact computations; all float64 numpy on one thread. Costs measured on the shared 2-core machine: the rate
    study (8 maps, n up to 128, 5 variants) ~15 s, the conditioning table (1-D n up to 128 and 2-D n up to 32)
    ~10 s, the selection study (4 + 4 images, 3 patch sides, 5 ranks, 8 draws) ~1 min."""

    SMOKE: ClassVar[dict] = {"ns": (8, 16, 32), "n_maps": 2, "tik_ns": (4, 8, 12, 16), "tik_ns_2d": (6, 8),
                             "tik_seeds": 2, "lr_patch_sides": (4, 8), "lr_ranks": (1, 2, 4), "lr_images": 2,
                             "lr_draws": 2}
    GPU: ClassVar[dict] = {"ns": (16, 24, 32, 48, 64, 96, 128, 192, 256), "n_maps": 16, "tik_seeds": 10,
                           "lr_images": 8, "lr_draws": 16}

    # Theorem 5.1 (a)
    ns: tuple = _f((16, 24, 32, 48, 64, 96, 128), "grid sides n of the feature maps (patches per side)")
    n_maps: int = _f(8, "random smooth feature maps (seeds) per variant; the rate's CI is over these")
    channels: int = _f(4, "channels d of each feature map")
    kernel: str = _f("gaussian", "kernel of eq. (13): 'gaussian' (RBF) or 'laplace' (exp(-|xi|_1 / w), (B_3))")
    width_grid: float = _f(1.0, "kernel width in grid units (patches) for the grid scaling")
    width_continuum: float = _f(0.1, "kernel width in unit-square coordinates for the continuum scaling")
    # Theorem 5.2
    tik_ns: tuple = _f((4, 6, 8, 10, 12, 16, 24, 32, 48, 64, 96, 128), "1-D grid sizes of the conditioning study")
    tik_ns_2d: tuple = _f((8, 12, 16, 24, 32), "2-D grid sides of the conditioning study (dense, <= 64)")
    tik_betas: tuple = _f((0.0, 1e-3, 1e-2, 1e-1, 1.0), "skip weights beta (0 = first kind)")
    tik_width: float = _f(0.1, "Gaussian kernel width in unit-square coordinates (a smoothing kernel)")
    tik_sigma: float = _f(1e-3, "standard deviation of the noise added to z")
    tik_seeds: int = _f(5, "noise draws (seeds) of the recovery experiment")
    claim_n: int = _f(32, "grid size n of the noise-amplification claim (1-D)")
    claim_beta: float = _f(1e-2, "skip weight beta of the noise-amplification claim")
    # Proposition 3.1
    lr_n: int = _f(8, "patches per side n (a permutation selects n of the n^2 patches)")
    lr_patch_sides: tuple = _f((4, 8, 16), "patch sides N_c (pixels); images are n N_c pixels wide")
    lr_ranks: tuple = _f((1, 2, 4, 8, 16), "ranks r (r <= N_c is the proposition's regime)")
    lr_images: int = _f(4, "images per kind (synthetic exactly rank r; natural grey crops truncated to rank r)")
    lr_draws: int = _f(8, "random selections per image, rank and kind")


@dataclasses.dataclass(frozen=True)
class CaoDecoder:
    """Trained micro MAEs (``maelab.models`` "mae", size ``model_size``) on ``dataset``; the training recipe is the
    coordinator's to set (``epochs``, ``batch_size``, ``lr``); analyses use ``n_images`` test images."""

    SMOKE: ClassVar[dict] = {"n_train": 256, "n_test": 64, "epochs": 1, "seeds": (0, 1), "n_images": 8}
    GPU: ClassVar[dict] = {"model_size": "small", "n_train": 10000, "epochs": 100, "seeds": (0, 1, 2, 3, 4),
                           "n_images": 256}

    dataset: str = _f("shapes", "training data (a maelab.data name)")
    model_size: str = _f("micro", "maelab.models size of every model on the page")
    n_train: int = _f(4000, "training images")
    n_test: int = _f(500, "test images (probe, metrics)")
    epochs: int = _f(30, "training epochs of every model")
    batch_size: int = _f(128, "batch size")
    lr: float = _f(1.5e-3, "peak learning rate (AdamW, cosine)")
    seeds: tuple = _f((0, 1, 2), "training seeds (>= 3 for the paired claims)")
    attn_norms: tuple = _f(("softmax", "exp", "linear"), "attention normalisations compared (Thm. 5.1 (b))")
    skip_scales: tuple = _f((1.0, 0.5), "residual (skip) weights compared (Thm. 5.2, scaled skip)")
    n_images: int = _f(64, "test images for Fig. 3, the layer changes and the decoder attention")
    mask_seed: int = _f(1234, "seed of the masks used by the analyses")
    checkpoint: str | None = _f(None, "path of an official mae_visualize_vit_base.pth for Fig. 3 (None: skip)")
    learned_margin: float = _f(0.1, "precondition: relative drop of the test reconstruction loss below the "
                                     "untrained model's (and probe accuracy above chance) for a model to count")


NOTEBOOKS: dict[str, type] = {"cao_theory": CaoTheory, "cao_decoder": CaoDecoder}
