"""Settings of the Cao, Xu & Clifton (2022) notebooks: ``cao_theory`` (Thm. 5.1 (a), Thm. 5.2, Prop. 3.1; exact)
and ``cao_decoder`` (trained micro MAEs: Fig. 3, Thm. 5.1 (b), Thm. 5.2 on trained models, Lemma 6.1 / Prop. 6.2).

Each class holds the ``cpu`` values as defaults and ``SMOKE`` / ``GPU`` overrides; see :mod:`maelab.profiles`.
Edited only by the Cao notebooks' author.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..._validate import ParameterError
from ...profiles import (
    NotebookSettings,
    is_choice,
    is_int,
    is_list,
    is_number,
    is_ratio,
    is_str,
    notebook_settings,
    optional,
    setting,
)

_POSITIVE = is_number(0.0, low_open=True)
DENSE_MAX = 64  # largest 2-D grid side (and image side of the deficiency table) computed with dense matrices
#: The input side of the official ViT-B (``maelab.models.SIZES["vit_base"]["img_size"]``, checked by a test; not
#: imported here: settings modules stay free of torch).
VIT_B_SIZE = 224


@notebook_settings
class CaoTheorySettings(NotebookSettings):
    """Exact computations; all float64 numpy on one thread. Costs measured on the shared 2-core machine: the rate
    study (8 maps, n up to 128, 4 variants) ~15 s, the conditioning table (1-D n up to 128 and 2-D n up to 32)
    ~10 s, the selection study (4 + 4 images, 3 patch sides, 5 ranks, 8 draws) ~1 min (the page shows the measured
    times). smoke: fewer sizes, maps and draws. gpu: nothing here uses a GPU; more sizes, maps and draws."""

    SMOKE = {
        "ns": [8, 16, 32],
        "n_maps": 2,
        "tik_ns": [4, 8, 12, 16],
        "tik_ns_2d": [6, 8],
        "tik_seeds": 2,
        "lr_patch_sides": [4, 8],
        "lr_ranks": [1, 2, 4],
        "lr_images": 2,
        "lr_draws": 2,
    }
    GPU = {"ns": [16, 24, 32, 48, 64, 96, 128, 192, 256], "n_maps": 16, "tik_seeds": 10, "lr_images": 8, "lr_draws": 16}

    # Theorem 5.1 (a)
    ns: tuple = setting(
        [16, 24, 32, 48, 64, 96, 128],
        "grid sides n of the feature maps (patches per side)",
        is_list(is_int(2), min_len=3, increasing=True, why="the rate is a log-log fit over n"),
    )
    n_maps: int = setting(
        8, "random smooth feature maps (seeds) per variant; the rate's error bar is over these", is_int(2)
    )
    channels: int = setting(4, "channels d of each feature map", is_int())
    kernel: str = setting(
        "gaussian",
        "kernel of eq. (13): 'gaussian' (RBF) or 'laplace' (exp(-|xi|_1 / w), (B_3))",
        is_choice("gaussian", "laplace"),
    )
    width_grid: float = setting(1.0, "kernel width in grid units (patches) for the grid scaling", _POSITIVE)
    width_continuum: float = setting(
        0.1, "kernel width in unit-square coordinates for the continuum scaling", _POSITIVE
    )
    # Theorem 5.2
    tik_ns: tuple = setting(
        [4, 6, 8, 10, 12, 16, 24, 32, 48, 64, 96, 128],
        "1-D grid sizes of the conditioning study",
        is_list(is_int(2), min_len=2, increasing=True, why="the ill-posedness claim is a trend over n"),
    )
    tik_ns_2d: tuple = setting(
        [8, 12, 16, 24, 32],
        f"2-D grid sides of the conditioning study (dense, <= {DENSE_MAX})",
        is_list(is_int(2), increasing=True),
    )
    tik_betas: tuple = setting(
        [0.0, 1e-3, 1e-2, 1e-1, 1.0],
        "skip weights beta (must hold 0 = first kind and a beta > 0)",
        is_list(is_number(0.0), min_len=2, increasing=True),
    )
    tik_width: float = setting(0.1, "Gaussian kernel width in unit-square coordinates (a smoothing kernel)", _POSITIVE)
    tik_sigma: float = setting(1e-3, "standard deviation of the noise added to z", _POSITIVE)
    tik_seeds: int = setting(5, "noise draws (seeds) of the recovery experiment (>= 2 for the paired claim)", is_int(2))
    claim_n: int = setting(32, "grid size n of the noise-amplification claim (1-D)", is_int(2))
    claim_beta: float = setting(1e-2, "skip weight beta of the noise-amplification claim (> 0)", _POSITIVE)
    # Proposition 3.1
    lr_n: int = setting(8, "patches per side n (a permutation selects n of the n^2 patches)", is_int(2))
    lr_patch_sides: tuple = setting(
        [4, 8, 16], "patch sides N_c (pixels); images are n N_c pixels wide", is_list(is_int(), increasing=True)
    )
    lr_ranks: tuple = setting(
        [1, 2, 4, 8, 16], "ranks r (r <= N_c is the proposition's regime)", is_list(is_int(), increasing=True)
    )
    lr_images: int = setting(
        4, "images per kind (synthetic exactly rank r; natural grey crops truncated to rank r)", is_int(2)
    )
    lr_draws: int = setting(8, "random selections per image, rank and kind", is_int())

    def validate(self) -> None:
        if self.tik_betas[0] != 0.0:
            raise ParameterError(
                "tik_betas", "a list starting at 0.0 (the first-kind equation the claims compare with)", self.tik_betas
            )
        if self.tik_ns_2d[-1] > DENSE_MAX:
            raise ParameterError("tik_ns_2d", f"sides <= {DENSE_MAX} (dense matrices of side n^2)", self.tik_ns_2d)
        if self.lr_n * self.lr_patch_sides[0] > DENSE_MAX:
            raise ParameterError(
                "lr_patch_sides",
                f"a smallest side N_c with lr_n * N_c <= {DENSE_MAX} (the exact deficiency table)",
                self.lr_patch_sides,
            )
        if 2 * self.lr_ranks[0] > self.lr_patch_sides[-1]:
            raise ParameterError(
                "lr_ranks", "a rank r with 2 r <= some N_c (the embedding-existence claim)", self.lr_ranks
            )


@notebook_settings
class CaoDecoderSettings(NotebookSettings):
    """Trained micro MAEs on Fashion-MNIST (28 px, patch 4: a 7 x 7 token grid, 12 visible at mask 0.75), one per
    (variant, seed), paired by seed: same initial weights (the variants have the same parameters), data order and
    masks. Variants: the official softmax attention, the same kernel unnormalised (``kernel``), and the attention
    residual scaled by ``skip_scale``. The encoder has ``depth`` blocks, the decoder ``decoder_depth`` (Fig. 3 reads
    out every decoder block). Precondition of every claim: each run's test reconstruction loss is at least
    ``margin`` (relative) below that of its untrained model and ``ref_margin`` below the loss of predicting each
    patch's mean (:func:`maelab.papers.cao2022.trained.mean_predictor_loss`), and the run did not diverge: two
    :class:`maelab.claims.ReconstructionCheck` or a :class:`maelab.claims.RunStopped` per run
    (:func:`maelab.papers.cao2022.evidence.run_gates`).

    cpu: sized on the shared 2-core machine (a first run at batch 256, 6,000 images x 3 epochs = 70 optimiser steps,
    trained at ~240 images / s): its models' test loss (0.60-0.64) fell far below the untrained models' (1.9-3.7)
    but barely below the loss of predicting each patch's mean (0.637): too few steps. Hence batch 64 and 4 epochs of
    5,000 images, 312 steps at a peak lr of 2e-3, the 9 runs in ~20 min of training plus ~4 min of evaluation; the
    page prints the measured times.
    gpu: 60,000 images x 10 epochs at batch 256 and 5 seeds, ~18 H100 minutes by the cost model (not run yet).
    smoke: tiny, on the shipped mnist10k (CI needs no fetched data): the pipeline only.
    """

    SMOKE = {
        "dataset": "mnist10k",
        "n_train": 256,
        "n_test": 128,
        "epochs": 2,
        "batch_size": 64,
        "decoder_depth": 3,
        "seeds": [0, 1],
        "n_loss": 64,
        "n_eval": 16,
        "n_probe": 128,
        "n_photos": 2,
    }
    GPU = {
        "n_train": 60000,
        "n_test": 10000,
        "epochs": 10,
        "batch_size": 256,
        "blr": 4e-3,
        "seeds": [0, 1, 2, 3, 4],
        "n_eval": 1000,
        "n_probe": 20000,
    }

    dataset: str = setting(
        "fashion_mnist",
        "dataset (28 x 28 grey images; fetch once: python -m maelab.data fetch fashion_mnist)",
        is_choice("fashion_mnist", "mnist", "mnist10k"),
    )
    n_train: int = setting(5000, "pre-training images (the first n of the train split)", is_int(2))
    n_test: int = setting(
        1000, "test images (probe test set; the loss and analysis images are the first ones)", is_int(2)
    )
    patch_size: int = setting(4, "patch side in pixels (must divide 28; 4 gives a 7 x 7 grid)", is_choice(4, 7, 14))
    depth: int = setting(2, "encoder blocks", is_int())
    decoder_depth: int = setting(4, "decoder blocks (>= 3: Fig. 3 needs intermediate read-outs)", is_int(3))
    epochs: int = setting(4, "pre-training epochs (weights kept after each for the loss curve)", is_int())
    batch_size: int = setting(64, "batch size", is_int())
    blr: float = setting(8e-3, "base learning rate: peak lr = blr * batch / 256", is_number(0.0, low_open=True))
    warmup_epochs: float = setting(1, "linear warm-up epochs", is_number(0.0))
    mask_ratio: float = setting(0.75, "mask ratio (the paper's 0.75)", is_ratio())
    kernel: str = setting(
        "exp", "unnormalised attention kernel of the 'exp' variant (models attn_norm)", is_choice("exp", "linear")
    )
    skip_scale: float = setting(
        0.5, "weight beta of the attention residual in the 'skip' variant (1 = official)", is_number(0.0, low_open=True)
    )
    seeds: tuple = setting(
        [0, 1, 2], "seeds; one run per variant and seed, paired by seed (>= 2 for an error bar)", is_list(is_int(0))
    )
    margin: float = setting(
        0.2, "precondition: trained test loss at least this fraction below the untrained model's", is_ratio()
    )
    ref_margin: float = setting(
        0.05,
        "precondition: trained test loss at least this fraction below the loss of predicting each patch's mean",
        is_ratio(),
    )
    n_loss: int = setting(500, "test images of the reconstruction-loss curve (mask seed 0)", is_int())
    n_eval: int = setting(128, "test images of the read-out, layer-change and attention analyses", is_int())
    n_probe: int = setting(2000, "training images of the [CLS] linear probe (tested on all n_test)", is_int(2))
    checkpoint: Any = setting(
        None,
        "path of the official mae_visualize_vit_base.pth; None: skip the ViT-B section",
        optional(is_str()),
    )
    photo_size: int = setting(
        VIT_B_SIZE,
        "side of the photo crops read out by the ViT-B (the checkpoint's 224; cut from the full-size bundled photos)",
        is_int(16),
    )
    n_photos: int = setting(4, "photo crops (bundled test photos) for the checkpoint section", is_int())

    def validate(self) -> None:
        if len(self.seeds) < 2 or len(set(self.seeds)) != len(self.seeds):
            raise ParameterError("seeds", "at least 2 distinct seeds (paired claims need a spread)", self.seeds)
        if 28 % self.patch_size:
            raise ParameterError("patch_size", "a divisor of 28", self.patch_size)
        for name in ("n_loss", "n_eval"):
            if getattr(self, name) > self.n_test:
                raise ParameterError(name, f"at most n_test = {self.n_test}", getattr(self, name))
        if self.n_probe > self.n_train:
            raise ParameterError("n_probe", f"at most n_train = {self.n_train}", self.n_probe)
        if self.checkpoint is not None:  # checked here, not in the last cell after all the training
            if not Path(self.checkpoint).is_file():
                raise ParameterError(
                    "checkpoint", "an existing file (the official mae_visualize_vit_base.pth)", self.checkpoint
                )
            if self.photo_size != VIT_B_SIZE:
                raise ParameterError(
                    "photo_size", f"{VIT_B_SIZE} when a checkpoint is given (the ViT-B's input side)", self.photo_size
                )


NOTEBOOKS: dict[str, type] = {"cao_theory": CaoTheorySettings, "cao_decoder": CaoDecoderSettings}
